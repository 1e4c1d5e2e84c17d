package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/augustus-db/augustus/pkg/sql/backend"
	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// Config configures an Engine.
type Config struct {
	// Client is the process's transaction client. The whole process shares
	// one (one nonce sequence, W3; its envelopes batch the calls of every
	// session, DESIGN.md §3.1). Its admin key (coord.ClientConfig.Admin),
	// if any, signs schema changes; without one DDL is refused.
	Client *coord.Client
	// Store replaces Client where a test or a simulation runs transactions
	// another way; Admin then says whether it can sign metadata
	// transactions.
	Store session.Store
	Admin bool
	// Limits must be the replicas' (default txn.DefaultLimits()).
	Limits txn.Limits
	// MaxRetries bounds how often an autocommit statement that failed with a
	// serialization failure (1213) or a schema change is run again before
	// the error reaches the client (default 8; negative: never).
	MaxRetries int
	// RetryRows bounds the rows an autocommit statement's result may hold
	// in memory so that it can run again after a serialization failure
	// (default 4096). A larger result streams past it; a failure after that
	// point reaches the client.
	RetryRows int
	// AutoIncrementBlock is how many AUTO_INCREMENT ids one allocation takes
	// (default 100).
	AutoIncrementBlock uint64
	// FirstChunk is the first read-range chunk of a scan (default 256).
	FirstChunk int
	// Logger receives the engine's warnings (default: discarded).
	Logger *slog.Logger
}

// Engine is a GMS engine over Augustus, ready for a MySQL gateway, an
// embedded database/sql driver or tests: SQL is the GMS engine (its
// analyzer, catalog and MySQLDb for users), NewSession builds sessions with
// the transaction model of pkg/sql/session, and Run runs one statement with
// the autocommit retry.
type Engine struct {
	SQL      *sqle.Engine
	Provider *backend.Provider
	env      *session.Env
	cat      *catalog.Manager
	cfg      Config
	conns    atomic.Uint32
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
}

// New loads the catalog through the client and builds the engine; it starts
// the schema changer (clearing dropped tables in the background), which
// Close stops.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	store := cfg.Store
	if store == nil {
		if cfg.Client == nil {
			return nil, errors.New("engine: a transaction client is required")
		}
		store = cfg.Client
		cfg.Admin = cfg.Client.HasAdmin()
	}
	if cfg.Limits == (txn.Limits{}) {
		cfg.Limits = txn.DefaultLimits()
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryRows <= 0 {
		cfg.RetryRows = 4096
	}
	cat, err := catalog.NewManager(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("engine: load the catalog: %w", err)
	}
	env := &session.Env{Store: store, Limits: cfg.Limits, FirstChunk: cfg.FirstChunk}
	pro := backend.NewProvider(backend.Config{
		Env: env, Catalog: cat, CanDDL: cfg.Admin, AutoIncrementBlock: cfg.AutoIncrementBlock, Logger: cfg.Logger,
	})
	a := analyzer.NewDefault(pro)
	e := &Engine{SQL: sqle.New(a, &sqle.Config{}), Provider: pro, env: env, cat: cat, cfg: cfg}
	bg, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		pro.Changer().Run(bg)
	}()
	return e, nil
}

// Close stops the schema changer and the GMS engine. It does not close the
// client, which the caller owns.
func (e *Engine) Close() error {
	var err error
	e.once.Do(func() {
		e.cancel()
		e.wg.Wait()
		err = e.SQL.Close()
	})
	return err
}

// Catalog returns the engine's catalog manager.
func (e *Engine) Catalog() *catalog.Manager { return e.cat }

// Stats returns the counters of what sessions sent.
func (e *Engine) Stats() *session.Stats { return &e.env.Stats }

// NewSession returns a session for a client (user, address) on connection
// id (0: the engine numbers it).
func (e *Engine) NewSession(client sql.Client, addr string, connID uint32) *session.Session {
	if connID == 0 {
		connID = e.conns.Add(1)
	}
	return session.New(sql.NewBaseSessionWithClientServer(addr, client, connID), e.env)
}

// SessionBuilder builds a session for a MySQL connection; it has the type
// of GMS's server.SessionBuilder, for server.NewServer.
func (e *Engine) SessionBuilder(_ context.Context, conn *mysql.Conn, addr string) (sql.Session, error) {
	client := sql.Client{Capabilities: conn.Capabilities}
	if conn.Conn != nil {
		client.Address = conn.RemoteAddr().String()
	}
	if u, ok := conn.UserData.(sql.MysqlConnectionUser); ok {
		client.User, client.Address = u.User, u.Host
	}
	return e.NewSession(client, addr, conn.ConnectionID), nil
}

// NewContext returns a GMS context for a session (tests and the embedded
// driver; the gateway's server makes its own per query).
func (e *Engine) NewContext(ctx context.Context, s *session.Session) *sql.Context {
	return sql.NewContext(ctx, sql.WithSession(s))
}
