package bft

import (
	"sort"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// pendingReq is a valid client request this replica holds and has not seen
// executed (V1): its key, the request with its digest (computed once, on
// arrival), its arrival order, its payload size (for the batch limits) and
// the tick it was last forwarded to the primary (C4).
type pendingReq struct {
	key         reqKey
	req         *bftpb.Request
	digest      Digest
	order       uint64
	size        int
	lastForward uint64
}

// requestStore holds pending requests, in arrival order, and the primary's
// queue of requests to batch. byClient indexes them per client, so that a
// raised low watermark drops a client's stale ones at once (removeUpTo).
// The store is bounded by MaxPendingRequests (onRequest). A backup runs
// its request timer while the store holds requests (V1).
type requestStore struct {
	// m is keyed by (client, timestamp), not by digest: a client signs one
	// request per timestamp (C1), and the first valid copy held is the one
	// forwarded and batched; a second copy with the same key is treated as
	// a retransmission (onRequest), so a flood of variants of one request
	// takes one entry.
	//
	// queue is only the primary's (N1). Removing from the middle of it on
	// every execution would cost O(len) per request; instead remove leaves
	// the entry, and cutBatch skips entries whose key no longer maps to the
	// same pendingReq.
	//
	// counter orders arrivals, so a new primary batches the oldest requests
	// first (resetQueue) and no client's request starves behind later ones.
	m        map[reqKey]*pendingReq
	byClient map[ClientID]map[uint64]struct{}
	queue    []*pendingReq // primary FIFO; entries may be stale (lazy deletion)
	counter  uint64
	// inflight are requests in batches the primary proposed that have not
	// executed yet, so they are not batched twice. Batching one twice would
	// be safe (execution skips the second copy as a duplicate, C2, N7) but
	// would spend a slot of the pipeline window (N1) on nothing.
	inflight map[reqKey]SeqNum
}

func newRequestStore() requestStore {
	return requestStore{m: make(map[reqKey]*pendingReq), byClient: make(map[ClientID]map[uint64]struct{}), inflight: make(map[reqKey]SeqNum)}
}

func (rs *requestStore) len() int { return len(rs.m) }

// add holds a new pending request.
func (rs *requestStore) add(key reqKey, r *bftpb.Request, d Digest) *pendingReq {
	rs.counter++
	p := &pendingReq{key: key, req: r, digest: d, order: rs.counter, size: len(r.Payload)}
	rs.m[key] = p
	bc := rs.byClient[key.client]
	if bc == nil {
		bc = make(map[uint64]struct{})
		rs.byClient[key.client] = bc
	}
	bc[key.ts] = struct{}{}
	return p
}

// remove forgets a pending request (executed, answered or stale) and
// reports whether it was held. Its queue entry, if any, goes lazily
// (cutBatch).
func (rs *requestStore) remove(key reqKey) bool {
	if _, ok := rs.m[key]; !ok {
		return false
	}
	delete(rs.m, key)
	if bc := rs.byClient[key.client]; bc != nil {
		delete(bc, key.ts)
		if len(bc) == 0 {
			delete(rs.byClient, key.client)
		}
	}
	return true
}

// removeUpTo drops a client's pending requests at or below low and reports
// how many it dropped. Once the client's low watermark passed them they can
// never execute (C2 answers them STALE), so holding them would only keep a
// backup's request timer running and end in a needless view change (V1).
func (rs *requestStore) removeUpTo(c ClientID, low uint64) int {
	bc := rs.byClient[c]
	dropped := 0
	for ts := range bc {
		if ts <= low {
			rs.remove(reqKey{c, ts})
			dropped++
		}
	}
	return dropped
}

// ordered returns the pending requests in arrival order. The order is this
// replica's own and needs no agreement: only the primary's PRE-PREPAREs fix
// the order of execution (N1).
func (rs *requestStore) ordered() []*pendingReq {
	out := make([]*pendingReq, 0, len(rs.m))
	for _, p := range rs.m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// enqueue puts p at the end of the primary's queue.
func (rs *requestStore) enqueue(p *pendingReq) { rs.queue = append(rs.queue, p) }

// resetQueue makes the queue hold every pending request, in arrival order.
// A replica that becomes primary in a new view batches what it holds,
// including requests it only saw forwarded or retransmitted as a backup:
// a request the old primary left unordered gets ordered now (V1, C4).
func (rs *requestStore) resetQueue() { rs.queue = rs.ordered() }

// clearQueue empties the queue when a view change starts; the requests stay
// pending. They stay because the view change exists to get them ordered:
// the new primary batches them, or a backup forwards them to it and runs
// its request timer again (V1).
func (rs *requestStore) clearQueue() { rs.queue = nil }
