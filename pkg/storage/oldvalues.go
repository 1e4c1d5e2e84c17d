package storage

import (
	"bytes"
	"slices"
)

// The committed values an indexed batch has already read (oldValues).
//
// Committing a batch that writes a replicated keyspace updates the state
// digest by subtracting each written key's committed value and adding its
// new one (applyDelta), so the commit must know every written key's
// committed value. Looking it up with a pebble seek per key cost about a
// fifth of a replica's CPU under the transaction engine
// (docs/benchmarks/storage.md), although the executor had just read most of
// those keys through the same batch: a transaction reads every key it
// writes (a write of an absent item aborts; an insert of a present one
// does), and its own records before replacing them. So a batch remembers
// what its reads of replicated keys returned (point reads, and the entries
// scans returned), and the commit takes a
// written key's committed value from there instead of seeking.
//
// A read returns the committed value only if the batch had not written the
// key yet: each entry keeps the number of writes the batch held when it was
// read, and the commit uses it for a key only if that number is at most the
// position of the batch's first write of the key.
//
// The memo is only as good as the committed state it was read from. Reads
// are remembered under one generation of the replicated state
// (Engine.replGen, moved by every replicated commit and ingestion): a read
// that finds the generation moved drops the entries read before, and the
// commit (under commitMu, which every change of the replicated state holds)
// uses the memo only if the generation is still the one they were read
// under.
//
// Reads append to two slices and nothing else (the executor reads keys it
// never writes too): no map, no allocation once the slices have grown.

// maxScanMemo bounds the entries of one scan the memo remembers.
const maxScanMemo = 64

// oldValue is one remembered read.
type oldValue struct {
	key, val []byte // alias oldValues.arena
	found    bool
	// writes is the batch's write count when it was read.
	writes int
}

// oldValues is a batch's memo. The zero value is empty.
type oldValues struct {
	gen     uint64
	entries []oldValue
	sorted  bool
	// arena holds the keys and values; entries alias it (a growing arena
	// leaves earlier slices on the old array, which stays valid and is never
	// written again).
	arena []byte
}

// read records that a read of key in ks under generation gen, when the
// batch held writes writes, returned v (found) or nothing.
func (m *oldValues) read(gen uint64, writes int, ks Keyspace, key, v []byte, found bool) {
	if m.gen != gen {
		m.gen = gen
		m.entries = m.entries[:0]
	}
	if m.entries == nil {
		// A transaction reads about ten keys and their records.
		m.entries, m.arena = make([]oldValue, 0, 32), make([]byte, 0, 2048)
	}
	start := len(m.arena)
	m.arena = AppendKey(m.arena, ks, key)
	kend := len(m.arena)
	m.arena = append(m.arena, v...)
	k := m.arena[start:kend:kend]
	val := m.arena[kend:len(m.arena):len(m.arena)]
	m.entries = append(m.entries, oldValue{key: k, val: val, found: found, writes: writes})
	m.sorted = false
}

// lookup returns key's committed value if the memo holds a read of it made
// before the batch's first write of it (at position firstWrite among the
// batch's writes) and the committed state is still generation gen.
func (m *oldValues) lookup(gen uint64, key []byte, firstWrite int) (val []byte, found, ok bool) {
	if m.gen != gen || len(m.entries) == 0 {
		return nil, false, false
	}
	if !m.sorted {
		// Stable: the earliest read of a key comes first.
		slices.SortStableFunc(m.entries, func(a, b oldValue) int { return bytes.Compare(a.key, b.key) })
		m.sorted = true
	}
	i, hit := slices.BinarySearchFunc(m.entries, key, func(e oldValue, k []byte) int { return bytes.Compare(e.key, k) })
	if !hit || m.entries[i].writes > firstWrite {
		return nil, false, false
	}
	return m.entries[i].val, m.entries[i].found, true
}

// reset empties the memo, keeping its storage if it stayed small.
func (m *oldValues) reset() {
	if cap(m.entries) > 1<<14 || cap(m.arena) > 1<<20 {
		*m = oldValues{}
		return
	}
	clear(m.entries)
	m.entries = m.entries[:0]
	m.arena = m.arena[:0]
	m.sorted = false
}
