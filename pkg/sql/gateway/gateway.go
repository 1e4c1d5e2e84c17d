package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/augustus-db/augustus/pkg/sql/engine"
)

// DefaultSendBuffer is Config.SendBuffer's default.
const DefaultSendBuffer = 1 << 20

// DefaultServerVersion is the version the gateway announces: MySQL 8.0's
// protocol and dialect (GMS's), marked as Augustus.
const DefaultServerVersion = "8.0.33-augustus"

// Config configures a Gateway.
type Config struct {
	// Engine runs the statements; the caller builds it over the process's
	// one transaction client and closes both after Shutdown.
	Engine *engine.Engine
	// Address is the host:port to listen on (e.g. 127.0.0.1:3306), unless
	// Listener is given.
	Address  string
	Listener net.Listener
	// Users are the accounts (from the cluster file); at least one.
	Users []User
	// TLS, if set, lets clients switch to TLS (and makes
	// caching_sha2_password accounts usable); RequireTLS refuses clients
	// that do not.
	TLS        *tls.Config
	RequireTLS bool
	// Interceptors run before the gateway's handler for every statement:
	// the fast path's hook (see the package comment).
	Interceptors []server.Interceptor
	// Metrics (default: NewMetrics(nil), unregistered).
	Metrics *Metrics
	// Logger (default: discarded).
	Logger *slog.Logger
	// MaxConnections bounds the open connections (0: no bound).
	MaxConnections uint64
	// SendBuffer is how many bytes of a result the handler holds before it
	// sends the first rows (default DefaultSendBuffer).
	SendBuffer int
	// ServerVersion is announced to clients (default DefaultServerVersion).
	ServerVersion string
}

// Gateway is a MySQL server over an Augustus engine.
type Gateway struct {
	eng        *engine.Engine
	srv        *server.Server
	lis        net.Listener
	metrics    *Metrics
	log        *slog.Logger
	sendBuffer int

	// stop is cancelled when Shutdown gives up waiting: statements still
	// running are cancelled.
	stop     context.Context
	stopNow  context.CancelFunc
	serveErr chan error

	mu       sync.Mutex
	draining bool
	active   int           // statements running
	idle     chan struct{} // closed when draining and active == 0
	conns    map[uint32]*mysql.Conn
	noConns  chan struct{} // closed when draining and no connection is open
}

// New builds a gateway and binds its address; Serve accepts connections.
func New(cfg Config) (*Gateway, error) {
	if cfg.Engine == nil {
		return nil, errors.New("gateway: an engine is required")
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = DefaultSendBuffer
	}
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = DefaultServerVersion
	}
	if cfg.RequireTLS && cfg.TLS == nil {
		return nil, errors.New("gateway: RequireTLS without a TLS configuration")
	}
	auth, err := newAuthServer(cfg.Users, cfg.RequireTLS)
	if err != nil {
		return nil, err
	}
	if err := announce(cfg.ServerVersion); err != nil {
		return nil, err
	}
	cfg.Metrics.watchEngine(cfg.Engine.Stats())
	lis := cfg.Listener
	if lis == nil {
		if lis, err = net.Listen("tcp", cfg.Address); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("gateway: %s is taken (another MySQL server or gateway runs there?): choose another address: %w", cfg.Address, err)
			}
			return nil, fmt.Errorf("gateway: listen on %s: %w", cfg.Address, err)
		}
	}
	g := &Gateway{
		eng: cfg.Engine, lis: lis, metrics: cfg.Metrics, log: cfg.Logger, sendBuffer: cfg.SendBuffer,
		serveErr: make(chan error, 1), conns: map[uint32]*mysql.Conn{},
	}
	g.stop, g.stopNow = context.WithCancel(context.Background())
	// The gateway's handler goes in first; the interceptors wrap it, so a
	// fast path sees every statement before it and passes on what it does
	// not answer.
	wrap := func(e *sqle.Engine, sm *server.SessionManager, h mysql.Handler) (*sqle.Engine, *server.SessionManager, mysql.Handler) {
		return e, sm, &handler{Handler: h, sm: sm, g: g}
	}
	var chain server.InterceptorChain
	for _, ic := range cfg.Interceptors {
		chain.WithInterceptor(ic)
	}
	srv, err := server.NewServer(server.Config{
		Protocol:       "tcp",
		Listener:       lis,
		Version:        cfg.ServerVersion,
		TLSConfig:      cfg.TLS,
		MaxConnections: cfg.MaxConnections,
		// One in-flight connection waits for a slot at most this long
		// when MaxConnections is reached.
		MaxWaitConnectionsTimeout: 10 * time.Second,
		RequireSecureTransport:    cfg.RequireTLS,
		Options:                   []server.Option{wrap, chain.Option()},
		ProtocolListenerFactory: func(c server.Config, lc mysql.ListenerConfig, sel server.ServerEventListener) (server.ProtocolListener, error) {
			lc.AuthServer = auth
			return server.MySQLProtocolListenerFactory(c, lc, sel)
		},
	}, cfg.Engine.SQL, sql.NewContext, cfg.Engine.SessionBuilder, nil)
	if err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.srv = srv
	return g, nil
}

