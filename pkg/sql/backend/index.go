package backend

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
)

// index is a GMS index: PRIMARY (ix nil) or a secondary index. GMS plans an
// IndexedTableAccess on it when a filter constrains its columns; PRIMARY is
// reported unique, so equality on the whole key is a point lookup
// (gms-notes §3).
type index struct {
	t  *Table
	ix *indexInfo // nil: PRIMARY
}

var (
	_ sql.Index         = (*index)(nil)
	_ sql.OrderedIndex  = (*index)(nil)
	_ sql.ExtendedIndex = (*index)(nil)
)

func (t *Table) primaryIndex() *index                { return &index{t: t} }
func (t *Table) secondaryIndex(ix *indexInfo) *index { return &index{t: t, ix: ix} }

// ID implements sql.Index.
func (i *index) ID() string {
	if i.ix == nil {
		return "PRIMARY"
	}
	return i.ix.desc.Name
}

// Database implements sql.Index.
func (i *index) Database() string { return i.t.db }

// Table implements sql.Index.
func (i *index) Table() string { return i.t.desc.Name }

func (i *index) ords() []int {
	if i.ix == nil {
		return i.t.info.pkOrds
	}
	return i.ix.ords
}

func (i *index) expr(ord int) string {
	c := i.t.info.schema[ord]
	return expression.NewGetFieldWithTable(ord, 0, c.Type, i.t.db, i.t.desc.Name, c.Name, c.Nullable).String()
}

// Expressions implements sql.Index: "table.column" as GMS's GetField
// prints it.
func (i *index) Expressions() []string {
	var out []string
	for _, o := range i.ords() {
		out = append(out, i.expr(o))
	}
	return out
}

// ExtendedExpressions implements sql.ExtendedIndex: the columns, then the
// primary key columns the index does not hold.
func (i *index) ExtendedExpressions() []string {
	out := i.Expressions()
	for _, o := range i.extraPK() {
		out = append(out, i.expr(o))
	}
	return out
}

func (i *index) extraPK() []int {
	if i.ix == nil {
		return nil
	}
	in := map[int]bool{}
	for _, o := range i.ix.ords {
		in[o] = true
	}
	var out []int
	for _, o := range i.t.info.pkOrds {
		if !in[o] {
			out = append(out, o)
		}
	}
	return out
}

// ColumnExpressionTypes implements sql.Index.
func (i *index) ColumnExpressionTypes() []sql.ColumnExpressionType {
	var out []sql.ColumnExpressionType
	for _, o := range i.ords() {
		out = append(out, sql.ColumnExpressionType{Expression: i.expr(o), Type: i.t.info.schema[o].Type})
	}
	return out
}

// ExtendedColumnExpressionTypes implements sql.ExtendedIndex.
func (i *index) ExtendedColumnExpressionTypes() []sql.ColumnExpressionType {
	out := i.ColumnExpressionTypes()
	for _, o := range i.extraPK() {
		out = append(out, sql.ColumnExpressionType{Expression: i.expr(o), Type: i.t.info.schema[o].Type})
	}
	return out
}

// IsUnique implements sql.Index.
func (i *index) IsUnique() bool { return i.ix == nil || i.ix.desc.Unique }

// IsSpatial implements sql.Index.
func (i *index) IsSpatial() bool { return false }

// IsFullText implements sql.Index.
func (i *index) IsFullText() bool { return false }

// IsVector implements sql.Index.
func (i *index) IsVector() bool { return false }

// Comment implements sql.Index.
func (i *index) Comment() string {
	if i.ix == nil {
		return ""
	}
	return i.ix.desc.Comment
}

// IndexType implements sql.Index.
func (i *index) IndexType() string { return "BTREE" }

// IsGenerated implements sql.Index.
func (i *index) IsGenerated() bool { return false }

// CanSupport implements sql.Index: any range over the index's columns.
func (i *index) CanSupport(*sql.Context, ...sql.Range) bool { return true }

// CanSupportOrderBy implements sql.Index (vector indexes only).
func (i *index) CanSupportOrderBy(sql.Expression) bool { return false }

// PrefixLengths implements sql.Index: no prefix indexes.
func (i *index) PrefixLengths() []uint16 { return nil }

// Order implements sql.OrderedIndex: entries come in ascending key order,
// which is the columns' order (rowenc), NULL first.
func (i *index) Order() sql.IndexOrder { return sql.IndexOrderAsc }

// Reversible implements sql.OrderedIndex: read-ranges run forward only.
func (i *index) Reversible() bool { return false }

func (i *index) String() string { return fmt.Sprintf("%s.%s", i.t.desc.Name, i.ID()) }
