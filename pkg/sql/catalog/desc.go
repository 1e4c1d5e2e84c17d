package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
)

// ErrCorrupt is wrapped by every descriptor that does not decode.
var ErrCorrupt = errors.New("catalog: corrupt descriptor")

// Database is a database (MySQL schema) and its views.
type Database struct {
	ID        uint32          `json:"id"`
	Name      string          `json:"name"`
	Collation sql.CollationID `json:"collation,omitempty"`
	Views     []View          `json:"views,omitempty"`
}

// View is a view: its SELECT's text and the CREATE VIEW statement (GMS
// parses them when a statement uses the view).
type View struct {
	Name    string `json:"name"`
	Text    string `json:"text"`
	Create  string `json:"create"`
	SQLMode string `json:"sql_mode,omitempty"`
}

// Clone returns a deep copy.
func (d *Database) Clone() *Database {
	c := *d
	c.Views = append([]View(nil), d.Views...)
	return &c
}

// Check is a CHECK constraint: its name and expression text (GMS evaluates
// it on every insert and update).
type Check struct {
	Name     string `json:"name"`
	Expr     string `json:"expr"`
	Enforced bool   `json:"enforced"`
}

// Column is a table column. Its ID is stable for the table's life: row
// values are keyed by it (rowenc), so renaming or reordering columns rewrites
// nothing.
type Column struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	TypeStr  string `json:"type"`
	Nullable bool   `json:"nullable,omitempty"`
	// Default, OnUpdate and Generated are SQL expression texts (GMS resolves
	// them when it analyzes a statement).
	Default       string `json:"default,omitempty"`
	OnUpdate      string `json:"on_update,omitempty"`
	AutoIncrement bool   `json:"auto_increment,omitempty"`
	Comment       string `json:"comment,omitempty"`
	// Missing is the value a row written before the column was added reads
	// for it (ADD COLUMN evaluated the default once, so nothing is
	// rewritten); MissingSet false means NULL. Encoded as rowenc value body.
	Missing    []byte `json:"missing,omitempty"`
	MissingSet bool   `json:"missing_set,omitempty"`

	typ sql.Type
}

// Type returns the column's GMS type.
func (c *Column) Type() sql.Type { return c.typ }

// SetType sets the column's type (and its stored text).
func (c *Column) SetType(t sql.Type) {
	c.typ = t
	c.TypeStr = TypeString(t)
}

// TypeString is the text a type is stored as: its SQL, with the collation
// spelled out for string types so that parsing it back gives the same type.
func TypeString(t sql.Type) string {
	s := t.String()
	if tc, ok := t.(sql.TypeWithCollation); ok && !strings.Contains(strings.ToLower(s), "collate") {
		if c := tc.Collation(); c != sql.Collation_binary {
			s += " COLLATE " + c.Name()
		}
	}
	return s
}

// ParseType parses what TypeString wrote.
func ParseType(s string) (sql.Type, error) {
	t, err := planbuilder.ParseColumnTypeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: type %q: %v", ErrCorrupt, s, err)
	}
	return t, nil
}

// IndexState is where an index is in its life (CockroachDB's schema
// changer): a new index on a table that may hold rows is written by every
// writer but read by nobody while the rows are backfilled, then public.
type IndexState uint8

// Index states.
const (
	IndexPublic    IndexState = 0
	IndexWriteOnly IndexState = 1
)

// String names the state.
func (s IndexState) String() string {
	if s == IndexWriteOnly {
		return "write-only"
	}
	return "public"
}

// Index is a secondary index.
type Index struct {
	ID      uint32     `json:"id"`
	Name    string     `json:"name"`
	Columns []uint32   `json:"columns"`
	Unique  bool       `json:"unique,omitempty"`
	State   IndexState `json:"state,omitempty"`
	Comment string     `json:"comment,omitempty"`
}

