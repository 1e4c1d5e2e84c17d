package session

import (
	"bytes"
	"context"
	"sort"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Scanner streams the entries of a span as the transaction sees them: the
// store's entries, read in chunks of one read-range each (one short
// transaction per chunk, growing from Env.FirstChunk), merged with the
// transaction's own writes. Spans read before in the transaction are
// answered from the cache; every chunk read is recorded for the commit's
// range guards.
type Scanner struct {
	t        *Txn
	pos, end []byte
	// writes are the transaction's writes in the span when the scan began:
	// a statement's scan must not see the rows the statement itself writes
	// (an UPDATE moving rows ahead of its scan would move them again: the
	// Halloween problem).
	writes     []write
	wkeys      []string
	chunk      int
	done       bool
	out        []txn.KV
	i          int
	chunksRead int
}

// Scan returns a scanner over [start, end) (end nil: unbounded).
func (t *Txn) Scan(start, end []byte) *Scanner {
	t.active()
	s := &Scanner{t: t, pos: start, end: end, chunk: t.s.env.firstChunk()}
	for _, k := range t.writesIn(start, end) {
		s.wkeys = append(s.wkeys, k)
		s.writes = append(s.writes, *t.writes[k])
	}
	return s
}

// Chunks returns the read-ranges the scan sent so far.
func (s *Scanner) Chunks() int { return s.chunksRead }

// Next returns the next entry; ok is false at the end of the span.
func (s *Scanner) Next(ctx context.Context) (kv txn.KV, ok bool, err error) {
	for s.i >= len(s.out) {
		if s.done {
			return txn.KV{}, false, nil
		}
		if err := s.fill(ctx); err != nil {
			return txn.KV{}, false, err
		}
	}
	kv = s.out[s.i]
	s.i++
	return kv, true, nil
}

// fill loads the next piece of the span: from a recorded range if one holds
// the position, else one chunk from the store.
func (s *Scanner) fill(ctx context.Context) error {
	t := s.t
	s.out, s.i = s.out[:0], 0
	if r := t.covering(s.pos); r != nil {
		upto := r.end
		if s.end != nil && (upto == nil || bytes.Compare(s.end, upto) < 0) {
			upto = s.end
		}
		lo := r.search(s.pos)
		hi := len(r.entries)
		if upto != nil {
			hi = r.search(upto)
		}
		s.out = s.overlay(s.out, r.entries[lo:hi], s.pos, upto)
		s.advance(upto)
		return nil
	}
	upper := t.nextRangeStart(s.pos, s.end)
	lim := t.s.env.limits()
	res, err := t.do(ctx, []txn.Op{{Kind: txn.OpReadRange, Key: s.pos, End: upper, Limit: uint32(min(s.chunk, lim.MaxRangeLimit))}})
	if err != nil {
		return err
	}
	t.readTxns++
	t.s.env.Stats.ReadTxns.Add(1)
	s.chunksRead++
	r := res.Ops[0]
	covered := upper
	if r.More {
		covered = r.Next
	}
	t.recordRange(s.pos, covered, r.Entries)
	s.out = s.overlay(s.out, r.Entries, s.pos, covered)
	s.chunk = min(2*s.chunk, lim.MaxRangeLimit)
	s.advance(covered)
	return nil
}

func (s *Scanner) advance(to []byte) {
	s.pos = to
	if to == nil || s.end != nil && bytes.Compare(to, s.end) >= 0 {
		s.done = true
	}
}

// search returns the index of the first entry at or above key.
func (r *rangeRead) search(key []byte) int {
	lo, hi := 0, len(r.entries)
	for lo < hi {
		m := (lo + hi) / 2
		if bytes.Compare(r.entries[m].Key, key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// overlay merges the store's entries of [start, end) with the writes the
// transaction had there when the scan began (read-your-writes): a written
// key shows its new value or is gone.
func (s *Scanner) overlay(dst []txn.KV, entries []txn.KV, start, end []byte) []txn.KV {
	i0 := sort.SearchStrings(s.wkeys, string(start))
	j0 := len(s.wkeys)
	if end != nil {
		j0 = sort.SearchStrings(s.wkeys, string(end))
	}
	i, j := 0, i0
	for i < len(entries) || j < j0 {
		switch {
		case j == j0 || i < len(entries) && bytes.Compare(entries[i].Key, []byte(s.wkeys[j])) < 0:
			dst = append(dst, entries[i])
			i++
		default:
			if i < len(entries) && bytes.Equal(entries[i].Key, []byte(s.wkeys[j])) {
				i++
			}
			if w := &s.writes[j]; w.present {
				dst = append(dst, txn.KV{Key: []byte(s.wkeys[j]), Value: w.value})
			}
			j++
		}
	}
	return dst
}
