package enginetest

import (
	sqle "github.com/dolthub/go-mysql-server"
	et "github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/sql"
)

// Backend is the storage under test: what the harness builds
// go-mysql-server engines over. One Backend serves a whole run. The harness
// never asks for a new one: before each engine it drops every database
// (with DROP DATABASE on a throwaway engine, or the backend's own Reset), so
// a backend that is expensive to create (a cluster) is created once.
type Backend interface {
	// Name labels the backend in reports ("memory", "augustus").
	Name() string
	// Provider is the database provider every engine is built over.
	Provider() sql.MutableDatabaseProvider
	// NewSession returns a session over the provider for base, which
	// carries the client, the connection id and the session variables.
	NewSession(base *sql.BaseSession) (sql.Session, error)
	// Features says which optional parts of the suite apply.
	Features() Features
}

// Features are the optional abilities enginetest asks a harness about.
type Features struct {
	// NativeIndexes: CREATE INDEX in set-up scripts (sql.IndexAlterableTable).
	NativeIndexes bool
	// ForeignKeys: FOREIGN KEY in set-up scripts (sql.ForeignKeyTable).
	ForeignKeys bool
	// KeylessTables: tables without a primary key.
	KeylessTables bool
}

// EngineConfigurer is an optional Backend interface: ConfigureEngine is
// called on every new engine before its set-up scripts run (an exec
// builder, analyzer rules, a statistics provider of the backend's own).
type EngineConfigurer interface {
	ConfigureEngine(e *sqle.Engine) error
}

// QueryEngineWrapper is an optional Backend interface: the tests query
// what WrapEngine returns for each engine the harness builds (after its
// set-up scripts ran on the bare engine), so that a backend whose engine
// adds statement handling around GMS's (Augustus' engine.Run: autocommit
// retries, what it reads from the AST, MySQL error codes) is tested with
// it. A few suites type-assert *sqle.Engine and skip, or validate less,
// on anything else; the wrapper should embed the engine.
type QueryEngineWrapper interface {
	WrapEngine(e *sqle.Engine) (et.QueryEngine, error)
}

// Resetter is an optional Backend interface: Reset drops every database
// faster than DROP DATABASE statements would (for example by recreating an
// in-process store). After it the provider must hold no user database.
type Resetter interface {
	Reset(ctx *sql.Context) error
}

// VersionedBackend is an optional Backend interface for AS OF queries
// (enginetest's VersionedDBHarness); without it the versioned suites are
// excluded.
type VersionedBackend interface {
	NewTableAsOf(db sql.VersionedDatabase, name string, schema sql.PrimaryKeySchema, asOf interface{}) sql.Table
	SnapshotTable(db sql.VersionedDatabase, name string, asOf interface{}) error
}

// ReadOnlyBackend is an optional Backend interface: a read-only view of a
// provider's databases (enginetest's ReadOnlyDatabaseHarness); without it
// the read-only suites are excluded.
type ReadOnlyBackend interface {
	ReadOnlyProvider(ctx *sql.Context, pro sql.DatabaseProvider) (sql.DatabaseProvider, error)
}

// PersistingBackend is an optional Backend interface for SET PERSIST and
// session validation (TestPersist, TestValidateSession); without it those
// suites are excluded.
type PersistingBackend interface {
	// PersistableSession returns a new session whose persisted globals
	// start empty.
	PersistableSession(ctx *sql.Context) (sql.PersistableSession, error)
	// ValidatingSession returns ctx's session, set to call onValidate every
	// time the engine validates it (once per statement).
	ValidatingSession(ctx *sql.Context, onValidate func()) (sql.PersistableSession, error)
}
