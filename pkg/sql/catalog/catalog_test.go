package catalog

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// fakeMeta is the metadata keyspace of a cluster reduced to what the
// catalog uses: metadata reads, read-ranges and updates, the version every
// metadata transaction increments (M2), and the pinned-version compare
// (coord.Options.PinVersion). Unpinned transactions run at the current
// version, as the client library makes them after a refresh (K1).
type fakeMeta struct {
	mu      sync.Mutex
	version uint64
	kv      map[string][]byte
	txns    int
}

func newFakeMeta(t *testing.T, groups int) *fakeMeta {
	var gs []bft.GroupID
	for g := range groups {
		gs = append(gs, bft.GroupID(g))
	}
	m, err := oracle.New([]oracle.Range{{Start: nil, Groups: gs[:1]}})
	require.NoError(t, err)
	if groups > 1 {
		m, err = Assign(m, []byte{0x80}, nil, gs[1:2])
		require.NoError(t, err)
	}
	return &fakeMeta{kv: map[string][]byte{string(txn.MetaPartitionsKey): m.Encode()}}
}

func (f *fakeMeta) Do(_ context.Context, src coord.OpSource, opts coord.Options) (*coord.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txns++
	if opts.PinVersion && opts.MetadataVersion != f.version {
		return &coord.Result{Abort: &txn.AbortError{Reason: txn.ReasonStaleMetadata, Version: f.version}},
			&coord.AbortedError{Cause: &txn.AbortError{Reason: txn.ReasonStaleMetadata, Version: f.version}}
	}
	ops := src.Ops()
	res := &coord.Result{Committed: true, Ops: make([]coord.OpResult, len(ops))}
	writes := false
	for i, op := range ops {
		if !op.Meta {
			panic("data operation in a catalog test")
		}
		switch op.Kind {
		case txn.OpRead:
			if bytes.Equal(op.Key, txn.MetaVersionKey) {
				res.Ops[i] = coord.OpResult{Present: true, Value: txn.EncodeVersion(f.version)}
				continue
			}
			v, ok := f.kv[string(op.Key)]
			res.Ops[i] = coord.OpResult{Present: ok, Value: v}
		case txn.OpReadRange:
			var keys []string
			for k := range f.kv {
				if k >= string(op.Key) && (op.End == nil || k < string(op.End)) {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			r := coord.OpResult{}
			for _, k := range keys {
				if len(r.Entries) == int(op.Limit) {
					r.More = true
					r.Next = append([]byte(r.Entries[len(r.Entries)-1].Key), 0)
					break
				}
				r.Entries = append(r.Entries, txn.KV{Key: []byte(k), Value: f.kv[k]})
			}
			res.Ops[i] = r
		case txn.OpInsert:
			if _, ok := f.kv[string(op.Key)]; ok {
				return nil, &coord.AbortedError{Cause: &txn.AbortError{Reason: txn.ReasonKeyExists, Op: i}}
			}
		case txn.OpWrite, txn.OpDelete:
			if _, ok := f.kv[string(op.Key)]; !ok {
				return nil, &coord.AbortedError{Cause: &txn.AbortError{Reason: txn.ReasonNotFound, Op: i}}
			}
		}
		writes = writes || op.Kind.IsUpdate()
	}
	for _, op := range ops {
		switch op.Kind {
		case txn.OpInsert, txn.OpWrite:
			f.kv[string(op.Key)] = op.Value
		case txn.OpDelete:
			delete(f.kv, string(op.Key))
		}
	}
	if writes {
		f.version++
	}
	return res, nil
}

func testTable(t *testing.T, c *Change, db uint32, name string) *Table {
	aici := types.MustCreateString(sqltypes.VarChar, 64, sql.Collation_utf8mb4_0900_ai_ci)
	tb := &Table{ID: c.AllocID(), DB: db, Name: name, NextColumnID: 1, NextIndexID: 2}
	for _, col := range []struct {
		name string
		typ  sql.Type
	}{
		{"id", types.Int64}, {"name", aici}, {"price", types.MustCreateDecimalType(12, 2)},
		{"at", types.DatetimeMaxPrecision}, {"doc", types.JSON}, {"kind", types.MustCreateEnumType([]string{"a", "b"}, sql.Collation_Default)},
		{"blob", types.Blob}, {"u", types.Uint32},
	} {
		cl := Column{ID: tb.NextColumnID, Name: col.name, Nullable: col.name != "id"}
		cl.SetType(col.typ)
		tb.Columns = append(tb.Columns, cl)
		tb.NextColumnID++
	}
	tb.Columns[2].Default = "0.00"
	tb.PK = []uint32{1}
	tb.Indexes = []Index{{ID: tb.NextIndexID, Name: "by_name", Columns: []uint32{2}, Unique: true}}
	tb.NextIndexID++
	tb.Placement = Placement{Kind: PlaceGroup, Groups: []bft.GroupID{c.NextGroup()}}
	return tb
}

// TestTableDescriptorsRoundTrip writes a table through a change, reads the
// catalog back and finds the same descriptor, its column types equal to
// the originals.
func TestTableDescriptorsRoundTrip(t *testing.T) {
	ctx := context.Background()
	f := newFakeMeta(t, 2)
	m, err := NewManager(ctx, f)
	require.NoError(t, err)
	require.Zero(t, m.Current().Version)

	c := m.Current().Edit()
	db := &Database{ID: c.AllocID(), Name: "Shop"}
	c.PutDatabase(db)
	tb := testTable(t, c, db.ID, "Items")
	require.NoError(t, c.PutTable(tb))
	pm, err := PlaceTable(ctx, c.Next().Map, tb)
	require.NoError(t, err)
	c.SetMap(pm)
	s, err := m.Commit(ctx, c)
	require.NoError(t, err)
	require.Equal(t, uint64(1), s.Version, "one metadata transaction, one version (M2)")

	m2, err := NewManager(ctx, f)
	require.NoError(t, err)
	s2 := m2.Current()
	require.Equal(t, uint64(1), s2.Version)
	d, ok := s2.Database("shop")
	require.True(t, ok, "names are case-insensitive")
	got, ok := s2.Table(d.ID, "ITEMS")
	require.True(t, ok)
	require.Equal(t, tb.Name, got.Name)
	require.Len(t, got.Columns, len(tb.Columns))
	for i := range tb.Columns {
		require.True(t, tb.Columns[i].Type().Equals(got.Columns[i].Type()), "%s: %s vs %s", tb.Columns[i].Name, tb.Columns[i].Type(), got.Columns[i].Type())
		require.Equal(t, tb.Columns[i].TypeStr, got.Columns[i].TypeStr)
	}
	require.Equal(t, sql.Collation_utf8mb4_0900_ai_ci, got.Columns[1].Type().(sql.StringType).Collation(), got.Columns[1].TypeStr)
	require.Equal(t, tb.Indexes, got.Indexes)
	require.Equal(t, "0.00", got.Columns[2].Default)
	require.True(t, s2.Map.Equal(s.Map))
	// The table's span is in its group.
	span := rowenc.TableSpan(tb.ID)
	require.Equal(t, tb.Placement.Groups[0], s2.Map.KeyGroup(span.Start))
	require.Equal(t, tb.Placement.Groups[0], s2.Map.KeyGroup(rowenc.AutoIncrementKey(tb.ID)))
}

// txn.md M2 for the catalog: a change built on a snapshot another front-end
// has moved past aborts (ErrStale) instead of overwriting it; after a
// reload the same change commits.
func TestChangeOnStaleSnapshotAbortsAndReloadSees(t *testing.T) {
	ctx := context.Background()
	f := newFakeMeta(t, 2)
	a, err := NewManager(ctx, f)
	require.NoError(t, err)
	b, err := NewManager(ctx, f)
	require.NoError(t, err)

	ca := a.Current().Edit()
	ca.PutDatabase(&Database{ID: ca.AllocID(), Name: "x"})
	_, err = a.Commit(ctx, ca)
	require.NoError(t, err)

	cb := b.Current().Edit()
	cb.PutDatabase(&Database{ID: cb.AllocID(), Name: "y"})
	_, err = b.Commit(ctx, cb)
	require.ErrorIs(t, err, ErrStale)
	_, ok := b.Current().Database("x")
	require.False(t, ok)

	s, err := b.ReloadPast(ctx, b.Current().Version)
	require.NoError(t, err)
	_, ok = s.Database("x")
	require.True(t, ok, "the reload sees the other front-end's change")
	cb = s.Edit()
	cb.PutDatabase(&Database{ID: cb.AllocID(), Name: "y"})
	s, err = b.Commit(ctx, cb)
	require.NoError(t, err)
	require.Equal(t, uint64(2), s.Version)
	x, _ := s.Database("x")
	y, _ := s.Database("y")
	require.NotEqual(t, x.ID, y.ID, "ids are never handed out twice")

	// Refresh is one read when nothing moved, and catches up when it did.
	before := f.txns
	_, err = b.Refresh(ctx)
	require.NoError(t, err)
	require.Equal(t, before+1, f.txns)
	s, err = a.Refresh(ctx)
	require.NoError(t, err)
	_, ok = s.Database("y")
	require.True(t, ok)
}

func TestChangeOpsInsertNewKeysWriteExistingDeleteDropped(t *testing.T) {
	ctx := context.Background()
	f := newFakeMeta(t, 1)
	m, err := NewManager(ctx, f)
	require.NoError(t, err)
	c := m.Current().Edit()
	db := &Database{ID: c.AllocID(), Name: "d"}
	c.PutDatabase(db)
	for _, op := range c.Ops() {
		require.Equal(t, txn.OpInsert, op.Kind, "%s", op.Key)
		require.True(t, op.Meta)
	}
	s, err := m.Commit(ctx, c)
	require.NoError(t, err)

	c = s.Edit()
	tb := testTable(t, c, db.ID, "t")
	require.NoError(t, c.PutTable(tb))
	c.DeleteDatabase(db.ID)
	kinds := map[string]txn.OpKind{}
	for _, op := range c.Ops() {
		kinds[string(op.Key)] = op.Kind
	}
	require.Equal(t, txn.OpWrite, kinds[string(keyRoot)])
	require.Equal(t, txn.OpInsert, kinds[string(idKey(prefixTbl, tb.ID))])
	require.Equal(t, txn.OpDelete, kinds[string(idKey(prefixDB, db.ID))])

	// A key created and dropped within one change sends nothing.
	c = s.Edit()
	tb = testTable(t, c, db.ID, "t")
	require.NoError(t, c.PutTable(tb))
	c.DeleteTable(tb.ID)
	for _, op := range c.Ops() {
		require.NotEqual(t, string(idKey(prefixTbl, tb.ID)), string(op.Key))
	}
}

func TestAssignSplitsAndMergesRanges(t *testing.T) {
	m, err := oracle.New([]oracle.Range{{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte{0x80}, Groups: []bft.GroupID{1}}})
	require.NoError(t, err)
	m1, err := Assign(m, []byte{0xF5, 1}, []byte{0xF5, 2}, []bft.GroupID{0})
	require.NoError(t, err)
	require.Equal(t, bft.GroupID(0), m1.KeyGroup([]byte{0xF5, 1, 9}))
	require.Equal(t, bft.GroupID(1), m1.KeyGroup([]byte{0xF5, 2}))
	require.Equal(t, bft.GroupID(1), m1.KeyGroup([]byte{0xF5, 0, 0xFF}))
	require.Equal(t, bft.GroupID(0), m1.KeyGroup([]byte{0x10}))
	moved := oracle.Moved(m, m1)
	require.Len(t, moved, 1, "only the assigned span moves")
	require.Equal(t, []byte{0xF5, 1}, moved[0].Start)
	require.Equal(t, []byte{0xF5, 2}, moved[0].End)

	// Assigning it back merges the ranges again.
	m2, err := Assign(m1, []byte{0xF5, 1}, []byte{0xF5, 2}, []bft.GroupID{1})
	require.NoError(t, err)
	require.True(t, m2.Equal(m), "%v", m2.Ranges())

	// An unbounded span and a hashed one.
	m3, err := Assign(m, []byte{0x40}, nil, []bft.GroupID{0, 1})
	require.NoError(t, err)
	require.Len(t, m3.Ranges(), 2)
	require.Equal(t, []bft.GroupID{0, 1}, m3.Ranges()[1].Groups)
}

func TestRangePlacementSplitsThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	m, err := oracle.New([]oracle.Range{{Start: nil, Groups: []bft.GroupID{0}}})
	require.NoError(t, err)
	tb := &Table{ID: 7, Name: "r", NextColumnID: 2, NextIndexID: 2, PK: []uint32{1},
		Placement: Placement{Kind: PlaceRange, Groups: []bft.GroupID{1, 0, 1}, Bounds: []string{"100", "200"}}}
	col := Column{ID: 1, Name: "id"}
	col.SetType(types.Int32)
	tb.Columns = []Column{col}
	require.NoError(t, tb.Validate())
	pm, err := PlaceTable(ctx, m, tb)
	require.NoError(t, err)
	key := func(v int32) []byte {
		k, err := rowenc.AppendKey(rowenc.IndexPrefix(7, rowenc.PrimaryIndexID), types.Int32, v)
		require.NoError(t, err)
		return k
	}
	require.Equal(t, bft.GroupID(1), pm.KeyGroup(key(-5)))
	require.Equal(t, bft.GroupID(1), pm.KeyGroup(key(99)))
	require.Equal(t, bft.GroupID(0), pm.KeyGroup(key(100)))
	require.Equal(t, bft.GroupID(0), pm.KeyGroup(key(199)))
	require.Equal(t, bft.GroupID(1), pm.KeyGroup(key(200)))
	require.Equal(t, bft.GroupID(1), pm.KeyGroup(rowenc.AutoIncrementKey(7)))
	require.Equal(t, bft.GroupID(0), pm.KeyGroup(rowenc.TableSpan(8).Start), "outside the table: unchanged")

	tb.Placement.Bounds = []string{"200", "100"}
	_, err = PlaceTable(ctx, m, tb)
	require.ErrorContains(t, err, "must increase")
}
