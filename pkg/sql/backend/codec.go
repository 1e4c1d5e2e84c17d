package backend

import (
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
)

// tableInfo is what the backend derives from a table descriptor to turn
// rows into keys and values and back. Descriptors are immutable, so it is
// computed once per descriptor (Provider.info).
type tableInfo struct {
	desc   *catalog.Table
	schema sql.Schema // GMS's schema: columns in table order
	pkOrds []int      // schema positions of the primary key, in key order
	// keyless tables (no PRIMARY KEY) key rows by a hash of the row and a
	// random suffix (keyless.go).
	keyless bool
	// valueCols are the columns a row's value holds: every column but the
	// primary key's reversible ones, by id.
	valueCols []rowenc.ValueColumn
	// fromKey[i] says the primary key column in key position i is decoded
	// from the key.
	fromKey []bool
	missing []any // by schema position: the value of a column a row lacks
	indexes []*indexInfo
	autoInc int // schema position of the AUTO_INCREMENT column, or -1
}

// indexInfo is a secondary index.
type indexInfo struct {
	desc   *catalog.Index
	ords   []int
	types  []sql.Type
	prefix []byte
}

func newTableInfo(db string, t *catalog.Table) (*tableInfo, error) {
	ti := &tableInfo{desc: t, autoInc: -1, keyless: len(t.PK) == 0}
	pos := map[uint32]int{}
	for i := range t.Columns {
		c := &t.Columns[i]
		pos[c.ID] = i
		col := &sql.Column{
			Name: c.Name, Type: c.Type(), Nullable: c.Nullable, Source: t.Name, DatabaseSource: db,
			AutoIncrement: c.AutoIncrement, Comment: c.Comment,
		}
		if c.Default != "" {
			col.Default = sql.NewUnresolvedColumnDefaultValue(c.Default)
		}
		if c.OnUpdate != "" {
			col.OnUpdate = sql.NewUnresolvedColumnDefaultValue(c.OnUpdate)
		}
		if c.AutoIncrement {
			ti.autoInc = i
			col.Extra = "auto_increment"
		}
		ti.schema = append(ti.schema, col)
		if c.MissingSet {
			v, err := rowenc.DecodeValueOf(c.Type(), c.Missing)
			if err != nil {
				return nil, fmt.Errorf("backend: table %s column %s: missing value: %w", t.Name, c.Name, err)
			}
			ti.missing = append(ti.missing, v)
		} else {
			ti.missing = append(ti.missing, nil)
		}
	}
	inKey := map[uint32]bool{}
	for _, id := range t.PK {
		p := pos[id]
		ti.pkOrds = append(ti.pkOrds, p)
		ti.schema[p].PrimaryKey = true
		dec := rowenc.KeyDecodable(ti.schema[p].Type)
		ti.fromKey = append(ti.fromKey, dec)
		inKey[id] = dec
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if !inKey[c.ID] {
			ti.valueCols = append(ti.valueCols, rowenc.ValueColumn{ID: c.ID, Type: c.Type(), Pos: pos[c.ID]})
		}
	}
	sortValueCols(ti.valueCols)
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		ii := &indexInfo{desc: ix, prefix: rowenc.IndexPrefix(t.ID, ix.ID)}
		for _, id := range ix.Columns {
			ii.ords = append(ii.ords, pos[id])
			ii.types = append(ii.types, ti.schema[pos[id]].Type)
		}
		ti.indexes = append(ti.indexes, ii)
	}
	return ti, nil
}

func sortValueCols(cs []rowenc.ValueColumn) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].ID < cs[j-1].ID; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// pkSuffix encodes the primary key columns of row (what follows the index
// prefix in the row's key). A keyless table has no key columns: its rows'
// keys are built by keylessKey.
func (ti *tableInfo) pkSuffix(row sql.Row) ([]byte, error) {
	var b []byte
	var err error
	for _, p := range ti.pkOrds {
		if b, err = rowenc.AppendKey(b, ti.schema[p].Type, row[p]); err != nil {
			return nil, ti.keyErr(p, err)
		}
	}
	return b, nil
}

