package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// transferChunkBytes is the chunk size a replica asks for. Every peer
// exports one checkpoint in the same chunks for one size, which is what lets
// a broken stream resume from another peer (OnFetchState). Tests lower it.
var transferChunkBytes uint32 = storage.DefaultChunkBytes

// fetchState runs an install job (G3): one install of the target's state,
// fed by peers in turn. When a peer's stream breaks, the next peer continues
// after the last chunk received (resume token) instead of starting over; a
// peer without the checkpoint is skipped. The store checks the digest
// against the certificate at the end, so a peer that served bad chunks fails
// the install, which then starts over from another peer, after a back-off.
// It returns when the state is installed or ctx ends.
func (r *Replica) fetchState(ctx context.Context, t *bft.StateTarget) error {
	wait := 100 * time.Millisecond
	for round := 0; ; round++ {
		err := r.installRound(ctx, t, round)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.log.Warn("state transfer failed; trying again", "seq", t.Seq, "err", err)
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

// installRound is one install attempt, streaming from the peers in turn
// starting with a different one each round.
func (r *Replica) installRound(ctx context.Context, t *bft.StateTarget, round int) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &transferSession{r: r, ctx: sctx, t: t, first: round}
	err := r.loop.Install(sctx, t, s.next)
	s.stop()
	return err
}

// transferSession feeds one install from a sequence of peer streams.
type transferSession struct {
	r     *Replica
	ctx   context.Context
	t     *bft.StateTarget
	first int
	tries int // peers tried since the last chunk arrived

	chunks chan storage.Chunk
	errc   chan error
	cancel context.CancelFunc
	peer   uint32
	// last is the index of the last chunk handed to the install; have is
	// whether any arrived.
	last uint64
	have bool
}

func (s *transferSession) start() error {
	r := s.r
	for s.tries < r.n-1 {
		peer := uint32((int(r.id) + 1 + s.first + s.tries) % r.n)
		s.tries++
		if peer == uint32(r.id) {
			continue
		}
		req := &transportpb.StateRequest{Seq: uint64(s.t.Seq), StateDigest: s.t.Digest[:], MaxChunkBytes: transferChunkBytes}
		if s.have {
			req.ResumeToken = binary.BigEndian.AppendUint64(nil, s.last)
			r.metrics.StateTransferResumes.Inc()
			r.log.Info("state transfer resumes from another peer", "peer", peer, "seq", s.t.Seq, "after_chunk", s.last)
		}
		sctx, cancel := context.WithCancel(s.ctx)
		s.peer, s.cancel = peer, cancel
		s.chunks, s.errc = make(chan storage.Chunk, 4), make(chan error, 1)
		chunks, errc := s.chunks, s.errc
		go func() {
			defer close(chunks)
			errc <- r.peers.FetchState(sctx, peer, req, func(c *transportpb.StateChunk) error {
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
		return nil
	}
	return errors.New("replica: no peer could serve the checkpoint")
}

// next is the install's chunk source.
func (s *transferSession) next() (storage.Chunk, error) {
	for {
		if s.chunks == nil {
			if err := s.start(); err != nil {
				return storage.Chunk{}, err
			}
		}
		if c, ok := <-s.chunks; ok {
			s.last, s.have, s.tries = c.Index, true, 0
			return c, nil
		}
		err := <-s.errc
		s.cancel()
		s.chunks = nil
		if err == nil {
			return storage.Chunk{}, io.EOF // the stream ended with the final chunk
		}
		if s.ctx.Err() != nil {
			return storage.Chunk{}, s.ctx.Err()
		}
		s.r.log.Warn("state transfer stream from peer broke", "peer", s.peer, "seq", s.t.Seq, "err", err)
	}
}

// stop ends the stream in progress, if any, and waits for its goroutine.
func (s *transferSession) stop() {
	if s.chunks == nil {
		return
	}
	s.cancel()
	for range s.chunks {
	}
	s.chunks = nil
}
