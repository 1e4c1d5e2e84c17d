package host

import (
	"sync"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Snapshots are the store snapshots of recent checkpoints, kept to serve
// state transfer (G3). The one of the stable checkpoint (h) and newer ones
// stay; older ones are closed once no transfer reads them. Safe for
// concurrent use: the executor adds, servers acquire, the loop prunes.
type Snapshots struct {
	mu sync.Mutex
	m  map[bft.SeqNum]*SnapshotRef
}

// SnapshotRef is an acquired snapshot; Release it when done.
type SnapshotRef struct {
	seq    bft.SeqNum
	Snap   *storage.Snapshot
	refs   int
	pruned bool
}

// NewSnapshots returns an empty set.
func NewSnapshots() *Snapshots { return &Snapshots{m: make(map[bft.SeqNum]*SnapshotRef)} }

func (s *Snapshots) add(seq bft.SeqNum, snap *storage.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[seq]; old != nil {
		s.dropLocked(old)
	}
	s.m[seq] = &SnapshotRef{seq: seq, Snap: snap}
}

// Acquire returns the snapshot of checkpoint seq, or nil.
func (s *Snapshots) Acquire(seq bft.SeqNum) *SnapshotRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := s.m[seq]
	if ref != nil {
		ref.refs++
	}
	return ref
}

// Release gives back an acquired snapshot.
func (s *Snapshots) Release(ref *SnapshotRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref.refs--
	if ref.pruned && ref.refs == 0 {
		_ = ref.Snap.Close()
	}
}

// Seqs returns the checkpoints held, in no particular order.
func (s *Snapshots) Seqs() []bft.SeqNum {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]bft.SeqNum, 0, len(s.m))
	for seq := range s.m {
		out = append(out, seq)
	}
	return out
}

func (s *Snapshots) dropLocked(ref *SnapshotRef) {
	delete(s.m, ref.seq)
	ref.pruned = true
	if ref.refs == 0 {
		_ = ref.Snap.Close()
	}
}

func (s *Snapshots) pruneBelow(h bft.SeqNum) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, ref := range s.m {
		if seq < h {
			s.dropLocked(ref)
		}
	}
}

func (s *Snapshots) closeAll() { s.pruneBelow(^bft.SeqNum(0)) }
