package backend

import (
	"bytes"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Editors map GMS's row edits to buffered writes of the session's
// transaction, as CockroachDB's row writer maps them to conditional puts
// (DESIGN.md §6): an insert of a row is an `insert` of its key (and of each
// index entry), so a duplicate fails at commit; an update and a delete of a
// row the statement read are a `write` / `delete` whose guard is the cmp on
// the value read; index entries move with their row, in the same
// transaction.

// Inserter implements sql.InsertableTable.
func (t *Table) Inserter(*sql.Context) sql.RowInserter { return &editor{t: t} }

// Updater implements sql.UpdatableTable.
func (t *Table) Updater(*sql.Context) sql.RowUpdater { return &editor{t: t} }

// Deleter implements sql.DeletableTable.
func (t *Table) Deleter(*sql.Context) sql.RowDeleter { return &editor{t: t} }

// Replacer implements sql.ReplaceableTable: REPLACE must see a duplicate
// while it runs (it deletes the old row and inserts again), so its inserts
// read their keys first.
func (t *Table) Replacer(*sql.Context) sql.RowReplacer { return &editor{t: t, sync: true} }

// editor is every kind of row editor.
type editor struct {
	t    *Table
	sync bool // check duplicates while the statement runs
}

var (
	_ sql.RowInserter = (*editor)(nil)
	_ sql.RowUpdater  = (*editor)(nil)
	_ sql.RowDeleter  = (*editor)(nil)
	_ sql.RowReplacer = (*editor)(nil)
)

func (e *editor) txn(ctx *sql.Context) (*session.Txn, error) {
	if e.t.pending(ctx) {
		return nil, sql.ErrUnsupportedFeature.New("writing rows into a table created in the same statement (CREATE TABLE ... SELECT): create the table, then INSERT ... SELECT")
	}
	return e.t.txn(ctx)
}

// StatementBegin implements sql.EditOpenerCloser.
func (e *editor) StatementBegin(ctx *sql.Context) {
	if tx, err := e.t.txn(ctx); err == nil {
		tx.StatementBegin()
	}
}

// DiscardChanges implements sql.EditOpenerCloser: the statement's writes
// are undone, the transaction's earlier ones kept.
func (e *editor) DiscardChanges(ctx *sql.Context, _ error) error {
	if tx, err := e.t.txn(ctx); err == nil {
		tx.StatementDiscard()
	}
	return nil
}

// StatementComplete implements sql.EditOpenerCloser.
func (e *editor) StatementComplete(ctx *sql.Context) error {
	if tx, err := e.t.txn(ctx); err == nil {
		tx.StatementComplete()
	}
	return nil
}

// Close implements sql.Closer: writes stay buffered until COMMIT.
func (e *editor) Close(*sql.Context) error { return nil }

func (e *editor) syncDuplicates(ctx *sql.Context) bool {
	if e.sync {
		return true
	}
	sess, ok := session.FromContext(ctx)
	return ok && sess.Flags().SyncDuplicates
}

func (e *editor) pkDup(row sql.Row) *session.Dup {
	return &session.Dup{Entry: describe(row, e.t.info.pkOrds), Key: e.t.desc.Name + ".PRIMARY"}
}

func (e *editor) indexDup(ix *indexInfo, row sql.Row) *session.Dup {
	return &session.Dup{Entry: describe(row, ix.ords), Key: e.t.desc.Name + "." + ix.desc.Name}
}

// Insert implements sql.RowInserter.
func (e *editor) Insert(ctx *sql.Context, row sql.Row) error {
	tx, err := e.txn(ctx)
	if err != nil {
		return err
	}
	ti := e.t.info
	key, err := ti.newRowKey(row)
	if err != nil {
		return err
	}
	value, err := ti.encodeValue(row)
	if err != nil {
		return err
	}
	suffix := ti.suffixOf(key)
	if e.syncDuplicates(ctx) {
		if err := e.checkDuplicates(ctx, tx, row, key, suffix); err != nil {
			return err
		}
	}
	dup := e.pkDup(row)
	if err := tx.Insert(key, value, dup); err != nil {
		return err
	}
	for _, ix := range ti.indexes {
		k, v, err := ti.indexEntry(ix, row, suffix)
		if err != nil {
			return err
		}
		d := dup // a non-unique entry repeats only if the row does
		if ix.desc.Unique {
			d = e.indexDup(ix, row)
		}
		if err := tx.Insert(k, v, d); err != nil {
			return err
		}
	}
	return nil
}

// checkDuplicates reads the row's key and its unique index entries, and
// returns GMS's unique-key error with the existing row if one is taken
// (INSERT IGNORE, ON DUPLICATE KEY UPDATE and REPLACE act on it).
func (e *editor) checkDuplicates(ctx *sql.Context, tx *session.Txn, row sql.Row, key, suffix []byte) error {
	ti := e.t.info
	if !ti.keyless {
		v, ok, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if ok {
			existing, err := ti.decodeRow(key, v)
			if err != nil {
				return err
			}
			return sql.NewUniqueKeyErr(fmt.Sprintf("[%s]", describe(row, ti.pkOrds)), true, existing)
		}
	}
	for _, ix := range ti.indexes {
		if !ix.desc.Unique {
			continue
		}
		k, _, err := ti.indexEntry(ix, row, suffix)
		if err != nil {
			return err
		}
		pk, ok, err := tx.Get(ctx, k)
		if err != nil {
			return err
		}
		if !ok || bytes.Equal(pk, suffix) {
			continue
		}
		rk := ti.rowKey(pk)
		v, ok, err := tx.Get(ctx, rk)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		existing, err := ti.decodeRow(rk, v)
		if err != nil {
			return err
		}
		return sql.NewUniqueKeyErr(fmt.Sprintf("[%s]", describe(row, ix.ords)), false, existing)
	}
	return nil
}

// Update implements sql.RowUpdater. An update that changes nothing (GMS
// sends those, e.g. to fill a column ADD COLUMN added) writes nothing.
func (e *editor) Update(ctx *sql.Context, old, new sql.Row) error {
	if rowsEqual(ctx, e.t.info.schema, old, new) {
		return nil
	}
	tx, err := e.txn(ctx)
	if err != nil {
		return err
	}
	ti := e.t.info
	oldKey, err := ti.existingKey(ctx, tx, old)
	if err != nil {
		return err
	}
	value, err := ti.encodeValue(new)
	if err != nil {
		return err
	}
	newKey := oldKey
	if ti.keyless {
		if newKey, err = ti.newRowKey(new); err != nil {
			return err
		}
	} else {
		s, err := ti.pkSuffix(new)
		if err != nil {
			return err
		}
		newKey = ti.rowKey(s)
	}
	oldSuffix, newSuffix := ti.suffixOf(oldKey), ti.suffixOf(newKey)
	if bytes.Equal(oldKey, newKey) {
		if err := tx.Update(newKey, value); err != nil {
			return err
		}
	} else {
		if err := tx.Remove(oldKey); err != nil {
			return err
		}
		if err := tx.Insert(newKey, value, e.pkDup(new)); err != nil {
			return err
		}
	}
	for _, ix := range ti.indexes {
		ok, ov, err := ti.indexEntry(ix, old, oldSuffix)
		if err != nil {
			return err
		}
		nk, nv, err := ti.indexEntry(ix, new, newSuffix)
		if err != nil {
			return err
		}
		switch {
		case bytes.Equal(ok, nk) && bytes.Equal(ov, nv):
		case bytes.Equal(ok, nk):
			err = tx.Update(nk, nv)
		default:
			if err = tx.Remove(ok); err == nil {
				d := e.pkDup(new)
				if ix.desc.Unique {
					d = e.indexDup(ix, new)
				}
				err = tx.Insert(nk, nv, d)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Delete implements sql.RowDeleter.
func (e *editor) Delete(ctx *sql.Context, row sql.Row) error {
	tx, err := e.txn(ctx)
	if err != nil {
		return err
	}
	ti := e.t.info
	key, err := ti.existingKey(ctx, tx, row)
	if err != nil {
		return err
	}
	if err := tx.Remove(key); err != nil {
		return err
	}
	suffix := ti.suffixOf(key)
	for _, ix := range ti.indexes {
		k, _, err := ti.indexEntry(ix, row, suffix)
		if err != nil {
			return err
		}
		if err := tx.Remove(k); err != nil {
			return err
		}
	}
	return nil
}

func rowsEqual(ctx *sql.Context, sch sql.Schema, a, b sql.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) {
			return false
		}
		if a[i] == nil {
			continue
		}
		c, err := sch[i].Type.Compare(ctx, a[i], b[i])
		if err != nil || c != 0 {
			return false
		}
		// Equal under a collation is not equal: 'a' → 'A' is an update.
		if sa, ok := a[i].(string); ok {
			if sb, ok := b[i].(string); !ok || sa != sb {
				return false
			}
		}
	}
	return true
}
