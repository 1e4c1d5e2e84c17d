package enginetest

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
)

// Memory is GMS's memory backend as a Backend, configured as GMS's default
// MemoryHarness is (native primary-key indexes, history databases for AS
// OF, 5 partitions per versioned table): the reference the harness is
// proven against.
type Memory struct {
	pro *memory.DbProvider
}

var (
	_ Backend           = (*Memory)(nil)
	_ VersionedBackend  = (*Memory)(nil)
	_ ReadOnlyBackend   = (*Memory)(nil)
	_ PersistingBackend = (*Memory)(nil)
)

// memoryPartitions is enginetest's testNumPartitions.
const memoryPartitions = 5

// NewMemory returns an empty memory backend.
func NewMemory() *Memory {
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(true), memory.HistoryProvider(true))
	return &Memory{pro: pro.(*memory.DbProvider)}
}

// Name implements Backend.
func (m *Memory) Name() string { return "memory" }

// Provider implements Backend.
func (m *Memory) Provider() sql.MutableDatabaseProvider { return m.pro }

// NewSession implements Backend.
func (m *Memory) NewSession(base *sql.BaseSession) (sql.Session, error) {
	return memory.NewSession(base, m.pro), nil
}

// Features implements Backend.
func (m *Memory) Features() Features {
	return Features{NativeIndexes: true, ForeignKeys: true, KeylessTables: true}
}

// NewTableAsOf implements VersionedBackend as GMS's MemoryHarness does.
func (m *Memory) NewTableAsOf(db sql.VersionedDatabase, name string, schema sql.PrimaryKeySchema, asOf interface{}) sql.Table {
	var hist *memory.HistoryDatabase
	switch d := db.(type) {
	case *memory.HistoryDatabase:
		hist = d
	case memory.ReadOnlyDatabase:
		hist = d.HistoryDatabase
	case *memory.ReadOnlyDatabase:
		hist = d.HistoryDatabase
	default:
		panic(fmt.Sprintf("enginetest: memory: unexpected database type %T", db))
	}
	table := memory.NewPartitionedTableRevision(hist.BaseDatabase, name, schema, hist.GetForeignKeyCollection(), memoryPartitions)
	table.EnablePrimaryKeyIndexes()
	hist.AddTableAsOf(name, table, asOf)
	return table
}

// SnapshotTable implements VersionedBackend: NewTableAsOf has done the
// work.
func (m *Memory) SnapshotTable(sql.VersionedDatabase, string, interface{}) error { return nil }

// ReadOnlyProvider implements ReadOnlyBackend.
func (m *Memory) ReadOnlyProvider(ctx *sql.Context, pro sql.DatabaseProvider) (sql.DatabaseProvider, error) {
	var dbs []sql.Database
	for _, db := range pro.AllDatabases(ctx) {
		hist, ok := db.(*memory.HistoryDatabase)
		if !ok {
			return nil, fmt.Errorf("enginetest: memory: unexpected database type %T", db)
		}
		dbs = append(dbs, memory.ReadOnlyDatabase{HistoryDatabase: hist})
	}
	return memory.NewDBProviderWithOpts(memory.WithDbsOption(dbs)), nil
}

// PersistableSession implements PersistingBackend.
func (m *Memory) PersistableSession(*sql.Context) (sql.PersistableSession, error) {
	s := memory.NewSession(sql.NewBaseSessionWithClientServer("address", sql.Client{Address: "localhost", User: "root"}, 1), m.pro)
	return s.SetGlobals(memory.GlobalsMap{}), nil
}

// ValidatingSession implements PersistingBackend.
func (m *Memory) ValidatingSession(ctx *sql.Context, onValidate func()) (sql.PersistableSession, error) {
	s, ok := ctx.Session.(*memory.Session)
	if !ok {
		return nil, fmt.Errorf("enginetest: memory: session is a %T", ctx.Session)
	}
	s.SetValidationCallback(onValidate)
	return s, nil
}
