package lockmgr

import (
	"fmt"
	"slices"
	"strings"
)

// Table is the lock table of one replica. It is not safe for concurrent use:
// the engine calls it from its single execution path, in delivery order.
//
// The zero Table is not usable; call New.
type Table struct {
	byID    map[[32]byte]*holder
	byOrder map[uint64]*holder // delivery orders are unique (ErrOrderTaken)
	keys    map[string]*keyEntry
	sr      itree // SR spans, merged per holder
	sw      itree // SW points, deduplicated per holder

	// mark numbers the conflict queries; a holder seen by the current query
	// carries it, so a holder is reported once however many locks collide.
	mark uint64

	// Scratch space reused across calls so the granted path allocates only
	// the holder's key arena.
	buf   []byte
	reqs  []req
	spans []req
	found []*holder

	freeEntries []*keyEntry
	freeHolders []*holder
}

// holder is the table's record of one transaction's locks. Everything it
// points at belongs to it or is shared only through keyEntry.
type holder struct {
	Holder
	// arena holds a copy of every key of the request, in one allocation;
	// the keys, spans and points below are substrings of it.
	arena  string
	keys   []keyRef // R and W locks, at most one per key (W absorbs R)
	spans  []*inode // SR spans in the sr tree: disjoint, non-adjacent, by start
	points []*inode // SW points in the sw tree: distinct
	mark   uint64
}

// req is one lock of a request after validation and copying.
type req struct {
	mode  Mode
	start string
	end   limit // SR only
}

// New returns an empty table.
func New() *Table {
	return &Table{
		byID:    make(map[[32]byte]*holder),
		byOrder: make(map[uint64]*holder),
		keys:    make(map[string]*keyEntry),
	}
}

// Len returns the number of holders.
func (t *Table) Len() int { return len(t.byID) }

// Acquire grants every lock of the request to h, or none of them (txn.md
// L6): it never waits. It returns nil if the locks are granted, and
// otherwise every holder that conflicts with the request, each once, in
// delivery order (E3 names the first). Locks of the request never conflict
// with each other (L4): a transaction that reads and writes a key holds W
// on it, and its SR and SW may overlap.
//
// An error means the call was malformed (ErrInvalidLock), h already holds
// locks (ErrHolderExists) or its order is another holder's (ErrOrderTaken);
// the table is unchanged. A holder granted an empty request is in the
// table, holding nothing, until Release.
func (t *Table) Acquire(h Holder, locks []Lock) ([]Holder, error) {
	if err := t.admit(h); err != nil {
		return nil, err
	}
	reqs, arena, err := t.prepare(locks)
	if err != nil {
		return nil, err
	}
	defer t.doneReqs()
	// L6: everything is checked before anything is granted, so a conflict
	// on the last lock leaves the table as it was.
	if c := t.conflicts(reqs, nil); c != nil {
		return c, nil
	}
	t.grant(h, reqs, arena)
	return nil, nil
}

// Restore puts back a holder the engine persisted (txn.md E11): the lock
// set it held, with its delivery order, read from its pending record after
// a restart or a state transfer. It grants exactly like Acquire, so a set of
// holders that was consistent when persisted always restores, in any
// order. If the locks conflict with a holder already restored the records
// cannot all be true: Restore returns a *ConflictError (ErrInconsistent),
// a local fault, and leaves the table unchanged.
func (t *Table) Restore(h Holder, locks []Lock) error {
	if err := t.admit(h); err != nil {
		return err
	}
	reqs, arena, err := t.prepare(locks)
	if err != nil {
		return err
	}
	defer t.doneReqs()
	if c := t.conflicts(reqs, nil); c != nil {
		return &ConflictError{Holder: h, Conflicts: c}
	}
	t.grant(h, reqs, arena)
	return nil
}

// Conflicts returns the holders other than id whose locks conflict with
// locks, in delivery order, without acquiring anything. id's own locks, if
// it holds any, never count (L4). A queued metadata transaction (M4) uses
// it to learn what it waits for.
func (t *Table) Conflicts(id [32]byte, locks []Lock) ([]Holder, error) {
	reqs, _, err := t.prepare(locks)
	if err != nil {
		return nil, err
	}
	defer t.doneReqs()
	return t.conflicts(reqs, t.byID[id]), nil
}

// Release drops every lock of id and reports whether it held any (or was
// granted an empty request). Its cost is proportional to id's own locks
// (times log n for structural ones), not to the size of the table.
func (t *Table) Release(id [32]byte) bool {
	hd := t.byID[id]
	if hd == nil {
		return false
	}
	for i := range hd.keys {
		t.unlockKey(hd, i)
	}
	for _, n := range hd.spans {
		t.sr.freeNode(t.sr.remove(n.start, n.order))
	}
	for _, n := range hd.points {
		t.sw.freeNode(t.sw.remove(n.start, n.order))
	}
	delete(t.byID, id)
	delete(t.byOrder, hd.Order)
	t.freeHolder(hd)
	return true
}

