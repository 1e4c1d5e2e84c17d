package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// snapshots are the store snapshots of recent checkpoints, kept to serve
// state transfer. The one of the stable checkpoint (h) and newer ones stay;
// older ones are closed once no transfer reads them.
type snapshots struct {
	mu sync.Mutex
	m  map[bft.SeqNum]*snapshotRef
}

type snapshotRef struct {
	seq    bft.SeqNum
	snap   *storage.Snapshot
	refs   int
	pruned bool
}

func (s *snapshots) add(seq bft.SeqNum, snap *storage.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[seq]; old != nil {
		s.dropLocked(old)
	}
	s.m[seq] = &snapshotRef{seq: seq, snap: snap}
}

func (s *snapshots) acquire(seq bft.SeqNum) *snapshotRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := s.m[seq]
	if ref != nil {
		ref.refs++
	}
	return ref
}

func (s *snapshots) release(ref *snapshotRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref.refs--
	if ref.pruned && ref.refs == 0 {
		_ = ref.snap.Close()
	}
}

func (s *snapshots) dropLocked(ref *snapshotRef) {
	delete(s.m, ref.seq)
	ref.pruned = true
	if ref.refs == 0 {
		_ = ref.snap.Close()
	}
}

func (s *snapshots) pruneBelow(h bft.SeqNum) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq, ref := range s.m {
		if seq < h {
			s.dropLocked(ref)
		}
	}
}

func (s *snapshots) closeAll() { s.pruneBelow(^bft.SeqNum(0)) }

type transferResult struct {
	target *bft.StateTarget
	err    error
}

// startTransfer fetches the state of a stable checkpoint from peers (G3),
// replacing any transfer in progress (a newer target supersedes it).
func (r *Replica) startTransfer(ctx context.Context, t *bft.StateTarget) {
	if r.cancelXfer != nil {
		r.cancelXfer()
	}
	tctx, cancel := context.WithCancel(ctx)
	r.transfer, r.cancelXfer = t, cancel
	r.log.Info("state transfer", "seq", t.Seq, "executed", r.node.LastExecuted())
	jobs := r.jobsQueued // the install waits for these to finish
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := r.fetchState(tctx, t, jobs)
		select {
		case r.transferDone <- transferResult{target: t, err: err}:
		case <-tctx.Done():
		}
	}()
}

// fetchState tries the peers in turn, starting after this replica, until
// one streams state whose digest matches the certificate; a peer that sends
// bad chunks, another digest or nothing is skipped. Rounds repeat with a
// back-off until ctx ends.
func (r *Replica) fetchState(ctx context.Context, t *bft.StateTarget, jobs uint64) error {
	wait := 100 * time.Millisecond
	for round := 0; ; round++ {
		for k := 1; k < r.n; k++ {
			peer := uint32((int(r.id) + k + round) % r.n)
			err := r.installFrom(ctx, peer, t, jobs)
			if err == nil {
				r.metrics.stateTransfersOK.Inc()
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.metrics.stateTransfersFailed.Inc()
			r.log.Warn("state transfer from peer failed", "peer", peer, "seq", t.Seq, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if wait < 5*time.Second {
			wait *= 2
		}
	}
}

// installFrom streams the checkpoint from one peer into the store. The
// store checks the digest before anything becomes visible, so a bad
// stream leaves the old state in place.
func (r *Replica) installFrom(ctx context.Context, peer uint32, t *bft.StateTarget, jobs uint64) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan storage.Chunk, 4)
	errc := make(chan error, 1)
	go func() {
		defer close(chunks)
		errc <- r.peers.FetchState(sctx, peer, &transportpb.StateRequest{Seq: uint64(t.Seq), StateDigest: t.Digest[:]},
			func(c *transportpb.StateChunk) error {
				ch, err := storage.UnmarshalChunk(c.Data)
				if err != nil {
					return fmt.Errorf("chunk from peer %d: %w", peer, err)
				}
				r.metrics.StateTransferBytes.Add(float64(len(c.Data)))
				select {
				case chunks <- ch:
					return nil
				case <-sctx.Done():
					return sctx.Err()
				}
			})
	}()
	next := func() (storage.Chunk, error) {
		if c, ok := <-chunks; ok {
			return c, nil
		}
		if err := <-errc; err != nil {
			return storage.Chunk{}, err
		}
		return storage.Chunk{}, io.EOF
	}
	// Batches handed to the executor before the transfer began must not
	// write over the installed state: wait for them, and hold the executor.
	if err := r.waitForExecutions(sctx, jobs); err != nil {
		cancel()
		for range chunks {
		}
		return err
	}
	err := r.engine.InstallCheckpoint(sctx, next, t.Digest)
	r.execMu.Unlock()
	cancel()
	for range chunks {
	}
	return err
}

// finishTransfer hands an installed checkpoint to the application and the
// node (G3). A failure other than cancellation is a local fault.
func (r *Replica) finishTransfer(res transferResult) error {
	if res.target != r.transfer {
		return nil // superseded
	}
	r.transfer, r.cancelXfer = nil, nil
	if res.err != nil {
		if errors.Is(res.err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("replica: state transfer to %d: %w", res.target.Seq, res.err)
	}
	applied, err := loadApplied(r.engine)
	if err != nil {
		return err
	}
	if applied != res.target.Seq {
		return fmt.Errorf("replica: installed checkpoint %d holds state of seq %d", res.target.Seq, applied)
	}
	clients, err := loadClients(r.engine)
	if err != nil {
		return err
	}
	if err := r.app.Restored(r.engine); err != nil {
		return fmt.Errorf("replica: application restore after state transfer: %w", err)
	}
	if err := r.node.StateInstalled(res.target.Seq, clients); err != nil {
		return err
	}
	r.log.Info("state transfer installed", "seq", res.target.Seq)
	return nil
}
