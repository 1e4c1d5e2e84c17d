package coord

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// Result is what a transaction came to.
type Result struct {
	// ID, Nonce, Kind and Groups describe the last attempt (each retry is
	// a new transaction with a new nonce, K5).
	ID     txn.TxnID
	Nonce  uint64
	Kind   txn.Kind
	Groups []bft.GroupID
	// Committed is the outcome.
	Committed bool
	// Ops holds one result per operation of a committed transaction: the
	// value of a read, the entries of a read-range; nothing for the others.
	Ops []OpResult
	// Abort is the abort vote that decided an aborted transaction: its
	// group, typed reason (conflict, comparison failed at operation Op,
	// key exists, not found, stale metadata, ...) and what it names.
	Abort *txn.AbortError
	// Blocker is the id of the pending transaction a conflict abort named
	// (E3).
	Blocker *txn.TxnID
	// Attempts counts the transactions sent (1 + retries).
	Attempts int
	// Latency is the time from Start to the outcome.
	Latency time.Duration
}

// OpResult is the result of one operation.
type OpResult struct {
	// Present and Value answer a read (Present false: the key is absent).
	Present bool
	Value   []byte
	// Entries answer a read-range, in key order, merged across the groups
	// the range involves (T1).
	Entries []txn.KV
	// More is set when a read-range stopped early: the entries up to the
	// last one returned are complete, the rest of the range is unread.
	// Next is where the next chunk starts (just after the last entry).
	More bool
	Next []byte
}

// AbortedError is the error of a transaction that aborted: it wraps the
// deciding group's *txn.AbortError, so errors.Is(err, txn.ErrConflict),
// txn.ErrCompareFailed, txn.ErrKeyExists, txn.ErrKeyNotFound,
// txn.ErrStaleMetadata and the others work.
type AbortedError struct {
	ID       txn.TxnID
	Attempts int
	Cause    *txn.AbortError
}

func (e *AbortedError) Error() string {
	return fmt.Sprintf("coord: transaction %s aborted after %d attempt(s): %v", e.ID, e.Attempts, e.Cause)
}

// Unwrap returns the group's abort.
func (e *AbortedError) Unwrap() error { return e.Cause }

// assemble builds the per-operation results of a committed transaction from
// the groups' commit votes. A metadata operation runs at every declared
// group, all holding the same metadata at the version the transaction
// compared (M1, M2), so the first group's answer is taken. A read-range over
// several groups is merged (T1): see mergeRange.
func assemble(t *txn.Txn, votes []*txn.Result) []OpResult {
	out := make([]OpResult, len(t.Ops))
	seen := make([]bool, len(t.Ops))
	var ranges [][]rangePart // by operation, only for read-ranges
	for _, v := range votes {
		for i := range v.Reads {
			rd := &v.Reads[i]
			if rd.Op < 0 || rd.Op >= len(t.Ops) {
				continue
			}
			op := &t.Ops[rd.Op]
			if !rd.Range {
				// A data read runs at its key's group only; a metadata read
				// at every group, which all answer alike: take the first.
				if op.Kind != txn.OpRead || seen[rd.Op] {
					continue
				}
				seen[rd.Op] = true
				out[rd.Op].Present = rd.Present
				if rd.Present {
					out[rd.Op].Value = rd.Value
				}
				continue
			}
			if op.Kind != txn.OpReadRange {
				continue
			}
			if ranges == nil {
				ranges = make([][]rangePart, len(t.Ops))
			}
			if op.Meta && len(ranges[rd.Op]) > 0 {
				continue
			}
			ranges[rd.Op] = append(ranges[rd.Op], rangePart{entries: rd.Entries, early: len(rd.Entries) == int(op.Limit)})
		}
	}
	for i, parts := range ranges {
		if len(parts) > 0 {
			out[i] = mergeRange(parts, int(t.Ops[i].Limit))
		}
	}
	return out
}

// rangePart is one group's answer to a read-range.
type rangePart struct {
	entries []txn.KV
	early   bool // the group returned Limit entries: it stopped early
}

// mergeRange merges the groups' answers to one read-range (T1): each group
// returned its present entries of the range in key order, at most limit; a
// group that returned limit entries stopped early and read nothing past its
// last entry. Every entry up to the smallest last key among the groups that
// stopped early is known, from every group: that merged prefix is the
// result, at most limit entries of it (the locks cover more, which is
// harmless). More says the range was not read to its end.
func mergeRange(parts []rangePart, limit int) OpResult {
	var cut []byte
	more := false
	n := 0
	for _, p := range parts {
		n += len(p.entries)
		if p.early && len(p.entries) > 0 {
			last := p.entries[len(p.entries)-1].Key
			if !more || bytes.Compare(last, cut) < 0 {
				cut = last
			}
			more = true
		}
	}
	merged := make([]txn.KV, 0, n)
	for _, p := range parts {
		for _, kv := range p.entries {
			if more && bytes.Compare(kv.Key, cut) > 0 {
				break
			}
			merged = append(merged, kv)
		}
	}
	if len(parts) > 1 {
		// Range partitioning gives disjoint ordered slices, hash partitioning
		// interleaves them: sort either way (keys are distinct across groups).
		slices.SortFunc(merged, func(a, b txn.KV) int { return bytes.Compare(a.Key, b.Key) })
	}
	if len(merged) > limit {
		merged, more = merged[:limit], true
	}
	res := OpResult{Entries: merged, More: more}
	if more && len(merged) > 0 {
		res.Next = append(bytes.Clone(merged[len(merged)-1].Key), 0)
	}
	return res
}