// Held returns the locks id holds, in normal form: R and W on distinct keys
// (a W absorbs the same holder's R), SR spans merged where they overlap or
// touch, SW points once each; sorted by mode (R, W, SR, SW) and then by
// start key. The normal form grants and conflicts exactly like the request
// it came from, and Restore of it gives it back unchanged (E11). The slices
// are fresh copies. ok is false if id holds nothing and was never granted.
func (t *Table) Held(id [32]byte) (locks []Lock, ok bool) {
	hd := t.byID[id]
	if hd == nil {
		return nil, false
	}
	n := len(hd.keys) + len(hd.spans) + len(hd.points)
	if n == 0 {
		return nil, true
	}
	size := 0
	for _, r := range hd.keys {
		size += len(r.e.key)
	}
	for _, s := range hd.spans {
		size += len(s.start) + len(s.end.key)
	}
	for _, p := range hd.points {
		size += len(p.start)
	}
	// One backing array for every key; each slice is capped at its own
	// length so a caller's append cannot overwrite the next key.
	buf := make([]byte, 0, size)
	cp := func(s string) []byte {
		if s == "" {
			return nil
		}
		i := len(buf)
		buf = append(buf, s...)
		return buf[i:len(buf):len(buf)]
	}
	locks = make([]Lock, 0, n)
	for _, r := range hd.keys {
		m := R
		if r.pos < 0 {
			m = W
		}
		locks = append(locks, Lock{Mode: m, Start: cp(r.e.key)})
	}
	for _, s := range hd.spans {
		l := Lock{Mode: SR, Start: cp(s.start)}
		if s.end.kind != inf {
			l.End = cp(s.end.key)
		}
		locks = append(locks, l)
	}
	for _, p := range hd.points {
		locks = append(locks, Lock{Mode: SW, Start: cp(p.start)})
	}
	slices.SortFunc(locks, func(a, b Lock) int {
		if a.Mode != b.Mode {
			return int(a.Mode) - int(b.Mode)
		}
		return strings.Compare(string(a.Start), string(b.Start))
	})
	return locks, true
}

// Holders returns every holder in delivery order.
func (t *Table) Holders() []Holder {
	hs := make([]Holder, 0, len(t.byOrder))
	for _, hd := range t.byOrder {
		hs = append(hs, hd.Holder)
	}
	// Map iteration order is random; the sort makes the result the same on
	// every replica.
	slices.SortFunc(hs, func(a, b Holder) int { return cmpOrder(a.Order, b.Order) })
	return hs
}

