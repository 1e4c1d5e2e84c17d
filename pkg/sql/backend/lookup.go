package backend

import (
	"bytes"
	"context"
	"io"
	"sort"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
)

// IndexedTable is a table read through an index lookup (GMS's
// IndexedTableAccess): primary-key equalities and IN lists become `read`s,
// ranges and secondary indexes `read-range`s over the index's key span.
type IndexedTable struct {
	*Table
	lookup sql.IndexLookup
}

var _ sql.IndexedTable = (*IndexedTable)(nil)

// LookupPartitions implements sql.IndexedTable.
func (t *IndexedTable) LookupPartitions(*sql.Context, sql.IndexLookup) (sql.PartitionIter, error) {
	return &partitionIter{parts: []sql.Partition{partition{key: []byte("lookup")}}}, nil
}

// PartitionRows implements sql.Table.
func (t *IndexedTable) PartitionRows(ctx *sql.Context, _ sql.Partition) (sql.RowIter, error) {
	return t.Table.lookupRows(ctx, t.lookup)
}

// Partitions implements sql.Table.
func (t *IndexedTable) Partitions(ctx *sql.Context) (sql.PartitionIter, error) {
	return t.LookupPartitions(ctx, t.lookup)
}

// span is the plan for one range of a lookup: a single key (point), or a
// span of keys to scan and filter against the range.
type span struct {
	point      []byte
	start, end []byte
	rng        sql.MySQLRange
}

// lookupRows runs a lookup. Ranges are visited in key order; consecutive
// point ranges are read in one short transaction.
func (t *Table) lookupRows(ctx *sql.Context, lookup sql.IndexLookup) (sql.RowIter, error) {
	if lookup.IsEmptyRange {
		return sql.RowsToRowIter(), nil
	}
	idx, ok := lookup.Index.(*index)
	if !ok {
		return nil, sql.ErrIndexNotFound.New(lookup.Index.ID())
	}
	tx, err := t.txn(ctx)
	if err != nil {
		return nil, err
	}
	ranges, ok := lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok {
		return nil, sql.ErrUnsupportedFeature.New("non-MySQL ranges")
	}
	var spans []span
	for _, r := range ranges {
		sp, empty, err := idx.span(ctx, r)
		if err != nil {
			return nil, err
		}
		if !empty {
			spans = append(spans, sp)
		}
	}
	sort.SliceStable(spans, func(a, b int) bool { return bytes.Compare(spans[a].first(), spans[b].first()) < 0 })
	it := &lookupIter{t: t, idx: idx, tx: tx, spans: spans}
	if lookup.IsReverse {
		return reverse(ctx, it)
	}
	return it, nil
}

func (s *span) first() []byte {
	if s.point != nil {
		return s.point
	}
	return s.start
}

// span plans one range: the key prefix of the columns fixed to one value,
// then the bounds of the first column that is not, and the columns after it
// left to the filter. A range that fixes every column of PRIMARY, or of a
// unique index to non-NULL values, is one key.
func (i *index) span(ctx *sql.Context, r sql.MySQLRange) (span, bool, error) {
	ords := i.ords()
	prefix := rowenc.IndexPrefix(i.t.desc.ID, rowenc.PrimaryIndexID)
	if i.ix != nil {
		prefix = i.ix.prefix
	}
	key := append([]byte(nil), prefix...)
	sp := span{rng: r}
	nonNull := true
	for c, o := range ords {
		if c >= len(r) {
			break
		}
		typ := i.t.info.schema[o].Type
		ce := r[c]
		if empty, err := ce.IsEmpty(); err != nil {
			return sp, false, err
		} else if empty {
			return sp, true, nil
		}
		if v, ok := pointValue(ctx, ce, typ); ok {
			nonNull = nonNull && v != nil
			var err error
			if key, err = rowenc.AppendKey(key, typ, v); err != nil {
				return sp, false, err
			}
			if c == len(ords)-1 && i.IsUnique() && nonNull {
				sp.point = key
				return sp, false, nil
			}
			continue
		}
		sp.start = lowerKey(ctx, key, ce, typ)
		sp.end = upperKey(ctx, key, ce, typ)
		return sp, false, nil
	}
	sp.start, sp.end = key, rowenc.PrefixEnd(key)
	return sp, false, nil
}

