package backend

import (
	"fmt"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Table is a GMS table over one descriptor of one catalog snapshot. It is
// thin: rows live in the store, transaction state in the session.
type Table struct {
	p    *Provider
	db   string
	snap *catalog.Snapshot
	desc *catalog.Table
	info *tableInfo
}

var (
	_ sql.Table                 = (*Table)(nil)
	_ sql.IndexAddressableTable = (*Table)(nil)
	_ sql.InsertableTable       = (*Table)(nil)
	_ sql.UpdatableTable        = (*Table)(nil)
	_ sql.DeletableTable        = (*Table)(nil)
	_ sql.ReplaceableTable      = (*Table)(nil)
	_ sql.AutoIncrementTable    = (*Table)(nil)
	_ sql.AlterableTable        = (*Table)(nil)
	_ sql.IndexAlterableTable   = (*Table)(nil)
	_ sql.TruncateableTable     = (*Table)(nil)
	_ sql.CommentedTable        = (*Table)(nil)
	_ sql.PrimaryKeyTable       = (*Table)(nil)
)

func (p *Provider) newTable(db string, s *catalog.Snapshot, t *catalog.Table) (*Table, error) {
	ti, err := p.info(db, t)
	if err != nil {
		return nil, err
	}
	return &Table{p: p, db: db, snap: s, desc: t, info: ti}, nil
}

// Name implements sql.Nameable.
func (t *Table) Name() string { return t.desc.Name }

// String implements fmt.Stringer.
func (t *Table) String() string { return t.desc.Name }

// Schema implements sql.Table.
func (t *Table) Schema() sql.Schema { return t.info.schema }

// PrimaryKeySchema implements sql.PrimaryKeyTable.
func (t *Table) PrimaryKeySchema() sql.PrimaryKeySchema {
	return sql.NewPrimaryKeySchema(t.info.schema, t.info.pkOrds...)
}

// Collation implements sql.Table.
func (t *Table) Collation() sql.CollationID {
	if t.desc.Collation == sql.Collation_Unspecified {
		return sql.Collation_Default
	}
	return t.desc.Collation
}

// Comment implements sql.CommentedTable: the table's comment, with its
// placement when it is not the default, in the table option SHOW CREATE
// TABLE prints and CREATE TABLE reads back (placement.go).
func (t *Table) Comment() string {
	return withPlacement(t.desc.Comment, t.desc.Placement)
}

// Descriptor returns the table's catalog descriptor and snapshot version.
func (t *Table) Descriptor() (*catalog.Table, uint64) { return t.desc, t.snap.Version }

// txn returns the session's SQL transaction, pinned to the table's catalog
// version.
func (t *Table) txn(ctx *sql.Context) (*session.Txn, error) {
	sess, ok := session.FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("backend: the session is not an Augustus session")
	}
	var tx *session.Txn
	if gt := ctx.GetTransaction(); gt != nil {
		tx, _ = gt.(*session.Txn)
	}
	if tx == nil {
		// GMS reads outside any transaction in a few places
		// (information_schema): a transaction for this read alone.
		st, err := sess.StartTransaction(ctx, sql.ReadOnly)
		if err != nil {
			return nil, err
		}
		tx = st.(*session.Txn)
	}
	if err := tx.Pin(t.snap.Version, t.snap.Map); err != nil {
		return nil, err
	}
	return tx, nil
}

// partition is GMS's unit of a scan (never a replica group): a table is one
// partition, read in chunks by the session's scanner.
type partition struct{ key []byte }

func (p partition) Key() []byte { return p.key }

type partitionIter struct {
	parts []sql.Partition
	i     int
}

func (it *partitionIter) Next(*sql.Context) (sql.Partition, error) {
	if it.i >= len(it.parts) {
		return nil, io.EOF
	}
	it.i++
	return it.parts[it.i-1], nil
}

func (it *partitionIter) Close(*sql.Context) error { return nil }

// Partitions implements sql.Table.
func (t *Table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return &partitionIter{parts: []sql.Partition{partition{key: []byte("all")}}}, nil
}

// PartitionRows implements sql.Table: a full scan of the primary index,
// streamed in read-range chunks.
func (t *Table) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	tx, err := t.txn(ctx)
	if err != nil {
		return nil, err
	}
	span := rowenc.IndexSpan(t.desc.ID, rowenc.PrimaryIndexID)
	return &scanIter{t: t, sc: tx.Scan(span.Start, span.End)}, nil
}

// scanIter decodes the rows of a primary-index scan.
type scanIter struct {
	t  *Table
	sc *session.Scanner
}

func (it *scanIter) Next(ctx *sql.Context) (sql.Row, error) {
	kv, ok, err := it.sc.Next(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, io.EOF
	}
	return it.t.info.decodeRow(kv.Key, kv.Value)
}

func (it *scanIter) Close(*sql.Context) error { return nil }

// GetIndexes implements sql.IndexAddressable: PRIMARY (a unique index, so
// an equality on the whole key is a point lookup) and the public secondary
// indexes. A write-only index (being backfilled) is maintained by writers
// but not offered to the planner.
func (t *Table) GetIndexes(*sql.Context) ([]sql.Index, error) {
	var out []sql.Index
	if !t.info.keyless {
		out = append(out, t.primaryIndex())
	}
	for _, ix := range t.info.indexes {
		if ix.desc.State == catalog.IndexPublic {
			out = append(out, t.secondaryIndex(ix))
		}
	}
	return out, nil
}

// PreciseMatch implements sql.IndexAddressable: lookups return exactly the
// rows in their ranges (the iterators filter what the key spans cover
// beyond them), so GMS drops the filter.
func (t *Table) PreciseMatch() bool { return true }

// IndexedAccess implements sql.IndexAddressable.
func (t *Table) IndexedAccess(_ *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	if _, ok := lookup.Index.(*index); !ok {
		return nil
	}
	return &IndexedTable{Table: t, lookup: lookup}
}

// columnNames lists a table's columns, lower-cased, for messages.
func (t *Table) columnNames() string {
	var names []string
	for _, c := range t.info.schema {
		names = append(names, strings.ToLower(c.Name))
	}
	return strings.Join(names, ", ")
}

// IsTemporary implements sql.TemporaryTable: no table is temporary. (GMS's
// read-only check dereferences every written table as one, gms-notes §9.)
func (t *Table) IsTemporary() bool { return false }