func cmpOrder(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// admit checks that h is new and its order unused.
func (t *Table) admit(h Holder) error {
	if _, dup := t.byID[h.ID]; dup {
		return fmt.Errorf("%w: %v", ErrHolderExists, h)
	}
	if o, dup := t.byOrder[h.Order]; dup {
		return fmt.Errorf("%w: %v and %v", ErrOrderTaken, h, o.Holder)
	}
	return nil
}

// maxScratchBytes bounds the key buffer kept between calls.
const maxScratchBytes = 1 << 20

// prepare validates a request and copies its keys into one string (the
// arena the holder will keep if the request is granted). SR spans that
// cover no key are dropped.
func (t *Table) prepare(locks []Lock) ([]req, string, error) {
	size := 0
	for i, l := range locks {
		if err := validate(i, l); err != nil {
			return nil, "", err
		}
		size += len(l.Start) + len(l.End)
	}
	buf := t.buf[:0]
	for _, l := range locks {
		buf = append(buf, l.Start...)
		buf = append(buf, l.End...)
	}
	arena := string(buf)
	if cap(buf) <= maxScratchBytes {
		t.buf = buf
	} else {
		t.buf = nil
	}
	reqs := t.reqs[:0]
	off := 0
	for _, l := range locks {
		q := req{mode: l.Mode, start: arena[off : off+len(l.Start)]}
		off += len(l.Start)
		if l.Mode == SR {
			if len(l.End) == 0 {
				q.end = limit{kind: inf}
			} else {
				q.end = limit{key: arena[off : off+len(l.End)], kind: open}
				off += len(l.End)
				if q.start >= q.end.key {
					continue // [a, b) with a >= b: no key to lock
				}
			}
		}
		reqs = append(reqs, q)
	}
	t.reqs = reqs
	return reqs, arena, nil
}

// maxScratchReqs bounds the request scratch kept between calls.
const maxScratchReqs = 4096

// doneReqs drops the request scratch's references into the request's key
// arena, so a released holder's arena is not kept alive by the scratch.
func (t *Table) doneReqs() {
	if cap(t.reqs) > maxScratchReqs {
		t.reqs = nil
		return
	}
	clear(t.reqs)
	t.reqs = t.reqs[:0]
}

// conflicts returns the holders other than self that hold a lock
// conflicting with one of reqs, in delivery order, or nil.
func (t *Table) conflicts(reqs []req, self *holder) []Holder {
	t.mark++
	out := t.found[:0]
	for _, q := range reqs {
		switch q.mode {
		case R:
			// L1: R conflicts with another holder's W only. L3: the key's
			// structural locks are not consulted.
			if e := t.keys[q.start]; e != nil {
				out = t.see(e.writer, self, out)
			}
		case W:
			// L1: W conflicts with another holder's R or W.
			if e := t.keys[q.start]; e != nil {
				out = t.see(e.writer, self, out)
				for _, r := range e.readers {
					out = t.see(r.h, self, out)
				}
			}
		case SR:
			// L2: SR conflicts with the SW points of others inside
			// [start, end); other SR spans share.
			out = overlapping(t.sw.root, q.start, q.end, self, t.mark, out)
		case SW:
			// L2: SW conflicts with the SR spans of others that contain the
			// key: start <= key < end. Other SW points share.
			out = overlapping(t.sr.root, q.start, limit{key: q.start, kind: closed}, self, t.mark, out)
		}
	}
	if len(out) == 0 {
		t.found = out
		return nil
	}
	// E3: every correct replica must name the same holder first, so the
	// report is in delivery order, never in map or tree order.
	slices.SortFunc(out, func(a, b *holder) int { return cmpOrder(a.Order, b.Order) })
	res := make([]Holder, len(out))
	for i, hd := range out {
		res[i] = hd.Holder
	}
	clear(out) // drop the pointers: a released holder must not stay reachable
	t.found = out[:0]
	return res
}

// see appends hd to out once per query, unless it is nil or self (L4).
func (t *Table) see(hd, self *holder, out []*holder) []*holder {
	if hd == nil || hd == self || hd.mark == t.mark {
		return out
	}
	hd.mark = t.mark
	return append(out, hd)
}

// grant records a request that passed the conflict check.
func (t *Table) grant(h Holder, reqs []req, arena string) {
	hd := t.newHolder(h, arena)
	t.byID[h.ID] = hd
	t.byOrder[h.Order] = hd
	spans := t.spans[:0]
	for _, q := range reqs {
		switch q.mode {
		case R, W:
			t.lockKey(hd, q.start, q.mode)
		case SW:
			n := t.sw.newNode(q.start, limit{key: q.start, kind: closed}, hd)
			if t.sw.insert(n) {
				hd.points = append(hd.points, n)
			} else {
				t.sw.freeNode(n) // the holder already has SW on this key
			}
		case SR:
			spans = append(spans, q)
		}
	}
	// L4: a holder's own spans never conflict, so they can be merged; one
	// span per run of overlapping or touching spans keeps the tree small and
	// makes Held's answer canonical.
	if len(spans) > 0 {
		slices.SortFunc(spans, func(a, b req) int { return strings.Compare(a.start, b.start) })
		cur := spans[0]
		for _, s := range spans[1:] {
			if cur.end.kind == inf || s.start <= cur.end.key {
				if cmpLimit(s.end, cur.end) > 0 {
					cur.end = s.end
				}
				continue
			}
			t.addSpan(hd, cur)
			cur = s
		}
		t.addSpan(hd, cur)
	}
	clear(spans)
	t.spans = spans[:0]
}

func (t *Table) addSpan(hd *holder, s req) {
	n := t.sr.newNode(s.start, s.end, hd)
	t.sr.insert(n) // starts of one holder's merged spans are distinct
	hd.spans = append(hd.spans, n)
}

const (
	maxFreeHolders  = 256
	maxPooledLocks  = 1024 // a holder's slices above this size are not pooled
	maxFreeEntries  = 4096
	maxPooledReader = 64
)

func (t *Table) newHolder(h Holder, arena string) *holder {
	var hd *holder
	if k := len(t.freeHolders); k > 0 {
		hd = t.freeHolders[k-1]
		t.freeHolders = t.freeHolders[:k-1]
	} else {
		hd = new(holder)
	}
	hd.Holder = h
	hd.arena = arena
	return hd
}

func (t *Table) freeHolder(hd *holder) {
	reuse := func(s []*inode) []*inode {
		if cap(s) > maxPooledLocks {
			return nil
		}
		clear(s)
		return s[:0]
	}
	if cap(hd.keys) > maxPooledLocks {
		hd.keys = nil
	} else {
		clear(hd.keys)
		hd.keys = hd.keys[:0]
	}
	hd.spans = reuse(hd.spans)
	hd.points = reuse(hd.points)
	hd.Holder = Holder{}
	hd.arena = ""
	hd.mark = 0
	if len(t.freeHolders) < maxFreeHolders {
		t.freeHolders = append(t.freeHolders, hd)
	}
}