// pointValue returns the single value a column range holds ([v, v], or
// only NULL), converted to the column's type exactly.
func pointValue(ctx *sql.Context, ce sql.MySQLRangeColumnExpr, typ sql.Type) (any, bool) {
	switch lo := ce.LowerBound.(type) {
	case sql.BelowNull:
		if _, ok := ce.UpperBound.(sql.AboveNull); ok {
			return nil, true
		}
	case sql.Below:
		hi, ok := ce.UpperBound.(sql.Above)
		if !ok {
			return nil, false
		}
		if c, err := ce.Typ.Compare(ctx, lo.Key, hi.Key); err != nil || c != 0 {
			return nil, false
		}
		return exactly(ctx, lo.Key, typ, ce.Typ)
	}
	return nil, false
}

// exactly converts a range key to the column's type, if it converts to an
// equal value (an INT column and 1.5 do not: the span is then left open on
// that side and the filter decides).
func exactly(ctx *sql.Context, v any, typ, rangeTyp sql.Type) (any, bool) {
	if v == nil {
		return nil, false
	}
	c, inRange, err := typ.Convert(ctx, v)
	if err != nil || inRange != sql.InRange || c == nil {
		return nil, false
	}
	if cmp, err := rangeTyp.Compare(ctx, v, c); err != nil || cmp != 0 {
		return nil, false
	}
	return c, true
}

// lowerKey is the first key a column range's lower bound admits under
// prefix; upperKey the key past the last.
func lowerKey(ctx *sql.Context, prefix []byte, ce sql.MySQLRangeColumnExpr, typ sql.Type) []byte {
	switch lo := ce.LowerBound.(type) {
	case sql.AboveNull:
		return append(bytes.Clone(prefix), 0x01) // after the NULL marker
	case sql.Below:
		if v, ok := exactly(ctx, lo.Key, typ, ce.Typ); ok {
			if k, err := rowenc.AppendKey(bytes.Clone(prefix), typ, v); err == nil {
				return k
			}
		}
	case sql.Above:
		if v, ok := exactly(ctx, lo.Key, typ, ce.Typ); ok {
			if k, err := rowenc.AppendKey(bytes.Clone(prefix), typ, v); err == nil {
				return rowenc.PrefixEnd(k)
			}
		}
		return append(bytes.Clone(prefix), 0x01)
	}
	return bytes.Clone(prefix)
}

func upperKey(ctx *sql.Context, prefix []byte, ce sql.MySQLRangeColumnExpr, typ sql.Type) []byte {
	switch hi := ce.UpperBound.(type) {
	case sql.BelowNull:
		return bytes.Clone(prefix)
	case sql.AboveNull:
		return append(bytes.Clone(prefix), 0x01)
	case sql.Below:
		if v, ok := exactly(ctx, hi.Key, typ, ce.Typ); ok {
			if k, err := rowenc.AppendKey(bytes.Clone(prefix), typ, v); err == nil {
				return k
			}
		}
	case sql.Above:
		if v, ok := exactly(ctx, hi.Key, typ, ce.Typ); ok {
			if k, err := rowenc.AppendKey(bytes.Clone(prefix), typ, v); err == nil {
				return rowenc.PrefixEnd(k)
			}
		}
	}
	return rowenc.PrefixEnd(prefix)
}

// contains reports whether the values of a row's index columns lie in a
// range: below the upper cut and above the lower one, NULL below every
// value.
func contains(ctx context.Context, r sql.MySQLRange, vals []any) bool {
	for c, ce := range r {
		if c >= len(vals) {
			break
		}
		if !cutBelow(ctx, ce.LowerBound, vals[c], ce.Typ) || cutBelow(ctx, ce.UpperBound, vals[c], ce.Typ) {
			return false
		}
	}
	return true
}

// cutBelow reports whether a cut lies below the value v.
func cutBelow(ctx context.Context, cut sql.MySQLRangeCut, v any, typ sql.Type) bool {
	switch c := cut.(type) {
	case sql.BelowNull:
		return true
	case sql.AboveNull:
		return v != nil
	case sql.Below:
		if v == nil {
			return false
		}
		cmp, err := typ.Compare(ctx, v, c.Key)
		return err == nil && cmp >= 0
	case sql.Above:
		if v == nil {
			return false
		}
		cmp, err := typ.Compare(ctx, v, c.Key)
		return err == nil && cmp > 0
	}
	return false // AboveAll
}

