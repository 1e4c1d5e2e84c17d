package bft

import (
	"sort"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// The client table (pbft.md C2): per client, a low watermark below which
// every timestamp is finished, and the results of executed requests above
// it. A request's own low field moves the watermark (the client declares it
// has what it needs below it), so the table holds at most W results per
// client and a restarted client can start afresh above its old timestamps.
//
// The core decides every change deterministically at execution time and
// hands the changes to the host (Execution.Clients), which stores them in the
// same atomic batch as the state changes; after a restart or a state
// transfer the host hands the table back (Restored.Clients,
// StateInstalled).
//
// Why a window and not PBFT's last reply per client: PBFT keeps one reply
// per client, which allows one request outstanding, so a client process
// would wait a full round trip per envelope. Here a client may have W
// envelopes outstanding per group (pbft.md C2), so the table remembers every
// executed timestamp above the low watermark, to execute each at most once,
// with its reply, to resend it when the client retransmits. Exactly-once
// needs only that a timestamp is never forgotten while the client might
// still send it again, and the client's signed low says when that is over.
// Refusing timestamps above low + W bounds the table at W replies per
// client, however many requests a client sends.

// reqKey identifies a request: its client and timestamp (C1).
type reqKey struct {
	client ClientID
	ts     uint64
}

// cachedReply is the reply of an executed request, kept for
// retransmissions (C2, C4).
type cachedReply struct {
	result []byte
	done   bool // executed and result known; false while the host executes it
}

// clientState is one client's entry: its low watermark, and the replies of
// the timestamps above it that executed (or are executing).
type clientState struct {
	low     uint64
	replies map[uint64]*cachedReply
}

// clientTable maps clients to their entries; w is W, the window.
type clientTable struct {
	w uint64
	m map[ClientID]*clientState
}

func newClientTable(w uint64) clientTable {
	return clientTable{w: w, m: make(map[ClientID]*clientState)}
}

// get returns c's entry, creating it; only execution and restore create
// entries. onRequest only reads the table, so requests that are never
// ordered, from however many client ids, leave no entry: the table grows
// only with what the group executed, and every correct replica holds the
// same entries at the same seq (it is in the state digest, G1).
func (t *clientTable) get(c ClientID) *clientState {
	cs := t.m[c]
	if cs == nil {
		cs = &clientState{replies: make(map[uint64]*cachedReply)}
		t.m[c] = cs
	}
	return cs
}

// disposition is what execution does with one request.
type disposition uint8

const (
	dispExecute   disposition = iota
	dispDuplicate             // already executed: resend the cached reply
	dispStale                 // at or below the low watermark: never executes
	dispRefused               // above the window: not executed
)

// classify tells what a request would get, given the client's state and
// the low watermark the request itself declares, without changing anything.
// The effective low is the higher of the two: the request's low is signed
// by the client (Checker.Request), so it can only give up the client's own
// requests. A cached reply comes first, so a retransmission gets its result
// while the table holds it.
//
// At execution (buildExecution) the outcome depends only on the replicated
// table and the request, so every correct replica classifies each request
// of a committed batch alike (N7: execution is deterministic). At arrival
// (onRequest, cutBatch) the same function decides what to hold, answer or
// batch; there the table may run behind the group's, which costs at most a
// request batched that execution then skips, or one refused that the client
// sends again (C4).
//
// The four outcomes are C2's: executed once (dispExecute), answered again
// from the cache (dispDuplicate), dropped below the window (dispStale, with
// a STALE reply so the client learns the low watermark), refused above it
// until the window moves (dispRefused). Without the upper bound a client
// could make every replica cache results without limit.
func (t *clientTable) classify(cs *clientState, r *bftpb.Request) (disposition, uint64) {
	low := r.Low
	var cached *cachedReply
	if cs != nil {
		if cs.low > low {
			low = cs.low
		}
		cached = cs.replies[r.Timestamp]
	}
	switch {
	case cached != nil:
		return dispDuplicate, low
	case r.Timestamp <= low:
		return dispStale, low
	case r.Timestamp > low+t.w:
		return dispRefused, low
	default:
		return dispExecute, low
	}
}

// raiseLow moves a client's low watermark and returns the timestamps of the
// cached replies it forgets, in increasing order. The low watermark never
// moves down, so a replayed old request, whose signed low is lower, cannot
// bring back a timestamp the client gave up and execute it a second time.
// The forgotten timestamps become deletes in the Execution, so the host
// removes them from the stored table in the same batch as the state (P2);
// the sorted order keeps the host's writes the same at every replica.
func (cs *clientState) raiseLow(low uint64) []uint64 {
	if low <= cs.low {
		return nil
	}
	cs.low = low
	var forgot []uint64
	for ts := range cs.replies {
		if ts <= low {
			forgot = append(forgot, ts)
			delete(cs.replies, ts)
		}
	}
	sort.Slice(forgot, func(i, j int) bool { return forgot[i] < forgot[j] })
	return forgot
}

// restore replaces the table with records from the store, after a restart
// or a state transfer. Every stored reply is done: the store holds only
// executed batches (P2). Replies at or below the stored low are skipped, as
// raiseLow would have forgotten them; a store written by this code holds
// none.
func (t *clientTable) restore(recs []*bftpb.ClientRecord) {
	t.m = make(map[ClientID]*clientState, len(recs))
	for _, rec := range recs {
		cs := t.get(ClientID(rec.Client))
		cs.low = rec.Low
		for _, r := range rec.Replies {
			if r.Timestamp > cs.low {
				cs.replies[r.Timestamp] = &cachedReply{result: r.Result, done: true}
			}
		}
	}
}

// ClientRecords returns the client table as records, sorted by client, for
// tests and for hosts that store the table whole. Replies still executing
// are left out: they are not durable yet. Sorted, so that equal tables give
// equal records at every replica.
func (n *Node) ClientRecords() []*bftpb.ClientRecord {
	ids := make([]string, 0, len(n.clients.m))
	for c := range n.clients.m {
		ids = append(ids, string(c))
	}
	sort.Strings(ids)
	out := make([]*bftpb.ClientRecord, 0, len(ids))
	for _, id := range ids {
		cs := n.clients.m[ClientID(id)]
		rec := &bftpb.ClientRecord{Client: []byte(id), Low: cs.low}
		ts := make([]uint64, 0, len(cs.replies))
		for t, r := range cs.replies {
			if r.done {
				ts = append(ts, t)
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		for _, t := range ts {
			rec.Replies = append(rec.Replies, &bftpb.CachedReply{Timestamp: t, Result: cs.replies[t].result})
		}
		out = append(out, rec)
	}
	return out
}