func (ti *tableInfo) keyErr(p int, err error) error {
	return fmt.Errorf("column %s: %w", ti.schema[p].Name, err)
}

// rowKey returns the primary index key of a row with the given pk suffix.
func (ti *tableInfo) rowKey(suffix []byte) []byte {
	return append(rowenc.IndexPrefix(ti.desc.ID, rowenc.PrimaryIndexID), suffix...)
}

// newRowKey returns the key a new row is stored under.
func (ti *tableInfo) newRowKey(row sql.Row) ([]byte, error) {
	if ti.keyless {
		h, err := ti.keylessHash(row)
		if err != nil {
			return nil, err
		}
		var r [8]byte
		_, _ = rand.Read(r[:])
		return ti.rowKey(append(h, r[:]...)), nil
	}
	s, err := ti.pkSuffix(row)
	if err != nil {
		return nil, err
	}
	return ti.rowKey(s), nil
}

// encodeValue encodes a row's value.
func (ti *tableInfo) encodeValue(row sql.Row) ([]byte, error) {
	return rowenc.AppendValue(nil, ti.valueCols, row)
}

// decodeRow decodes a row from its primary key and value.
func (ti *tableInfo) decodeRow(key, value []byte) (sql.Row, error) {
	row := make(sql.Row, len(ti.schema))
	rest := key[len(rowenc.IndexPrefix(ti.desc.ID, rowenc.PrimaryIndexID)):]
	var err error
	for i, p := range ti.pkOrds {
		t := ti.schema[p].Type
		if ti.fromKey[i] {
			row[p], rest, err = rowenc.DecodeKey(t, rest)
		} else {
			rest, err = rowenc.SkipKey(t, rest)
		}
		if err != nil {
			return nil, fmt.Errorf("backend: table %s: key: %w", ti.desc.Name, err)
		}
	}
	present := make([]bool, len(ti.valueCols))
	if err := rowenc.DecodeValue(value, ti.valueCols, row, present); err != nil {
		return nil, fmt.Errorf("backend: table %s: row: %w", ti.desc.Name, err)
	}
	for i, ok := range present {
		if !ok {
			p := ti.valueCols[i].Pos
			row[p] = ti.missing[p]
		}
	}
	return row, nil
}

// indexEntry returns the key and value of a row's entry in a secondary
// index: unique indexes map their columns to the primary key (with the
// primary key appended to the key when a column is NULL, since MySQL allows
// many NULLs), the others map columns and primary key to nothing.
func (ti *tableInfo) indexEntry(ix *indexInfo, row sql.Row, pkSuffix []byte) (key, value []byte, err error) {
	key = append([]byte(nil), ix.prefix...)
	hasNull := false
	for i, p := range ix.ords {
		hasNull = hasNull || row[p] == nil
		if key, err = rowenc.AppendKey(key, ix.types[i], row[p]); err != nil {
			return nil, nil, ti.keyErr(p, err)
		}
	}
	if ix.desc.Unique && !hasNull {
		return key, pkSuffix, nil
	}
	key = append(key, pkSuffix...)
	if ix.desc.Unique {
		return key, pkSuffix, nil
	}
	return key, []byte{}, nil
}

// pkFromEntry returns the primary key suffix of an index entry.
func (ti *tableInfo) pkFromEntry(ix *indexInfo, key, value []byte) ([]byte, error) {
	if ix.desc.Unique {
		return value, nil
	}
	rest := key[len(ix.prefix):]
	var err error
	for _, t := range ix.types {
		if rest, err = rowenc.SkipKey(t, rest); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// describe formats the values of columns ords of row as MySQL's
// duplicate-entry message does ('1-abc').
func describe(row sql.Row, ords []int) string {
	parts := make([]string, len(ords))
	for i, p := range ords {
		if row[p] == nil {
			parts[i] = "NULL"
			continue
		}
		switch v := row[p].(type) {
		case []byte:
			parts[i] = string(v)
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(parts, "-")
}
