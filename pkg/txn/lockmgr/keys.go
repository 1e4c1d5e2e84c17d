package lockmgr

import "strings"

// Key locks (txn.md L1): a hash map from key to the holders of R and W on it.
//
// Because W conflicts with every other holder's R and W, a key has either
// one writer and no readers, or readers only; a holder that reads and
// writes a key holds W alone (L4: W absorbs R). A key may be read by very
// many holders at once — every data transaction reads the metadata version
// key (M2) — so a reader must leave in O(1), not by scanning the readers:
// each side remembers the other's position (keyRef.pos ↔ readerRef.i) and a
// release swaps the last reader into the leaving one's slot.

type keyEntry struct {
	key string
	// keyOwner is the holder whose arena key points into, or nil if key is
	// a copy of its own. When keyOwner releases while others still hold the
	// key, the key is copied, so one long-lived entry does not pin the
	// whole request arena of a transaction that is long gone.
	keyOwner *holder
	writer   *holder
	readers  []readerRef // unordered
}

// readerRef is one reader of a key: the holder and the index of its keyRef.
type readerRef struct {
	h *holder
	i int32
}

// keyRef is a holder's lock on a key: pos is its index in e.readers for R,
// or -1 for W.
type keyRef struct {
	e   *keyEntry
	pos int32
}

// lockKey grants R or W on k (a substring of hd's arena) to hd, after the
// conflict check passed. Within one grant, hd's own reader slot on an entry
// is always the last one: hd is new, nothing else runs in between, and the
// only removal (hd's upgrade below) pops that last slot. So duplicates and
// upgrades inside one request are found in O(1).
func (t *Table) lockKey(hd *holder, k string, m Mode) {
	e := t.keys[k]
	if e == nil {
		e = t.newEntry(k, hd)
		t.keys[k] = e
	}
	if e.writer == hd {
		return // W already held: it covers R and W
	}
	last := len(e.readers) - 1
	ownR := last >= 0 && e.readers[last].h == hd
	switch {
	case m == R && ownR:
		return // R twice
	case m == R:
		hd.keys = append(hd.keys, keyRef{e: e, pos: int32(len(e.readers))})
		e.readers = append(e.readers, readerRef{h: hd, i: int32(len(hd.keys) - 1)})
	case ownR:
		// L4: read → write upgrade within the transaction. The check saw no
		// other reader, so hd's slot is the only one.
		i := e.readers[last].i
		e.readers[last] = readerRef{}
		e.readers = e.readers[:last]
		hd.keys[i].pos = -1
		e.writer = hd
	default:
		e.writer = hd
		hd.keys = append(hd.keys, keyRef{e: e, pos: -1})
	}
}

// unlockKey drops hd's i-th key lock in O(1).
func (t *Table) unlockKey(hd *holder, i int) {
	ref := hd.keys[i]
	e := ref.e
	if ref.pos < 0 {
		e.writer = nil
	} else {
		last := int32(len(e.readers) - 1)
		if ref.pos != last {
			moved := e.readers[last] // another holder's slot: hd has one per key
			e.readers[ref.pos] = moved
			moved.h.keys[moved.i].pos = ref.pos
		}
		e.readers[last] = readerRef{}
		e.readers = e.readers[:last]
	}
	switch {
	case e.writer == nil && len(e.readers) == 0:
		delete(t.keys, e.key)
		t.freeEntry(e)
	case e.keyOwner == hd:
		// The entry outlives the holder whose arena its key points into:
		// give it its own copy (see keyEntry.keyOwner).
		delete(t.keys, e.key)
		e.key = strings.Clone(e.key)
		e.keyOwner = nil
		t.keys[e.key] = e
	}
}

func (t *Table) newEntry(k string, owner *holder) *keyEntry {
	var e *keyEntry
	if n := len(t.freeEntries); n > 0 {
		e = t.freeEntries[n-1]
		t.freeEntries = t.freeEntries[:n-1]
	} else {
		e = new(keyEntry)
	}
	e.key = k
	e.keyOwner = owner
	return e
}

func (t *Table) freeEntry(e *keyEntry) {
	e.key = ""
	e.keyOwner = nil
	e.writer = nil
	if cap(e.readers) > maxPooledReader {
		e.readers = nil // a hot key's long slice is not kept around
	}
	if len(t.freeEntries) < maxFreeEntries {
		t.freeEntries = append(t.freeEntries, e)
	}
}