// announce sets what SELECT @@version, @@version_comment and
// @@transaction_isolation tell clients: this server, and the isolation every
// transaction runs at (any level a client sets is accepted and runs as
// SERIALIZABLE). GMS keeps these process-wide.
func announce(version string) error {
	err := sql.SystemVariables.AssignValues(map[string]any{
		"version":               version,
		"version_comment":       "Augustus (Byzantine-fault-tolerant; every transaction SERIALIZABLE)",
		"transaction_isolation": "SERIALIZABLE",
	})
	if err != nil {
		return fmt.Errorf("gateway: system variables: %w", err)
	}
	return nil
}

// Addr is the address the gateway listens on.
func (g *Gateway) Addr() net.Addr { return g.lis.Addr() }

// Metrics returns the gateway's metrics (a fast path records what it
// answers there).
func (g *Gateway) Metrics() *Metrics { return g.metrics }

// Serve accepts connections until Shutdown; it returns nil then.
func (g *Gateway) Serve() error {
	err := g.srv.Start()
	select {
	case g.serveErr <- err:
	default:
	}
	return err
}

// Shutdown stops the gateway gracefully: it stops accepting connections,
// refuses new statements (ER_SERVER_SHUTDOWN, so clients reconnect
// elsewhere), waits for the statements running to finish, then closes every
// connection (an explicit transaction still open there ends without
// committing: nothing of it is applied). When ctx ends first, running
// statements are cancelled and connections closed at once; Shutdown returns
// ctx's error then. It does not close the engine or the client.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if !g.draining {
		g.draining = true
		g.idle, g.noConns = make(chan struct{}), make(chan struct{})
		g.signalLocked()
	}
	idle, noConns := g.idle, g.noConns
	g.mu.Unlock()
	_ = g.srv.Close() // stops the accept loop

	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = fmt.Errorf("gateway: statements still running at shutdown were cancelled: %w", ctx.Err())
		g.stopNow()
	}
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	select {
	case <-noConns:
	case <-ctx.Done():
		g.stopNow()
		if err == nil {
			err = fmt.Errorf("gateway: connections still closing at shutdown: %w", ctx.Err())
		}
		// A connection's goroutine ends when its statement notices the
		// cancellation; give it a moment, bounded.
		select {
		case <-noConns:
		case <-time.After(2 * time.Second):
		}
	}
	g.stopNow()
	return err
}

// begin registers a statement; done ends it. During a shutdown it refuses.
func (g *Gateway) begin() (done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return nil, mysql.NewSQLError(mysql.ERServerShutdown, mysql.SSNetError, "Server shutdown in progress: reconnect to another gateway")
	}
	g.active++
	return func() {
		g.mu.Lock()
		g.active--
		g.signalLocked()
		g.mu.Unlock()
	}, nil
}

// statementContext is the context of one statement: the connection's,
// also cancelled when Shutdown gives up waiting.
func (g *Gateway) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(g.stop, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

func (g *Gateway) addConn(c *mysql.Conn) {
	g.metrics.accepted.Inc()
	g.metrics.conns.Inc()
	g.mu.Lock()
	g.conns[c.ConnectionID] = c
	draining := g.draining
	g.mu.Unlock()
	if draining {
		c.Close()
	}
	g.log.Debug("connection opened", "conn", c.ConnectionID, "remote", remoteOf(c))
}

func (g *Gateway) removeConn(c *mysql.Conn) {
	g.metrics.conns.Dec()
	g.mu.Lock()
	delete(g.conns, c.ConnectionID)
	g.signalLocked()
	g.mu.Unlock()
	g.log.Debug("connection closed", "conn", c.ConnectionID, "user", c.User)
}

// signalLocked closes the drain channels whose condition holds.
func (g *Gateway) signalLocked() {
	if !g.draining {
		return
	}
	if g.active == 0 {
		select {
		case <-g.idle:
		default:
			close(g.idle)
		}
	}
	if len(g.conns) == 0 {
		select {
		case <-g.noConns:
		default:
			close(g.noConns)
		}
	}
}
