// Package memstore is an in-memory stand-in for a cluster behind the
// client library, for the SQL layer's unit tests: it runs each short
// transaction atomically and in isolation (one at a time), with the
// operation semantics of txn.md T1 — comparisons (cmp, cmp absent,
// cmp-range with per-group digests) before preconditions (insert on absent,
// write and delete on present) before reads and updates, all or nothing —
// the metadata version every metadata write increments (M2), and the
// pinned-version compare of coord.Options.PinVersion. It counts the
// transactions and operations it runs and can be told to abort the next
// ones. Clusters for the SQL logic tests are real (coordtest).
package memstore

import (
	"bytes"
	"context"
	"sort"
	"sync"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Store is the in-memory store. Safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	version uint64
	data    map[string][]byte
	meta    map[string][]byte
	// Txns lists every transaction run, with its operations.
	Txns [][]txn.Op
	// failNext aborts the next transactions with these reasons.
	failNext []txn.Reason
	// Hook, if set, runs before each transaction (outside the lock).
	Hook func(ops []txn.Op)
}

// New returns a store whose partition map holds the whole key space in
// group 0, or, with groups > 1, splits it at the first byte as
// cluster.json's default does.
func New(groups int) *Store {
	gs := make([]bft.GroupID, groups)
	rs := make([]oracle.Range, groups)
	for g := range groups {
		gs[g] = bft.GroupID(g)
		rs[g] = oracle.Range{Start: []byte{byte(g * 256 / groups)}, Groups: gs[g : g+1]}
	}
	rs[0].Start = nil
	m, err := oracle.New(rs)
	if err != nil {
		panic(err)
	}
	return &Store{data: map[string][]byte{}, meta: map[string][]byte{string(txn.MetaPartitionsKey): m.Encode()}}
}

// FailNext makes the next transactions abort with reasons, one each.
func (s *Store) FailNext(reasons ...txn.Reason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, reasons...)
}

// Count returns the transactions run so far.
func (s *Store) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Txns)
}

// Since returns the transactions run after the first n.
func (s *Store) Since(n int) [][]txn.Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]txn.Op(nil), s.Txns[n:]...)
}

// Value returns a data key's value.
func (s *Store) Value(key []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[string(key)]
	return v, ok
}

// Put sets a data key behind every transaction's back (a concurrent
// writer).
func (s *Store) Put(key, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[string(key)] = value
}

// Keys returns the number of data keys.
func (s *Store) Keys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.data)
}

func abort(r txn.Reason, op int, v uint64) (*coord.Result, error) {
	ae := &txn.AbortError{Reason: r, Op: op, Version: v}
	return &coord.Result{Abort: ae}, &coord.AbortedError{Attempts: 1, Cause: ae}
}

// Do runs one transaction.
func (s *Store) Do(_ context.Context, src coord.OpSource, opts coord.Options) (*coord.Result, error) {
	ops := append([]txn.Op(nil), src.Ops()...)
	if s.Hook != nil {
		s.Hook(ops)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Txns = append(s.Txns, ops)
	if len(s.failNext) > 0 {
		r := s.failNext[0]
		s.failNext = s.failNext[1:]
		return abort(r, 0, s.version)
	}
	if opts.PinVersion && opts.MetadataVersion != s.version {
		return abort(txn.ReasonStaleMetadata, 0, s.version)
	}
	m, err := oracle.Decode(s.meta[string(txn.MetaPartitionsKey)])
	if err != nil {
		panic(err)
	}
	kv := func(op *txn.Op) map[string][]byte {
		if op.Meta {
			return s.meta
		}
		return s.data
	}
	// E4: comparisons.
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case txn.OpCmp:
			v, ok := kv(op)[string(op.Key)]
			if op.Absent && ok || !op.Absent && (!ok || !bytes.Equal(v, op.Value)) {
				return abort(txn.ReasonCompare, i, s.version)
			}
		case txn.OpCmpRange:
			entries := s.scan(kv(op), op.Key, op.End, 0)
			if len(entries) > int(op.Limit) {
				return abort(txn.ReasonCompare, i, s.version)
			}
			hs := map[bft.GroupID]*txn.RangeHasher{}
			for _, d := range op.Digests {
				hs[d.Group] = txn.NewRangeHasher()
			}
			for _, e := range entries {
				h := hs[m.KeyGroup(e.Key)]
				if h == nil {
					return abort(txn.ReasonWrongGroups, i, s.version)
				}
				h.Add(e.Key, e.Value)
			}
			for _, d := range op.Digests {
				if hs[d.Group].Sum() != d.Digest {
					return abort(txn.ReasonCompare, i, s.version)
				}
			}
		}
	}
	// E5: preconditions.
	for i := range ops {
		op := &ops[i]
		_, ok := kv(op)[string(op.Key)]
		switch {
		case op.Kind == txn.OpInsert && ok:
			return abort(txn.ReasonKeyExists, i, s.version)
		case (op.Kind == txn.OpWrite || op.Kind == txn.OpDelete) && !ok:
			return abort(txn.ReasonNotFound, i, s.version)
		}
	}
	res := &coord.Result{Committed: true, Ops: make([]coord.OpResult, len(ops)), Attempts: 1}
	metaWrite := false
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case txn.OpRead:
			if op.Meta && bytes.Equal(op.Key, txn.MetaVersionKey) {
				res.Ops[i] = coord.OpResult{Present: true, Value: txn.EncodeVersion(s.version)}
				continue
			}
			v, ok := kv(op)[string(op.Key)]
			res.Ops[i] = coord.OpResult{Present: ok, Value: bytes.Clone(v)}
		case txn.OpReadRange:
			entries := s.scan(kv(op), op.Key, op.End, int(op.Limit))
			r := coord.OpResult{Entries: entries}
			if len(entries) == int(op.Limit) {
				r.More = true
				r.Next = append(bytes.Clone(entries[len(entries)-1].Key), 0)
			}
			res.Ops[i] = r
		}
	}
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case txn.OpInsert, txn.OpWrite:
			kv(op)[string(op.Key)] = bytes.Clone(op.Value)
		case txn.OpDelete:
			delete(kv(op), string(op.Key))
		}
		metaWrite = metaWrite || op.Meta && op.Kind.IsUpdate()
	}
	if metaWrite {
		s.version++
	}
	return res, nil
}

func (s *Store) scan(kv map[string][]byte, start, end []byte, limit int) []txn.KV {
	var keys []string
	for k := range kv {
		if k >= string(start) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]txn.KV, len(keys))
	for i, k := range keys {
		out[i] = txn.KV{Key: []byte(k), Value: bytes.Clone(kv[k])}
	}
	return out
}
