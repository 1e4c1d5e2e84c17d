package session

import (
	"context"
	"sort"
)

// write is a buffered write of one key: what the store held before (its
// base) and what the transaction wants it to hold.
type write struct {
	base    baseKind
	baseVal cached // for baseRead: what was read
	present bool   // the key exists after the transaction
	value   []byte
	dup     *Dup // names the key for a 1062 error if its insert meets an existing key
}

// baseKind says how the transaction knows what the store held for a key it
// writes.
type baseKind uint8

const (
	// baseRead: the transaction read the key (a cmp or cmp-range guards it).
	baseRead baseKind = iota
	// baseAssumedAbsent: never read; written as new. The commit's insert
	// (or, if the transaction deleted it again, cmp absent) checks it, and a
	// failure is a duplicate key (1062).
	baseAssumedAbsent
	// baseAssumedPresent: never read, but it exists if what the transaction
	// read is still as read — an index entry of a row the transaction read
	// (the row's guard covers it).
	baseAssumedPresent
)

// Dup names a key for MySQL's duplicate-entry error: the entry's values and
// the key's name ("t.PRIMARY", "t.by_email").
type Dup struct {
	Entry, Key string
}

type undoRec struct {
	key  string
	prev *write // nil: the key had no write
}

// Insert buffers the insert of a new key (a row, or an index entry). If the
// transaction knows the key exists (it read it, or wrote it) the duplicate
// is returned now (DupEntry); if it knows nothing, the insert is blind and
// the commit's insert operation checks it. The insert does no read: an
// INSERT of new rows is one short transaction (DESIGN.md §6).
func (t *Txn) Insert(key, value []byte, dup *Dup) error {
	t.active()
	if c, ok := t.lookup(key); ok && c.present {
		if dup == nil {
			dup = &Dup{Entry: "?", Key: "?"}
		}
		return DupEntry(dup.Entry, dup.Key)
	}
	return t.set(key, true, value, baseAssumedAbsent, dup)
}

// InsertChecked is Insert with the key read first when the transaction
// does not know it (INSERT IGNORE, ON DUPLICATE KEY UPDATE, REPLACE: GMS
// must learn of a duplicate while the statement runs). It reports whether
// the key exists, with its value, instead of inserting.
func (t *Txn) InsertChecked(ctx context.Context, key, value []byte, dup *Dup) (existing []byte, exists bool, err error) {
	v, ok, err := t.Get(ctx, key)
	if err != nil {
		return nil, false, err
	}
	if ok {
		return v, true, nil
	}
	return nil, false, t.set(key, true, value, baseAssumedAbsent, dup)
}

// Update sets a key that exists: a row the transaction read, or an index
// entry of one.
func (t *Txn) Update(key, value []byte) error {
	t.active()
	return t.set(key, true, value, baseAssumedPresent, nil)
}

// Remove deletes a key that exists (as Update).
func (t *Txn) Remove(key []byte) error {
	t.active()
	return t.set(key, false, nil, baseAssumedPresent, nil)
}

func (t *Txn) set(key []byte, present bool, value []byte, assume baseKind, dup *Dup) error {
	if t.readOnly {
		return ReadOnly()
	}
	lim := t.s.env.limits()
	if len(key) > lim.MaxKeyBytes {
		return RowTooLarge("a key", len(key), lim.MaxKeyBytes)
	}
	if len(value) > lim.MaxValueBytes {
		return RowTooLarge("a row", len(value), lim.MaxValueBytes)
	}
	k := string(key)
	prev := t.writes[k]
	var w write
	if prev != nil {
		w = *prev
	} else {
		if c, ok := t.base(key); ok {
			w.base, w.baseVal = baseRead, c
		} else {
			w.base = assume
		}
		i := sort.SearchStrings(t.wkeys, k)
		t.wkeys = append(t.wkeys, "")
		copy(t.wkeys[i+1:], t.wkeys[i:])
		t.wkeys[i] = k
	}
	w.present, w.value = present, value
	if dup != nil {
		w.dup = dup
	}
	t.writes[k] = &w
	t.undo = append(t.undo, undoRec{key: k, prev: prev})
	return nil
}

// undoTo undoes the writes buffered after undo position n.
func (t *Txn) undoTo(n int) {
	for i := len(t.undo) - 1; i >= n; i-- {
		u := t.undo[i]
		if u.prev != nil {
			t.writes[u.key] = u.prev
			continue
		}
		delete(t.writes, u.key)
		j := sort.SearchStrings(t.wkeys, u.key)
		if j < len(t.wkeys) && t.wkeys[j] == u.key {
			t.wkeys = append(t.wkeys[:j], t.wkeys[j+1:]...)
		}
	}
	t.undo = t.undo[:n]
}

// Mark returns a position to roll the transaction's writes back to
// (UndoTo): the statement runner marks every statement of an explicit
// transaction, so a statement that fails leaves nothing of itself behind.
func (t *Txn) Mark() int {
	t.active()
	return len(t.undo)
}

// UndoTo rolls the writes back to a Mark.
func (t *Txn) UndoTo(mark int) {
	if mark <= len(t.undo) {
		t.undoTo(mark)
	}
}

// StatementBegin, StatementDiscard and StatementComplete follow GMS's
// editor calls (sql.EditOpenerCloser): a statement that fails discards its
// own writes and keeps the transaction's earlier ones. Several editors of
// one statement nest.
func (t *Txn) StatementBegin() {
	t.active()
	if t.stmtDepth == 0 {
		t.stmtMark = len(t.undo)
	}
	t.stmtDepth++
}

// StatementDiscard undoes the statement's writes.
func (t *Txn) StatementDiscard() {
	if t.stmtDepth > 0 {
		t.undoTo(t.stmtMark)
		t.stmtDepth--
	}
}

// StatementComplete ends the statement.
func (t *Txn) StatementComplete() {
	if t.stmtDepth > 0 {
		t.stmtDepth--
	}
}

// rollback drops everything.
func (t *Txn) rollback() { t.state = txnDone }

// writesIn returns the buffered writes' keys in [start, end), sorted.
func (t *Txn) writesIn(start, end []byte) []string {
	i := sort.SearchStrings(t.wkeys, string(start))
	j := len(t.wkeys)
	if end != nil {
		j = sort.SearchStrings(t.wkeys, string(end))
	}
	if i >= j {
		return nil
	}
	return t.wkeys[i:j]
}
