package catalog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Keys of the catalog in the metadata keyspace (M1): non-reserved metadata
// keys under "sql/", so they never meet the system's 0x00 keys.
var (
	keyPrefix = []byte("sql/")
	keyEnd    = []byte("sql0") // '0' follows '/'
	keyRoot   = []byte("sql/root")
	prefixDB  = "sql/db/"
	prefixTbl = "sql/tbl/"
	prefixJob = "sql/drop/"
)

func idKey(prefix string, id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte(prefix), id)
}

// Snapshot is the catalog at one metadata version: every database, table
// and drop job, the partition map and the catalog's counters. It is
// immutable; GMS reads it on every statement (tables, indexes, row counts)
// without a network call, and a change builds the next one.
type Snapshot struct {
	// Version is the metadata version (M2) the snapshot was read at: every
	// data transaction built from it carries it (coord.Options.PinVersion),
	// so a transaction built against an older catalog aborts.
	Version uint64
	// Map is the partition map at Version.
	Map *oracle.Map

	root    root
	hasRoot bool // the root record exists (the first change creates it)
	dbs     map[uint32]*Database
	dbName  map[string]*Database // lower-case name
	tables  map[uint32]*Table
	byName  map[uint32]map[string]*Table // db id → lower-case name → table
	jobs    map[uint32]*DropJob
}

func newSnapshot() *Snapshot {
	return &Snapshot{
		root: root{NextID: 1}, dbs: map[uint32]*Database{}, dbName: map[string]*Database{},
		tables: map[uint32]*Table{}, byName: map[uint32]map[string]*Table{}, jobs: map[uint32]*DropJob{},
	}
}

// Database returns the database named name (case-insensitive).
func (s *Snapshot) Database(name string) (*Database, bool) {
	d, ok := s.dbName[strings.ToLower(name)]
	return d, ok
}

// DatabaseByID returns a database by id.
func (s *Snapshot) DatabaseByID(id uint32) (*Database, bool) {
	d, ok := s.dbs[id]
	return d, ok
}

