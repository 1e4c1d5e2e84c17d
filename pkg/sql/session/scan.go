package session

import (
	"bytes"
	"context"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Scanner streams the entries of a span as the transaction sees them: the
// store's entries, read in chunks of one read-range each (one short
// transaction per chunk, growing from Env.FirstChunk), merged with the
// transaction's own writes. Spans read before in the transaction are
// answered from the cache; every chunk read is recorded for the commit's
// range guards.
type Scanner struct {
	t          *Txn
	pos, end   []byte
	chunk      int
	done       bool
	out        []txn.KV
	i          int
	chunksRead int
}

// Scan returns a scanner over [start, end) (end nil: unbounded).
func (t *Txn) Scan(start, end []byte) *Scanner {
	t.active()
	return &Scanner{t: t, pos: start, end: end, chunk: t.s.env.firstChunk()}
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
		s.out = t.overlay(s.out, r.entries[lo:hi], s.pos, upto)
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
	s.out = t.overlay(s.out, r.Entries, s.pos, covered)
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
