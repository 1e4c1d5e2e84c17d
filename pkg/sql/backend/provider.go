package backend

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Config configures a Provider.
type Config struct {
	// Env is what the sessions share (the client and the limits).
	Env *session.Env
	// Catalog is the front-end's catalog.
	Catalog *catalog.Manager
	// CanDDL says the client has an admin key (coord.ClientConfig.Admin):
	// without one, DDL is refused with a clear error before anything is
	// sent.
	CanDDL bool
	// AutoIncrementBlock is how many AUTO_INCREMENT ids one allocation
	// takes for this front-end (default 100).
	AutoIncrementBlock uint64
	// Logger receives the schema changer's progress and trouble.
	Logger *slog.Logger
}

// Provider is the GMS DatabaseProvider over Augustus: databases and tables
// from the local, versioned catalog (no network call on the paths GMS takes
// for every statement), data through the session's transaction.
type Provider struct {
	cfg Config
	env *session.Env
	cat *catalog.Manager
	// infos caches what is derived from descriptors, for the descriptors
	// of one catalog version at a time (descriptors are immutable; a schema
	// change replaces the cache, so it does not grow with DDL).
	infos   atomic.Pointer[infoCache]
	autoInc *allocators
	changer *Changer
}

var (
	_ sql.DatabaseProvider         = (*Provider)(nil)
	_ sql.MutableDatabaseProvider  = (*Provider)(nil)
	_ sql.CollatedDatabaseProvider = (*Provider)(nil)
)

// NewProvider returns a provider. Start the schema changer with
// Provider.Changer().Run.
func NewProvider(cfg Config) *Provider {
	if cfg.AutoIncrementBlock == 0 {
		cfg.AutoIncrementBlock = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Provider{cfg: cfg, env: cfg.Env, cat: cfg.Catalog}
	p.autoInc = newAllocators(p)
	p.changer = newChanger(p)
	return p
}

// Catalog returns the provider's catalog manager.
func (p *Provider) Catalog() *catalog.Manager { return p.cat }

// Changer returns the schema changer (background data work of schema
// changes).
func (p *Provider) Changer() *Changer { return p.changer }

type infoCache struct {
	version uint64
	m       sync.Map // *catalog.Table → *tableInfo
}

// info returns the derived information of a descriptor.
func (p *Provider) info(db string, t *catalog.Table) (*tableInfo, error) {
	v := p.cat.Current().Version
	c := p.infos.Load()
	if c == nil || c.version != v {
		c = &infoCache{version: v}
		p.infos.Store(c)
	}
	if ti, ok := c.m.Load(t); ok {
		return ti.(*tableInfo), nil
	}
	ti, err := newTableInfo(db, t)
	if err != nil {
		return nil, err
	}
	c.m.Store(t, ti)
	return ti, nil
}

// snapshot returns the catalog as the statement running in ctx sees it:
// with the schema change it staged, if any.
func (p *Provider) snapshot(ctx *sql.Context) *catalog.Snapshot {
	if sess, ok := session.FromContext(ctx); ok {
		if d, ok := sess.DDL().(*pendingDDL); ok && d.p == p {
			return d.change.Next()
		}
	}
	return p.cat.Current()
}

// Refresh catches up with other front-ends' schema changes (one small read).
// The statement runner calls it before statements that read only the
// catalog (SHOW, information_schema); lookups of unknown names call it too.
func (p *Provider) Refresh(ctx context.Context) { p.refresh(ctx) }

func (p *Provider) refresh(ctx context.Context) {
	if _, err := p.cat.Refresh(ctx); err != nil {
		p.cfg.Logger.Debug("backend: catalog refresh", "err", err)
	}
}

// Database implements sql.DatabaseProvider. A database this front-end does
// not know may have been created by another one: the catalog is refreshed
// before the name is declared unknown.
func (p *Provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	if d, ok := p.snapshot(ctx).Database(name); ok {
		return &Database{p: p, name: d.Name, id: d.ID}, nil
	}
	if isSystemDB(name) {
		// GMS looks up "mysql" on every statement (its privilege tables):
		// never worth a round trip.
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	p.refresh(ctx)
	if d, ok := p.snapshot(ctx).Database(name); ok {
		return &Database{p: p, name: d.Name, id: d.ID}, nil
	}
	return nil, sql.ErrDatabaseNotFound.New(name)
}

// HasDatabase implements sql.DatabaseProvider.
func (p *Provider) HasDatabase(ctx *sql.Context, name string) bool {
	_, err := p.Database(ctx, name)
	return err == nil
}

// AllDatabases implements sql.DatabaseProvider. GMS's analyzer calls it on
// ordinary statements too, so it reads the local catalog only; statements
// that list the catalog (SHOW, information_schema) are refreshed by the
// statement runner first (Refresh).
func (p *Provider) AllDatabases(ctx *sql.Context) []sql.Database {
	var out []sql.Database
	for _, d := range p.snapshot(ctx).Databases() {
		out = append(out, &Database{p: p, name: d.Name, id: d.ID})
	}
	return out
}

// CreateDatabase implements sql.MutableDatabaseProvider.
func (p *Provider) CreateDatabase(ctx *sql.Context, name string) error {
	return p.CreateCollatedDatabase(ctx, name, sql.Collation_Default)
}

// CreateCollatedDatabase implements sql.CollatedDatabaseProvider.
func (p *Provider) CreateCollatedDatabase(ctx *sql.Context, name string, collation sql.CollationID) error {
	if isSystemDB(name) {
		return sql.ErrDatabaseExists.New(name)
	}
	d, err := p.ddl(ctx)
	if err != nil {
		return err
	}
	if _, ok := d.change.Next().Database(name); ok {
		return sql.ErrDatabaseExists.New(name)
	}
	d.change.PutDatabase(&catalog.Database{ID: d.change.AllocID(), Name: name, Collation: collation})
	return nil
}

// DropDatabase implements sql.MutableDatabaseProvider: its tables are
// dropped with it (their rows cleared in the background).
func (p *Provider) DropDatabase(ctx *sql.Context, name string) error {
	d, err := p.ddl(ctx)
	if err != nil {
		return err
	}
	db, ok := d.change.Next().Database(name)
	if !ok {
		return sql.ErrDatabaseNotFound.New(name)
	}
	for _, t := range d.change.Next().Tables(db.ID) {
		d.dropTable(t)
	}
	d.change.DeleteDatabase(db.ID)
	return nil
}

func isSystemDB(name string) bool {
	switch strings.ToLower(name) {
	case "information_schema", "mysql", "performance_schema", "sys":
		return true
	}
	return false
}
