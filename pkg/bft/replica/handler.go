package replica

import (
	"context"
	"encoding/binary"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/bft/transport"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// handler receives from the transport. Its methods run on the stream
// goroutines, so verification (the costly part: signatures) runs in
// parallel across peers and clients before anything reaches the node.
// Blocking on a full inbox applies back-pressure to the stream.
type handler struct{ r *Replica }

var _ transport.BatchHandler = handler{}

func (h handler) OnMessage(ctx context.Context, from uint32, m *bftpb.Message) {
	h.OnMessages(ctx, from, []*bftpb.Message{m})
}

// batchChecker is a Checker whose signature checks go into a Batch.
type batchChecker struct {
	batch   *auth.Batch
	checker *bft.Checker
	ok      []bool
}

// OnMessages checks the messages of one write of a peer and posts those
// that pass to the loop in one go. Their signatures — every one in them,
// embedded certificates and client requests included — are verified
// together (pkg/bft/auth.Batch, ZIP-215): the Checker runs over a Batch
// that records them, then one batch verification decides. If it fails, some
// signature is bad, and each message is checked again alone, with the
// Checker itself, to learn which; the verdict on each message is the same
// as a check alone would give, so batching changes no outcome, only the
// cost (a faulty peer can make a write cost one batch verification more
// than checking alone). Signatures verified before are remembered by the
// Verifier and not verified again.
func (h handler) OnMessages(ctx context.Context, _ uint32, ms []*bftpb.Message) {
	r := h.r
	bc := r.checkers.Get().(*batchChecker)
	defer r.checkers.Put(bc)
	bc.batch.Reset()
	ok := bc.ok[:0]
	for _, m := range ms {
		err := bc.checker.Message(m)
		if err != nil {
			r.rejected(m, err)
		}
		ok = append(ok, err == nil)
	}
	if !bc.batch.Verify() {
		for i, m := range ms {
			if !ok[i] {
				continue
			}
			if err := r.checker.Message(m); err != nil {
				r.rejected(m, err)
				ok[i] = false
			}
		}
	}
	bc.batch.Reset()
	bc.ok = ok
	var accepted []*bftpb.Message
	for i, m := range ms {
		if ok[i] {
			if accepted == nil {
				accepted = make([]*bftpb.Message, 0, len(ms)-i)
			}
			accepted = append(accepted, m)
		}
	}
	if accepted == nil {
		return
	}
	select {
	case r.inbox <- input{msgs: accepted}:
	case <-ctx.Done():
	}
}

func (r *Replica) rejected(m *bftpb.Message, err error) {
	r.metrics.Rejected.WithLabelValues(bftpb.KindName(m)).Inc()
	r.log.Debug("message rejected", "from", m.From, "kind", bftpb.KindName(m), "err", err)
}

func (h handler) OnRequest(ctx context.Context, req *bftpb.Request, _ *transport.ClientConn) {
	if err := h.r.checker.Request(req); err != nil {
		h.r.metrics.Rejected.WithLabelValues("request").Inc()
		h.r.log.Debug("request rejected", "err", err)
		// An error reply, never silence (DESIGN.md §3.2): the client accepts
		// the rejection on f+1 matching replies and tells its caller at once.
		// A request whose client id is not a public key cannot be answered
		// (there is no key to MAC under); finishReply drops it.
		h.r.finishReply(host.Rejection(h.r.dom, h.r.id, req, err))
		return
	}
	select {
	case h.r.inbox <- input{req: req}:
	case <-ctx.Done():
	}
}

// OnFetchState serves the state of a checkpoint this replica holds a
// snapshot of (G3). Only replicas of the group reach it.
func (h handler) OnFetchState(ctx context.Context, from uint32, req *transportpb.StateRequest, send func(*transportpb.StateChunk) error) error {
	snaps := h.r.loop.Snapshots()
	ref := snaps.Acquire(bft.SeqNum(req.Seq))
	if ref == nil {
		return status.Errorf(codes.NotFound, "no snapshot of checkpoint %d", req.Seq)
	}
	defer snaps.Release(ref)
	if sum := ref.Snap.Sum(); len(req.StateDigest) > 0 && string(req.StateDigest) != string(sum[:]) {
		return status.Errorf(codes.FailedPrecondition, "the snapshot of checkpoint %d has another digest", req.Seq)
	}
	chunkBytes := storage.DefaultChunkBytes
	if req.MaxChunkBytes > 0 && int(req.MaxChunkBytes) < chunkBytes {
		chunkBytes = int(req.MaxChunkBytes)
	}
	// A resume token is the index of the last chunk the requester holds:
	// every replica exports a checkpoint in the same chunks (the export is
	// deterministic for one state and chunk size), so a stream that broke
	// continues from any peer where it stopped.
	var after uint64
	resume := len(req.ResumeToken) > 0
	if resume {
		if len(req.ResumeToken) != 8 {
			return status.Errorf(codes.InvalidArgument, "resume token of %d bytes", len(req.ResumeToken))
		}
		after = binary.BigEndian.Uint64(req.ResumeToken)
	}
	h.r.log.Info("serving state transfer", "to", from, "seq", req.Seq, "resume", resume, "after_chunk", after)
	sent := 0
	return ref.Snap.Export(ctx, chunkBytes, func(c storage.Chunk) error {
		if resume && c.Index <= after {
			return nil
		}
		if h.r.breakStateAfter > 0 && sent == h.r.breakStateAfter {
			return status.Errorf(codes.Unavailable, "test: stream broken after %d chunks", sent)
		}
		sent++
		sc := &transportpb.StateChunk{Seq: req.Seq, Data: c.Marshal(), Last: c.Final,
			ResumeToken: binary.BigEndian.AppendUint64(nil, c.Index)}
		if h.r.corruptChunk != nil {
			h.r.corruptChunk(sc)
		}
		return send(sc)
	})
}
