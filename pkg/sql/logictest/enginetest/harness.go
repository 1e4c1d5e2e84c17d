package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/mysql"

	sqle "github.com/dolthub/go-mysql-server"
	et "github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/scriptgen/setup"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
)

// Harness is go-mysql-server's enginetest.Harness (with every optional
// harness interface) over a Backend. It is modelled on dolt's DoltHarness:
// it keeps one backend for the whole run and, instead of building a fresh
// store for every engine as GMS's MemoryHarness does, drops every database
// and replays the set-up scripts.
type Harness struct {
	backend Backend
	opts    HarnessOptions

	setupData []setup.SetupScript
	session   sql.Session
	// readOnly is the read-only provider NewReadOnlyEngine built, if any.
	readOnly sql.DatabaseProvider
	// retain is set when a test created databases or tables directly in
	// the provider (the versioned set-up does): the next engines must keep
	// them, so the provider is not reset until the next suite.
	retain bool
	// retainSessionAfterSetup keeps the session the set-up scripts ran in
	// (TestJoinStats keeps its statistics in it).
	retainSessionAfterSetup bool
}

// HarnessOptions shape a Harness.
type HarnessOptions struct {
	// SkipQueries are substrings (case-insensitive) of queries and script
	// names the suites must skip (enginetest's SkippingHarness); each skip
	// counts as a failure in the score.
	SkipQueries []string
	// Server runs every query through a GMS MySQL server on loopback and
	// the go-sql-driver client (enginetest's ServerQueryEngine), as GMS's
	// SERVER_ENGINE_TEST does, instead of calling the engine directly.
	Server bool
}

var (
	_ et.Harness                 = (*Harness)(nil)
	_ et.SkippingHarness         = (*Harness)(nil)
	_ et.ClientHarness           = (*Harness)(nil)
	_ et.ServerHarness           = (*Harness)(nil)
	_ et.IndexHarness            = (*Harness)(nil)
	_ et.ForeignKeyHarness       = (*Harness)(nil)
	_ et.KeylessTableHarness     = (*Harness)(nil)
	_ et.TransactionHarness      = (*Harness)(nil)
	_ et.VersionedDBHarness      = (*Harness)(nil)
	_ et.ReadOnlyDatabaseHarness = (*Harness)(nil)
	_ et.ValidatingHarness       = (*Harness)(nil)
)

// NewHarness returns a harness over b.
func NewHarness(b Backend, opts HarnessOptions) *Harness {
	return &Harness{backend: b, opts: opts}
}

// Backend returns the backend under the harness.
func (h *Harness) Backend() Backend { return h.backend }

// BeginSuite forgets what the previous suite left in the harness (set-up
// scripts, the session, retained databases) and drops every database, so
// that a suite starts as it would with a new harness. The suite runner
// calls it before each enginetest function.
func (h *Harness) BeginSuite() error {
	h.setupData, h.session, h.readOnly = nil, nil, nil
	h.retain, h.retainSessionAfterSetup = false, false
	return h.reset()
}

// RetainSessionAfterSetup keeps the set-up scripts' session for the tests
// of the current suite (as GMS's MemoryHarness.RetainSessionAfterSetup).
func (h *Harness) RetainSessionAfterSetup() { h.retainSessionAfterSetup = true }

// reset drops every database of the backend. It uses a new engine and a
// new session, so nothing a test left behind (an open transaction, a
// read-only catalog, revoked privileges) stands in the way.
func (h *Harness) reset() error {
	ctx := h.newContext(h.newSession(et.NewBaseSession()))
	if r, ok := h.backend.(Resetter); ok {
		if err := r.Reset(ctx); err != nil {
			return fmt.Errorf("enginetest: reset %s: %w", h.backend.Name(), err)
		}
		return nil
	}
	e := et.NewEngineWithProvider(nil, h, h.backend.Provider())
	for _, name := range userDatabases(ctx, h.backend.Provider()) {
		q := "DROP DATABASE IF EXISTS `" + strings.ReplaceAll(name, "`", "``") + "`"
		_, iter, _, err := e.Query(ctx.WithQuery(q), q)
		if err == nil {
			_, err = sql.RowIterToRows(ctx, iter)
		}
		if err != nil {
			return fmt.Errorf("enginetest: reset %s: %s: %w", h.backend.Name(), q, err)
		}
	}
	if left := userDatabases(ctx, h.backend.Provider()); len(left) > 0 {
		return fmt.Errorf("enginetest: reset %s: databases left: %s", h.backend.Name(), strings.Join(left, ", "))
	}
	return nil
}