// Placement says which groups hold a table's span (DESIGN.md §6).
type Placement struct {
	// Kind is PlaceGroup (the whole table in Groups[0], the default,
	// chosen round-robin at creation), PlaceRange (PARTITION BY RANGE: the
	// primary key's first column split at Bounds, part i in Groups[i]) or
	// PlaceHash (PARTITION BY KEY: every key hashed over Groups).
	Kind   string        `json:"kind"`
	Groups []bft.GroupID `json:"groups"`
	// Bounds are the range parts' exclusive upper bounds as SQL literals of
	// the first primary key column (len(Groups)-1 of them: the last part
	// runs to MAXVALUE); Names the parts' names.
	Bounds []string `json:"bounds,omitempty"`
	Names  []string `json:"names,omitempty"`
}

// Placement kinds.
const (
	PlaceGroup = "group"
	PlaceRange = "range"
	PlaceHash  = "hash"
)

// Table is a table.
type Table struct {
	ID        uint32          `json:"id"`
	DB        uint32          `json:"db"`
	Name      string          `json:"name"`
	Columns   []Column        `json:"columns"`
	PK        []uint32        `json:"pk"`
	Indexes   []Index         `json:"indexes,omitempty"`
	Checks    []Check         `json:"checks,omitempty"`
	Collation sql.CollationID `json:"collation,omitempty"`
	Comment   string          `json:"comment,omitempty"`
	Placement Placement       `json:"placement"`
	// AutoIncrementStart is the first id the AUTO_INCREMENT counter hands
	// out when its key is absent (CREATE TABLE ... AUTO_INCREMENT=n).
	AutoIncrementStart uint64 `json:"auto_increment_start,omitempty"`
	NextColumnID       uint32 `json:"next_column_id"`
	NextIndexID        uint32 `json:"next_index_id"`
}

// Column returns the column with id.
func (t *Table) Column(id uint32) *Column {
	for i := range t.Columns {
		if t.Columns[i].ID == id {
			return &t.Columns[i]
		}
	}
	return nil
}

// ColumnByName returns the column named name (case-insensitive) and its
// position.
func (t *Table) ColumnByName(name string) (*Column, int) {
	for i := range t.Columns {
		if strings.EqualFold(t.Columns[i].Name, name) {
			return &t.Columns[i], i
		}
	}
	return nil, -1
}

// Index returns the secondary index with id.
func (t *Table) Index(id uint32) *Index {
	for i := range t.Indexes {
		if t.Indexes[i].ID == id {
			return &t.Indexes[i]
		}
	}
	return nil
}

// IndexByName returns the secondary index named name (case-insensitive).
func (t *Table) IndexByName(name string) *Index {
	for i := range t.Indexes {
		if strings.EqualFold(t.Indexes[i].Name, name) {
			return &t.Indexes[i]
		}
	}
	return nil
}

// Clone returns a deep copy (descriptors in a Snapshot are immutable; a
// change edits a copy).
func (t *Table) Clone() *Table {
	c := *t
	c.Columns = append([]Column(nil), t.Columns...)
	for i := range c.Columns {
		c.Columns[i].Missing = append([]byte(nil), t.Columns[i].Missing...)
	}
	c.PK = append([]uint32(nil), t.PK...)
	c.Checks = append([]Check(nil), t.Checks...)
	c.Indexes = append([]Index(nil), t.Indexes...)
	for i := range c.Indexes {
		c.Indexes[i].Columns = append([]uint32(nil), t.Indexes[i].Columns...)
	}
	c.Placement.Groups = append([]bft.GroupID(nil), t.Placement.Groups...)
	c.Placement.Bounds = append([]string(nil), t.Placement.Bounds...)
	c.Placement.Names = append([]string(nil), t.Placement.Names...)
	return &c
}

