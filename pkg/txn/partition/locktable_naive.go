package partition

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// TEMPORARY — a naive lock table with the API of pkg/txn/lockmgr, which
// another engineer is writing in parallel (Mode R/W/SR/SW; Lock{Mode; Start,
// End}; Holder{ID; Order}; Acquire, Conflicts, Release, Held, Restore, Len,
// Holders). Not built yet: the engine runs on this file until lockmgr lands on
// main; then this file goes and the aliases in locks.go point at lockmgr.
// It scans every holder on every call (O(holders × locks)): correct, not fast.

type lockMode uint8

const (
	modeR lockMode = 1 + iota
	modeW
	modeSR
	modeSW
)

// lock is one lock: a key lock (R, W) or a structural lock (SR on [Start,
// End), End nil unbounded; SW on the single key Start).
type lock struct {
	Mode       lockMode
	Start, End []byte
}

type holder struct {
	ID    [32]byte
	Order uint64
}

type lockEntry struct {
	h     holder
	locks []lock
}

type lockTable struct {
	held map[[32]byte]*lockEntry
}

var errLockHeld = errors.New("partition: lock table: holder already present")

func newLockTable() *lockTable { return &lockTable{held: map[[32]byte]*lockEntry{}} }

// conflict applies Table 2 with range-granular structural locks (L1–L3).
func conflict(a, b *lock) bool {
	aKey, bKey := a.Mode == modeR || a.Mode == modeW, b.Mode == modeR || b.Mode == modeW
	switch {
	case aKey && bKey: // L1
		return (a.Mode == modeW || b.Mode == modeW) && bytes.Equal(a.Start, b.Start)
	case aKey != bKey: // L3
		return false
	case a.Mode == b.Mode: // SR–SR, SW–SW share (L2)
		return false
	}
	sr, sw := a, b
	if a.Mode == modeSW {
		sr, sw = b, a
	}
	return bytes.Compare(sw.Start, sr.Start) >= 0 && (sr.End == nil || bytes.Compare(sw.Start, sr.End) < 0)
}

// Conflicts returns the holders other than id whose locks conflict with
// locks, sorted by Order (L4: a holder's own locks never conflict).
func (t *lockTable) Conflicts(id [32]byte, locks []lock) []holder {
	var out []holder
	for hid, e := range t.held {
		if hid == id {
			continue
		}
	scan:
		for i := range e.locks {
			for j := range locks {
				if conflict(&e.locks[i], &locks[j]) {
					out = append(out, e.h)
					break scan
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b holder) int {
		if a.Order != b.Order {
			if a.Order < b.Order {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	return out
}

// Acquire grants every lock or none (L6): it returns the conflicting holders,
// or nil after granting.
func (t *lockTable) Acquire(h holder, locks []lock) []holder {
	if c := t.Conflicts(h.ID, locks); len(c) > 0 {
		return c
	}
	e := t.held[h.ID]
	if e == nil {
		e = &lockEntry{h: h}
		t.held[h.ID] = e
	}
	e.locks = append(e.locks, locks...)
	return nil
}

// Release drops every lock of id.
func (t *lockTable) Release(id [32]byte) bool {
	_, ok := t.held[id]
	delete(t.held, id)
	return ok
}

// Held returns the locks of id.
func (t *lockTable) Held(id [32]byte) []lock {
	if e := t.held[id]; e != nil {
		return e.locks
	}
	return nil
}

// Restore puts back a holder's locks verbatim (E11).
func (t *lockTable) Restore(h holder, locks []lock) error {
	if _, ok := t.held[h.ID]; ok {
		return fmt.Errorf("%w: %x", errLockHeld, h.ID[:4])
	}
	t.held[h.ID] = &lockEntry{h: h, locks: slices.Clone(locks)}
	return nil
}

// Len returns the number of holders.
func (t *lockTable) Len() int { return len(t.held) }

// Holders returns the holders sorted by Order.
func (t *lockTable) Holders() []holder {
	out := make([]holder, 0, len(t.held))
	for _, e := range t.held {
		out = append(out, e.h)
	}
	slices.SortFunc(out, func(a, b holder) int {
		switch {
		case a.Order < b.Order:
			return -1
		case a.Order > b.Order:
			return 1
		}
		return 0
	})
	return out
}