// userDatabases lists the provider's databases but information_schema and
// mysql, which belong to the engine.
func userDatabases(ctx *sql.Context, pro sql.DatabaseProvider) []string {
	var names []string
	for _, db := range pro.AllDatabases(ctx) {
		name := db.Name()
		if !strings.EqualFold(name, "information_schema") && !strings.EqualFold(name, "mysql") {
			names = append(names, name)
		}
	}
	return names
}

func (h *Harness) newSession(base *sql.BaseSession) sql.Session {
	s, err := h.backend.NewSession(base)
	if err != nil {
		// enginetest's NewContext has no error to return.
		panic(fmt.Sprintf("enginetest: %s: new session: %v", h.backend.Name(), err))
	}
	return s
}

func (h *Harness) mustSession() sql.Session {
	if h.session == nil {
		h.session = h.newSession(et.NewBaseSession())
	}
	return h.session
}

func (h *Harness) newContext(s sql.Session) *sql.Context {
	return sql.NewContext(context.Background(), sql.WithSession(s))
}

// NewContext implements enginetest.Harness: a context on the harness's
// current session.
func (h *Harness) NewContext() *sql.Context { return h.newContext(h.mustSession()) }

// NewSession implements enginetest.TransactionHarness: a new session, which
// becomes the current one.
func (h *Harness) NewSession() *sql.Context {
	h.session = h.newSession(et.NewBaseSession())
	return h.NewContext()
}

// NewContextWithClient implements enginetest.ClientHarness.
func (h *Harness) NewContextWithClient(client sql.Client) *sql.Context {
	return h.newContext(h.newSession(sql.NewBaseSessionWithClientServer("address", client, 1)))
}

// SessionBuilder implements enginetest.ServerHarness.
func (h *Harness) SessionBuilder() server.SessionBuilder {
	return func(_ context.Context, c *mysql.Conn, addr string) (sql.Session, error) {
		var host, user string
		if u, ok := c.UserData.(sql.MysqlConnectionUser); ok {
			host, user = u.Host, u.User
		}
		client := sql.Client{Address: host, User: user, Capabilities: c.Capabilities}
		return h.backend.NewSession(sql.NewBaseSessionWithClientServer(addr, client, c.ConnectionID))
	}
}

// Setup implements enginetest.Harness.
func (h *Harness) Setup(scripts ...[]setup.SetupScript) {
	h.setupData = nil
	for _, s := range scripts {
		h.setupData = append(h.setupData, s...)
	}
}

// NewEngine implements enginetest.Harness: an engine over the backend's
// provider holding exactly the set-up scripts' data. Unless a test built
// data straight into the provider, every database is dropped first; the
// engine itself is new (a fresh catalog, privileges and process list),
// which costs nothing beside the backend.
func (h *Harness) NewEngine(t *testing.T) (et.QueryEngine, error) {
	if !h.retain {
		if err := h.reset(); err != nil {
			return nil, err
		}
		h.session = nil
	}
	e := et.NewEngineWithProvider(t, h, h.backend.Provider())
	if c, ok := h.backend.(EngineConfigurer); ok {
		if err := c.ConfigureEngine(e); err != nil {
			return nil, fmt.Errorf("enginetest: configure engine: %w", err)
		}
	}
	var qe et.QueryEngine = e
	if w, ok := h.backend.(QueryEngineWrapper); ok && !h.opts.Server {
		var err error
		if qe, err = w.WrapEngine(e); err != nil {
			return nil, fmt.Errorf("enginetest: wrap engine: %w", err)
		}
	}
	data := h.setupData
	if len(data) == 0 {
		data = setup.MydbData // as enginetest.NewEngine does
	}
	// The set-up scripts run through the engine the tests will query, so
	// a wrapper sees them too (enginetest.RunSetupScripts takes only a bare
	// engine). GMS's own version means to leave out CREATE INDEX for a
	// backend without native indexes but tests the substring the wrong way
	// round, so it never does; neither does this.
	ctx := et.NewContext(h)
	for _, script := range data {
		for _, q := range script {
			qctx := ctx.WithQuery(q)
			_, iter, _, err := qe.Query(qctx, q)
			if err == nil {
				_, err = sql.RowIterToRows(qctx, iter)
			}
			if err != nil {
				return nil, fmt.Errorf("enginetest: set-up %q: %w", q, err)
			}
		}
	}
	if !h.retainSessionAfterSetup {
		// Set-up scripts may leave session state (USE, variables) behind.
		h.session = nil
	}
	if h.opts.Server {
		return et.NewServerQueryEngine(t, e, h.SessionBuilder())
	}
	return qe, nil
}