// Validate checks a table descriptor's own consistency: unique column and
// index ids and names, a primary key of existing columns, storable types.
func (t *Table) Validate() error {
	ids := map[uint32]bool{}
	names := map[string]bool{}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.ID == 0 || c.ID >= t.NextColumnID || ids[c.ID] {
			return fmt.Errorf("%w: table %s: column id %d", ErrCorrupt, t.Name, c.ID)
		}
		ids[c.ID] = true
		if n := strings.ToLower(c.Name); names[n] {
			return fmt.Errorf("%w: table %s: duplicate column %s", ErrCorrupt, t.Name, c.Name)
		} else {
			names[n] = true
		}
		if c.typ == nil {
			return fmt.Errorf("%w: table %s: column %s has no type", ErrCorrupt, t.Name, c.Name)
		}
	}
	for _, id := range t.PK {
		c := t.Column(id)
		if c == nil {
			return fmt.Errorf("%w: table %s: primary key column %d", ErrCorrupt, t.Name, id)
		}
		if err := rowenc.Supported(c.typ, true); err != nil {
			return err
		}
	}
	idx := map[uint32]bool{rowenc.AuxIndexID: true, rowenc.PrimaryIndexID: true}
	inames := map[string]bool{"primary": true}
	for _, ix := range t.Indexes {
		if idx[ix.ID] || ix.ID >= t.NextIndexID {
			return fmt.Errorf("%w: table %s: index id %d", ErrCorrupt, t.Name, ix.ID)
		}
		idx[ix.ID] = true
		if n := strings.ToLower(ix.Name); inames[n] {
			return fmt.Errorf("%w: table %s: duplicate index %s", ErrCorrupt, t.Name, ix.Name)
		} else {
			inames[n] = true
		}
		for _, id := range ix.Columns {
			c := t.Column(id)
			if c == nil {
				return fmt.Errorf("%w: table %s: index %s column %d", ErrCorrupt, t.Name, ix.Name, id)
			}
			if err := rowenc.Supported(c.typ, true); err != nil {
				return err
			}
		}
	}
	switch t.Placement.Kind {
	case PlaceGroup:
		if len(t.Placement.Groups) != 1 {
			return fmt.Errorf("%w: table %s: group placement with %d groups", ErrCorrupt, t.Name, len(t.Placement.Groups))
		}
	case PlaceHash:
		if len(t.Placement.Groups) == 0 {
			return fmt.Errorf("%w: table %s: hash placement without groups", ErrCorrupt, t.Name)
		}
	case PlaceRange:
		if len(t.PK) == 0 {
			return fmt.Errorf("catalog: table %s: PARTITION BY RANGE needs a primary key", t.Name)
		}
		if len(t.Placement.Groups) != len(t.Placement.Bounds)+1 {
			return fmt.Errorf("%w: table %s: %d range parts for %d bounds", ErrCorrupt, t.Name, len(t.Placement.Groups), len(t.Placement.Bounds))
		}
	default:
		return fmt.Errorf("%w: table %s: placement %q", ErrCorrupt, t.Name, t.Placement.Kind)
	}
	return nil
}

// DropJob is data left to clear after a schema change committed: the span
// of a dropped or truncated table, or of a dropped index. A background
// worker deletes its keys in chunks of ordinary transactions, then removes
// the job.
type DropJob struct {
	ID    uint32 `json:"id"`
	What  string `json:"what"`
	Start []byte `json:"start"`
	End   []byte `json:"end"`
}

// root is the catalog's own bookkeeping record.
type root struct {
	NextID    uint32 `json:"next_id"`
	NextGroup uint32 `json:"next_group"`
}

func decodeTable(b []byte) (*Table, error) {
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%w: table: %v", ErrCorrupt, err)
	}
	for i := range t.Columns {
		typ, err := ParseType(t.Columns[i].TypeStr)
		if err != nil {
			return nil, fmt.Errorf("table %s column %s: %w", t.Name, t.Columns[i].Name, err)
		}
		t.Columns[i].typ = typ
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // descriptors are plain data
	}
	return b
}
