package host

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Snapshots are the checkpoints this replica can serve to peers by state
// transfer (G3): saved checkpoints of its store (storage.SaveCheckpoint),
// one per checkpoint it executed or installed, kept from the stable
// checkpoint up. They live on disk, so a replica that restarts can serve its
// stable checkpoint at once, even after it executed past it. Safe for
// concurrent use: the executor saves, state-transfer servers acquire, the
// loop prunes.
type Snapshots struct {
	e  *storage.Engine
	mu sync.Mutex
	m  map[bft.SeqNum]*savedRef
}

type savedRef struct {
	refs   int
	pruned bool
}

// SnapshotRef is an opened checkpoint; Release it when done.
type SnapshotRef struct {
	seq  bft.SeqNum
	Snap *storage.Snapshot
}

func checkpointName(seq bft.SeqNum) string { return fmt.Sprintf("%020d", uint64(seq)) }

// loadSnapshots finds the checkpoints saved before a restart, keeping those
// at or above the stable checkpoint h and removing the others.
func loadSnapshots(e *storage.Engine, h bft.SeqNum) (*Snapshots, error) {
	s := &Snapshots{e: e, m: make(map[bft.SeqNum]*savedRef)}
	names, err := e.SavedCheckpoints()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil || checkpointName(bft.SeqNum(seq)) != name || bft.SeqNum(seq) < h {
			if err := e.RemoveCheckpoint(name); err != nil {
				return nil, err
			}
			continue
		}
		s.m[bft.SeqNum(seq)] = &savedRef{}
	}
	return s, nil
}

// save saves the store's committed state as checkpoint seq.
func (s *Snapshots) save(seq bft.SeqNum) error {
	if err := s.e.SaveCheckpoint(checkpointName(seq)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[seq] == nil {
		s.m[seq] = &savedRef{}
	}
	return nil
}

// Acquire opens the saved checkpoint seq, or returns nil if there is none.
func (s *Snapshots) Acquire(seq bft.SeqNum) *SnapshotRef {
	s.mu.Lock()
	ref := s.m[seq]
	if ref == nil {
		s.mu.Unlock()
		return nil
	}
	ref.refs++
	s.mu.Unlock()
	snap, err := s.e.OpenCheckpoint(checkpointName(seq))
	if err != nil {
		s.release(seq)
		return nil
	}
	return &SnapshotRef{seq: seq, Snap: snap}
}

// Release closes an acquired checkpoint.
func (s *Snapshots) Release(ref *SnapshotRef) {
	_ = ref.Snap.Close()
	s.release(ref.seq)
}

func (s *Snapshots) release(seq bft.SeqNum) {
	s.mu.Lock()
	ref := s.m[seq]
	if ref == nil {
		// Pruned while open: the last reader removes it.
		s.mu.Unlock()
		return
	}
	ref.refs--
	s.mu.Unlock()
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

// pruneBelow removes the checkpoints below the stable one (G2). One being
// read is removed later, when a prune finds it free.
func (s *Snapshots) pruneBelow(h bft.SeqNum) {
	s.mu.Lock()
	var drop []bft.SeqNum
	for seq, ref := range s.m {
		if seq < h && ref.refs == 0 {
			drop = append(drop, seq)
			delete(s.m, seq)
		}
	}
	s.mu.Unlock()
	for _, seq := range drop {
		_ = s.e.RemoveCheckpoint(checkpointName(seq))
	}
}

func (s *Snapshots) closeAll() {}