// SkipQueryTest implements enginetest.SkippingHarness.
func (h *Harness) SkipQueryTest(query string) bool {
	q := strings.ToLower(query)
	for _, s := range h.opts.SkipQueries {
		if strings.Contains(q, strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// SupportsNativeIndexCreation implements enginetest.IndexHarness.
func (h *Harness) SupportsNativeIndexCreation() bool { return h.backend.Features().NativeIndexes }

// SupportsForeignKeys implements enginetest.ForeignKeyHarness.
func (h *Harness) SupportsForeignKeys() bool { return h.backend.Features().ForeignKeys }

// SupportsKeylessTables implements enginetest.KeylessTableHarness.
func (h *Harness) SupportsKeylessTables() bool { return h.backend.Features().KeylessTables }

// NewDatabases implements enginetest.VersionedDBHarness: databases created
// straight in the provider, kept by the next engines of the suite.
func (h *Harness) NewDatabases(names ...string) []sql.Database {
	ctx := h.NewContext()
	var dbs []sql.Database
	for _, name := range names {
		if err := h.backend.Provider().CreateDatabase(ctx, name); err != nil {
			panic(fmt.Sprintf("enginetest: create database %s: %v", name, err))
		}
		db, err := h.backend.Provider().Database(ctx, name)
		if err != nil {
			panic(fmt.Sprintf("enginetest: database %s: %v", name, err))
		}
		dbs = append(dbs, db)
	}
	h.retain = true
	return dbs
}

// NewTableAsOf implements enginetest.VersionedDBHarness through the
// backend's VersionedBackend; the suite runner excludes the versioned
// suites for a backend without it.
func (h *Harness) NewTableAsOf(db sql.VersionedDatabase, name string, schema sql.PrimaryKeySchema, asOf interface{}) sql.Table {
	vb, ok := h.backend.(VersionedBackend)
	if !ok {
		panic("enginetest: " + h.backend.Name() + " has no versioned tables")
	}
	h.retain = true
	return vb.NewTableAsOf(db, name, schema, asOf)
}

// SnapshotTable implements enginetest.VersionedDBHarness.
func (h *Harness) SnapshotTable(db sql.VersionedDatabase, name string, asOf interface{}) error {
	vb, ok := h.backend.(VersionedBackend)
	if !ok {
		return fmt.Errorf("enginetest: %s has no versioned tables", h.backend.Name())
	}
	return vb.SnapshotTable(db, name, asOf)
}

// NewReadOnlyEngine implements enginetest.ReadOnlyDatabaseHarness.
func (h *Harness) NewReadOnlyEngine(pro sql.DatabaseProvider) (et.QueryEngine, error) {
	rb, ok := h.backend.(ReadOnlyBackend)
	if !ok {
		return nil, fmt.Errorf("enginetest: %s has no read-only databases", h.backend.Name())
	}
	ro, err := rb.ReadOnlyProvider(h.NewContext(), pro)
	if err != nil {
		return nil, err
	}
	h.readOnly = ro
	h.retain = true
	return et.NewEngineWithProvider(nil, h, ro), nil
}

// ValidateEngine implements enginetest.ValidatingHarness, run after every
// test: each table a database lists can be looked up by that name and
// reports that name (as GMS's memory harness checks).
func (h *Harness) ValidateEngine(ctx *sql.Context, e *sqle.Engine) error {
	for _, db := range e.Analyzer.Catalog.AllDatabases(ctx) {
		names, err := db.GetTableNames(ctx)
		if err != nil {
			return err
		}
		for _, name := range names {
			t, ok, err := db.GetTableInsensitive(ctx, name)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("enginetest: %s lists table %s but does not find it", db.Name(), name)
			}
			if t.Name() != name {
				return fmt.Errorf("enginetest: table %s of %s is named %s", name, db.Name(), t.Name())
			}
		}
	}
	return nil
}