// Databases returns every database, sorted by name.
func (s *Snapshot) Databases() []*Database {
	out := slices.Collect(maps.Values(s.dbs))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Table returns table name (case-insensitive) of database db.
func (s *Snapshot) Table(db uint32, name string) (*Table, bool) {
	t, ok := s.byName[db][strings.ToLower(name)]
	return t, ok
}

// TableByID returns a table by id.
func (s *Snapshot) TableByID(id uint32) (*Table, bool) {
	t, ok := s.tables[id]
	return t, ok
}

// Tables returns the tables of database db, sorted by name.
func (s *Snapshot) Tables(db uint32) []*Table {
	out := slices.Collect(maps.Values(s.byName[db]))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Jobs returns the drop jobs, by id.
func (s *Snapshot) Jobs() []*DropJob {
	out := slices.Collect(maps.Values(s.jobs))
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Groups returns the cluster's groups (those the partition map names).
func (s *Snapshot) Groups() []bft.GroupID { return s.Map.Groups() }

// decode builds a snapshot from the catalog's metadata entries.
func decode(version uint64, m *oracle.Map, entries []txn.KV) (*Snapshot, error) {
	s := newSnapshot()
	s.Version, s.Map = version, m
	for _, e := range entries {
		k := string(e.Key)
		switch {
		case bytes.Equal(e.Key, keyRoot):
			if err := json.Unmarshal(e.Value, &s.root); err != nil {
				return nil, fmt.Errorf("%w: root: %v", ErrCorrupt, err)
			}
			s.hasRoot = true
		case strings.HasPrefix(k, prefixDB):
			var d Database
			if err := json.Unmarshal(e.Value, &d); err != nil {
				return nil, fmt.Errorf("%w: database: %v", ErrCorrupt, err)
			}
			s.putDB(&d)
		case strings.HasPrefix(k, prefixTbl):
			t, err := decodeTable(e.Value)
			if err != nil {
				return nil, err
			}
			s.putTable(t)
		case strings.HasPrefix(k, prefixJob):
			var j DropJob
			if err := json.Unmarshal(e.Value, &j); err != nil {
				return nil, fmt.Errorf("%w: drop job: %v", ErrCorrupt, err)
			}
			s.jobs[j.ID] = &j
		default:
			return nil, fmt.Errorf("%w: unknown catalog key %q", ErrCorrupt, k)
		}
	}
	for _, t := range s.tables {
		if _, ok := s.dbs[t.DB]; !ok {
			return nil, fmt.Errorf("%w: table %s in unknown database %d", ErrCorrupt, t.Name, t.DB)
		}
	}
	return s, nil
}

func (s *Snapshot) putDB(d *Database) {
	s.dbs[d.ID] = d
	s.dbName[strings.ToLower(d.Name)] = d
}

func (s *Snapshot) putTable(t *Table) {
	s.tables[t.ID] = t
	if s.byName[t.DB] == nil {
		s.byName[t.DB] = map[string]*Table{}
	}
	s.byName[t.DB][strings.ToLower(t.Name)] = t
}

// clone copies the snapshot's maps (descriptors are shared: they are
// immutable, and a change replaces the ones it edits).
func (s *Snapshot) clone() *Snapshot {
	c := &Snapshot{
		Version: s.Version, Map: s.Map, root: s.root, hasRoot: s.hasRoot,
		dbs: maps.Clone(s.dbs), dbName: maps.Clone(s.dbName), tables: maps.Clone(s.tables),
		byName: make(map[uint32]map[string]*Table, len(s.byName)), jobs: maps.Clone(s.jobs),
	}
	for k, v := range s.byName {
		c.byName[k] = maps.Clone(v)
	}
	return c
}

// Change is one schema change: the metadata operations of one metadata
// transaction over every group (M1, M5) and the snapshot they produce.
// Build it from the snapshot the statement was planned against; Manager
// commits it at that snapshot's version.
type Change struct {
	base *Snapshot
	next *Snapshot
	ops  map[string]txn.Op // by key: the last operation on each key
	// existed says, per key touched, whether it existed before the change.
	existed map[string]bool
	// mapChanged: the partition map is written too (M3).
	mapChanged bool
}

// Edit starts a change on s.
func (s *Snapshot) Edit() *Change {
	return &Change{base: s, next: s.clone(), ops: map[string]txn.Op{}, existed: map[string]bool{}}
}

// Next returns the snapshot as changed so far (for lookups while building).
func (c *Change) Next() *Snapshot { return c.next }

// Base returns the snapshot the change starts from.
func (c *Change) Base() *Snapshot { return c.base }

// put sets key to value in the change: an insert if the key did not exist
// before the change (existed says whether it did, at its first touch), a
// write otherwise.
func (c *Change) put(key []byte, existed bool, value []byte) {
	k := string(key)
	if e, ok := c.existed[k]; ok {
		existed = e
	} else {
		c.existed[k] = existed
	}
	op := txn.Op{Kind: txn.OpInsert, Meta: true, Key: key, Value: value}
	if existed {
		op.Kind = txn.OpWrite
	}
	c.ops[k] = op
}

// del deletes key in the change (nothing, if the change created it).
func (c *Change) del(key []byte, existed bool) {
	k := string(key)
	if e, ok := c.existed[k]; ok {
		existed = e
	} else {
		c.existed[k] = existed
	}
	if !existed {
		delete(c.ops, k)
		return
	}
	c.ops[k] = txn.Op{Kind: txn.OpDelete, Meta: true, Key: key}
}

// AllocID hands out a fresh id (databases, tables, drop jobs share one
// sequence, never reused).
func (c *Change) AllocID() uint32 {
	id := c.next.root.NextID
	c.next.root.NextID++
	c.put(keyRoot, c.base.hasRoot, mustJSON(c.next.root))
	return id
}

// NextGroup returns the group a new table goes to by default: round-robin
// over the cluster's groups.
func (c *Change) NextGroup() bft.GroupID {
	gs := c.next.Groups()
	g := gs[int(c.next.root.NextGroup)%len(gs)]
	c.next.root.NextGroup++
	c.put(keyRoot, c.base.hasRoot, mustJSON(c.next.root))
	return g
}

// PutDatabase creates or replaces a database.
func (c *Change) PutDatabase(d *Database) {
	_, existed := c.base.dbs[d.ID]
	if old, ok := c.next.dbs[d.ID]; ok {
		delete(c.next.dbName, strings.ToLower(old.Name))
	}
	c.next.putDB(d)
	c.put(idKey(prefixDB, d.ID), existed, mustJSON(d))
}

// DeleteDatabase removes a database (its tables must be gone).
func (c *Change) DeleteDatabase(id uint32) {
	if d, ok := c.next.dbs[id]; ok {
		delete(c.next.dbName, strings.ToLower(d.Name))
		delete(c.next.dbs, id)
		delete(c.next.byName, id)
	}
	_, existed := c.base.dbs[id]
	c.del(idKey(prefixDB, id), existed)
}

// PutTable creates or replaces a table descriptor (validated).
func (c *Change) PutTable(t *Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if _, ok := c.next.dbs[t.DB]; !ok {
		return fmt.Errorf("catalog: table %s in unknown database %d", t.Name, t.DB)
	}
	_, existed := c.base.tables[t.ID]
	if old, ok := c.next.tables[t.ID]; ok {
		delete(c.next.byName[old.DB], strings.ToLower(old.Name))
	}
	c.next.putTable(t)
	c.put(idKey(prefixTbl, t.ID), existed, mustJSON(t))
	return nil
}

// DeleteTable removes a table descriptor.
func (c *Change) DeleteTable(id uint32) {
	if t, ok := c.next.tables[id]; ok {
		delete(c.next.byName[t.DB], strings.ToLower(t.Name))
		delete(c.next.tables, id)
	}
	_, existed := c.base.tables[id]
	c.del(idKey(prefixTbl, id), existed)
}

// AddJob records data to clear in the background.
func (c *Change) AddJob(what string, start, end []byte) {
	j := &DropJob{ID: c.AllocID(), What: what, Start: start, End: end}
	c.next.jobs[j.ID] = j
	c.put(idKey(prefixJob, j.ID), false, mustJSON(j))
}

// RemoveJob removes a finished drop job.
func (c *Change) RemoveJob(id uint32) {
	delete(c.next.jobs, id)
	_, existed := c.base.jobs[id]
	c.del(idKey(prefixJob, id), existed)
}

// SetMap replaces the partition map (M3: the groups check that it moves
// no data).
func (c *Change) SetMap(m *oracle.Map) {
	c.next.Map = m
	c.mapChanged = true
}

// Ops returns the metadata transaction's operations, in key order (the
// partition-map write last).
func (c *Change) Ops() []txn.Op {
	keys := slices.Sorted(maps.Keys(c.ops))
	out := make([]txn.Op, 0, len(keys)+1)
	for _, k := range keys {
		out = append(out, c.ops[k])
	}
	if c.mapChanged {
		out = append(out, txn.Op{Kind: txn.OpWrite, Meta: true, Key: txn.MetaPartitionsKey, Value: c.next.Map.Encode()})
	}
	return out
}

// Empty reports whether the change changes nothing.
func (c *Change) Empty() bool { return len(c.ops) == 0 && !c.mapChanged }

// committed returns the snapshot after the change's metadata transaction
// committed: every group's version went up by one (M2).
func (c *Change) committed() *Snapshot {
	s := c.next
	s.Version = c.base.Version + 1
	if _, ok := c.ops[string(keyRoot)]; ok {
		s.hasRoot = true
	}
	return s
}
