package replica

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// fetchState runs an install job (G3): it tries the peers in turn,
// starting after this replica, until one streams state whose digest
// matches the certificate; a peer that sends bad chunks, another digest or
// nothing is skipped. Rounds repeat with a back-off until ctx ends.
func (r *Replica) fetchState(ctx context.Context, t *bft.StateTarget) error {
	wait := 100 * time.Millisecond
	for round := 0; ; round++ {
		for k := 1; k < r.n; k++ {
			peer := uint32((int(r.id) + k + round) % r.n)
			err := r.installFrom(ctx, peer, t)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
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

// installFrom streams the checkpoint from one peer into the store.
func (r *Replica) installFrom(ctx context.Context, peer uint32, t *bft.StateTarget) error {
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
	err := r.loop.Install(sctx, t, next)
	cancel()
	for range chunks {
	}
	return err
}