// lookupIter produces a lookup's rows span by span.
type lookupIter struct {
	t     *Table
	idx   *index
	tx    *session.Txn
	spans []span
	i     int
	out   []sql.Row
	o     int
	sc    *session.Scanner
	cur   *span
}

const fetchBatch = 256

func (it *lookupIter) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		if it.o < len(it.out) {
			it.o++
			return it.out[it.o-1], nil
		}
		it.out, it.o = it.out[:0], 0
		if it.sc != nil {
			if err := it.fillScan(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if it.i >= len(it.spans) {
			return nil, io.EOF
		}
		if it.spans[it.i].point != nil {
			if err := it.fillPoints(ctx); err != nil {
				return nil, err
			}
			continue
		}
		it.cur = &it.spans[it.i]
		it.i++
		it.sc = it.tx.Scan(it.cur.start, it.cur.end)
	}
}

func (it *lookupIter) Close(*sql.Context) error { return nil }

// fillPoints reads the run of point spans starting at it.i: one short
// transaction for all of them (and, for a secondary index, one more for the
// rows they name).
func (it *lookupIter) fillPoints(ctx *sql.Context) error {
	var keys [][]byte
	j := it.i
	for j < len(it.spans) && it.spans[j].point != nil {
		keys = append(keys, it.spans[j].point)
		j++
	}
	it.i = j
	found, err := it.tx.GetMany(ctx, keys)
	if err != nil {
		return err
	}
	if it.idx.ix == nil {
		for k, f := range found {
			if f.Present {
				row, err := it.t.info.decodeRow(keys[k], f.Value)
				if err != nil {
					return err
				}
				it.out = append(it.out, row)
			}
		}
		return nil
	}
	var pks [][]byte
	for _, f := range found {
		if f.Present {
			pks = append(pks, f.Value)
		}
	}
	return it.fetchRows(ctx, pks, nil)
}

// fetchRows reads the rows with primary key suffixes pks (one short
// transaction) and keeps those inside rng (nil: all).
func (it *lookupIter) fetchRows(ctx *sql.Context, pks [][]byte, rng sql.MySQLRange) error {
	if len(pks) == 0 {
		return nil
	}
	keys := make([][]byte, len(pks))
	for i, s := range pks {
		keys[i] = it.t.info.rowKey(s)
	}
	found, err := it.tx.GetMany(ctx, keys)
	if err != nil {
		return err
	}
	for k, f := range found {
		if !f.Present {
			continue // the entry and its row are guarded at commit
		}
		row, err := it.t.info.decodeRow(keys[k], f.Value)
		if err != nil {
			return err
		}
		if rng == nil || it.inRange(ctx, row, rng) {
			it.out = append(it.out, row)
		}
	}
	return nil
}

func (it *lookupIter) inRange(ctx *sql.Context, row sql.Row, rng sql.MySQLRange) bool {
	ords := it.idx.ords()
	vals := make([]any, len(ords))
	for i, o := range ords {
		vals[i] = row[o]
	}
	return contains(ctx, rng, vals)
}

// fillScan takes the next batch of the current span's scan.
func (it *lookupIter) fillScan(ctx *sql.Context) error {
	var pks [][]byte
	for len(it.out) < fetchBatch && len(pks) < fetchBatch {
		kv, ok, err := it.sc.Next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			it.sc = nil
			break
		}
		if it.idx.ix == nil {
			row, err := it.t.info.decodeRow(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			if it.inRange(ctx, row, it.cur.rng) {
				it.out = append(it.out, row)
			}
			continue
		}
		pk, err := it.t.info.pkFromEntry(it.idx.ix, kv.Key, kv.Value)
		if err != nil {
			return err
		}
		pks = append(pks, pk)
	}
	return it.fetchRows(ctx, pks, it.cur.rng)
}

// reverse materializes a lookup and returns its rows in descending order
// (GMS asks only for reversible indexes, which ours are not; kept for
// safety).
func reverse(ctx *sql.Context, it sql.RowIter) (sql.RowIter, error) {
	var rows []sql.Row
	for {
		r, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return sql.RowsToRowIter(rows...), nil
}
