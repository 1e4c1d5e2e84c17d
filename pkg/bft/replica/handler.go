package replica

import (
	"context"
	"encoding/binary"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft"
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

func (h handler) OnMessage(ctx context.Context, _ uint32, m *bftpb.Message) {
	if err := h.r.checker.Message(m); err != nil {
		h.r.metrics.Rejected.WithLabelValues(bftpb.KindName(m)).Inc()
		h.r.log.Debug("message rejected", "from", m.From, "kind", bftpb.KindName(m), "err", err)
		return
	}
	select {
	case h.r.inbox <- input{msg: m}:
	case <-ctx.Done():
	}
}

func (h handler) OnRequest(ctx context.Context, req *bftpb.Request, _ *transport.ClientConn) {
	if err := h.r.checker.Request(req); err != nil {
		h.r.metrics.Rejected.WithLabelValues("request").Inc()
		h.r.log.Debug("request rejected", "err", err)
		// An error reply, never silence (DESIGN.md §3.2): the client accepts
		// the rejection on f+1 matching replies and tells its caller at once.
		// A request whose client id is not a public key cannot be answered
		// (there is no key to MAC under); finishReply drops it.
		h.r.finishReply(host.Rejection(h.r.dom, h.r.id, req, err), nil)
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
