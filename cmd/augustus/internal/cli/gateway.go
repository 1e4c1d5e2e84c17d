package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/sql/engine"
	"github.com/augustus-db/augustus/pkg/sql/gateway"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

type gatewayOptions struct {
	dir            string
	listen         string
	client         string
	admin          string
	tlsCert        string
	tlsKey         string
	requireTLS     bool
	metricsAddr    string
	logLevel       string
	maxConns       uint64
	retryRows      int
	drain          time.Duration
	connectTimeout time.Duration
}

// defaultMySQLAddr is where the gateway and the demo listen by default:
// MySQL's port, on loopback only.
const defaultMySQLAddr = "127.0.0.1:3306"

func newGatewayCommand() *cobra.Command {
	o := gatewayOptions{}
	cmd := &cobra.Command{
		Use:   "gateway --dir DIR [--listen HOST:PORT]",
		Short: "Serve SQL over the MySQL protocol on the cluster in DIR",
		Long: `Serve the cluster in DIR to MySQL clients (the mysql CLI, drivers, ORMs,
sysbench) over the MySQL protocol. The gateway is stateless: it runs SQL
statements as short transactions on the replicas, verifying their quorums,
and holds no data, so several gateways can serve one cluster side by side
(each with its own client key).

Accounts come from cluster.json (sql_users). augustus init creates root with
a generated password, stored there as MySQL's password hash; the password is
in DIR/keys/sql-root.password. mysql_native_password and
caching_sha2_password accounts are supported; caching_sha2_password needs TLS
(--tls-cert, --tls-key), which clients may always use when it is configured.

Every transaction is SERIALIZABLE. An autocommit statement that meets a
conflicting transaction is retried inside the gateway before the client sees
anything: it holds the rows of its result until it commits, at most
--retry-rows of them; a larger result streams past that point, and a
conflict found after it reaches the client (error 1213 if the gateway had
sent nothing yet, else a closed connection, 2013). In an explicit transaction
a conflict surfaces as error 1213 and the client restarts the transaction.

Schema changes (CREATE, ALTER, DROP, ...) need an admin key of the cluster
(--admin admin0); without one the gateway refuses them and serves everything
else. The client key (--client) signs the gateway's transactions; two
processes must not use one client key at the same time.

Metrics (augustus_sql_*, and the transaction client's augustus_txn_*) are
served on --metrics-addr. SIGTERM or Ctrl-C stops the gateway gracefully: it
stops accepting connections, lets running statements finish (at most
--drain-timeout), then closes the connections; a transaction still open there
ends without committing.`,
		Example: `  augustus init --dir ./cluster --groups 2
  augustus start --dir ./cluster &
  augustus gateway --dir ./cluster --admin admin0
  mysql -h 127.0.0.1 -P 3306 -u root -p"$(cat ./cluster/keys/sql-root.password)"

  # another port, metrics, TLS
  augustus gateway --dir ./cluster --listen 0.0.0.0:3307 --metrics-addr 127.0.0.1:9104 \
      --tls-cert server.crt --tls-key server.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGateway(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json and keys/; required)")
	fl.StringVar(&o.listen, "listen", defaultMySQLAddr, "HOST:PORT to serve MySQL on")
	fl.StringVar(&o.client, "client", "", "client key name in cluster.json (default: the first client listed)")
	fl.StringVar(&o.admin, "admin", "", "admin key name in cluster.json (e.g. admin0): lets the gateway run schema changes")
	fl.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate for TLS connections (with --tls-key)")
	fl.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fl.BoolVar(&o.requireTLS, "require-tls", false, "refuse clients that do not use TLS")
	fl.StringVar(&o.metricsAddr, "metrics-addr", "", "HOST:PORT to serve Prometheus /metrics on (default: none)")
	fl.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error (on stderr)")
	fl.Uint64Var(&o.maxConns, "max-connections", 1000, "most client connections at once (0: no bound)")
	fl.IntVar(&o.retryRows, "retry-rows", 4096, "most rows of an autocommit statement's result held until it commits, so that a conflict can be retried (> 0)")
	fl.DurationVar(&o.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long running statements get to finish")
	fl.DurationVar(&o.connectTimeout, "connect-timeout", 60*time.Second, "how long to wait at start for every group to answer")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

func runGateway(ctx context.Context, stdout, stderr io.Writer, o gatewayOptions) error {
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		what string
	}{
		{"drain-timeout", o.drain, "how long running statements get to finish"},
		{"connect-timeout", o.connectTimeout, "how long to wait for the groups at start"},
	} {
		if err := checkPositive(d.flag, d.v, d.what); err != nil {
			return err
		}
	}
	if o.retryRows < 1 {
		return fmt.Errorf("--retry-rows %d: must be positive", o.retryRows)
	}
	tlsCfg, err := gatewayTLS(o.tlsCert, o.tlsKey, o.requireTLS)
	if err != nil {
		return err
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	users := gatewayUsers(c)
	if len(users) == 0 {
		return fmt.Errorf("gateway: %s lists no SQL account (sql_users): add one, e.g. "+
			`"sql_users": [{"name": "root", "auth_string": "%s"}] for root with password 'secret' `+
			"(auth_string is MySQL's mysql_native_password hash, \"*\" and the hex of SHA1(SHA1(password)); an empty one means no password)",
			cluster.FileName, cluster.NativePasswordHash("secret"))
	}
	clientName := o.client
	if clientName == "" {
		if len(c.Clients) == 0 {
			return errors.New("gateway: cluster.json lists no client: add one (augustus init --clients N) or pass --client")
		}
		clientName = c.Clients[0].Name
	}
	key, err := txnClientKey(c, txnOptions{dir: o.dir, client: clientName})
	if err != nil {
		return err
	}
	var admin ed25519.PrivateKey
	if o.admin != "" {
		if _, err := c.Admin(o.admin); err != nil {
			return fmt.Errorf("--admin %q: %w", o.admin, err)
		}
		if admin, err = cluster.LoadAdminKey(o.dir, o.admin); err != nil {
			return fmt.Errorf("--admin %q: %w", o.admin, err)
		}
	}
	pmap, err := oracle.FromCluster(c)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Bind the addresses first: a busy port fails at once, before the
	// wait for the groups.
	lis, err := listenMySQL(o.listen)
	if err != nil {
		return err
	}
	defer lis.Close()
	var metricsLis net.Listener
	if o.metricsAddr != "" {
		if metricsLis, err = net.Listen("tcp", o.metricsAddr); err != nil {
			return fmt.Errorf("gateway: --metrics-addr %s: %w", o.metricsAddr, err)
		}
		defer metricsLis.Close()
	}

	connectCtx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	cl, err := coord.NewClient(connectCtx, coord.ClientConfig{
		Cluster: c, Key: key, Admin: admin, Map: pmap, Logger: logger, Registerer: reg,
		GroupTimeout: 500 * time.Millisecond, DrainTimeout: 10 * time.Second,
	})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, coord.ErrNotTxnEngine) && errors.Is(err, client.ErrRejected) {
			// The replicas refused the start-up query itself: an
			// application other than the transaction engine (log refuses
			// it as a malformed call).
			return fmt.Errorf("gateway: connect to the cluster: %w (do the replicas run the transaction engine? augustus start --dir %s --app txn)", err, o.dir)
		}
		return fmt.Errorf("gateway: connect to the cluster: %w", withAppHint(err, o.dir))
	}
	defer cl.Close()

	gw, err := startGateway(ctx, gatewayParams{
		client: cl, listener: lis, users: users, tls: tlsCfg, requireTLS: o.requireTLS,
		logger: logger, registerer: reg, maxConns: o.maxConns, retryRows: o.retryRows,
	})
	if err != nil {
		return err
	}
	if metricsLis != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(metricsLis) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	ddl := "schema changes with admin key " + o.admin
	if o.admin == "" {
		ddl = "no admin key: schema changes are refused (--admin admin0 allows them)"
	}
	fmt.Fprintf(stdout, "augustus gateway: serving MySQL on %s for cluster %s (%d groups; client key %s; %s)\n",
		gw.gw.Addr(), c.ClusterID, len(c.Groups), clientName, ddl)
	if o.metricsAddr != "" {
		fmt.Fprintf(stdout, "metrics: http://%s/metrics\n", metricsLis.Addr())
	}
	fmt.Fprintf(stdout, "connect: %s\n", mysqlHint(gw.gw.Addr().String(), c, o.dir))

	select {
	case <-ctx.Done():
	case err := <-gw.done:
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	fmt.Fprintf(stdout, "augustus gateway: stopping (running statements get up to %s)...\n", o.drain)
	if err := gw.stop(o.drain); err != nil {
		logger.Warn("gateway shutdown", "err", err)
	}
	fmt.Fprintln(stdout, "augustus gateway: stopped.")
	return nil
}

// gatewayParams is what startGateway needs: the gateway command and the demo
// share it.
type gatewayParams struct {
	client     *coord.Client
	listener   net.Listener
	users      []gateway.User
	tls        *tls.Config
	requireTLS bool
	logger     *slog.Logger
	registerer prometheus.Registerer
	maxConns   uint64
	retryRows  int // 0: the engine's default
}

// runningGateway is a started gateway and its engine.
type runningGateway struct {
	gw   *gateway.Gateway
	eng  *engine.Engine
	done chan error
	log  *slog.Logger
	// onStop, if set, runs after the gateway stopped (the demo closes its
	// log file).
	onStop func()
}

// startGateway builds the engine over the client (loading the catalog) and
// serves the gateway on the listener.
func startGateway(ctx context.Context, p gatewayParams) (*runningGateway, error) {
	gateway.RouteLibraryLogs(p.logger)
	metrics := gateway.NewMetrics(p.registerer)
	eng, err := engine.New(ctx, engine.Config{
		Client: p.client, Logger: p.logger, RetryRows: p.retryRows, OnRetry: metrics.Retried,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	gw, err := gateway.New(gateway.Config{
		Engine: eng, Listener: p.listener, Users: p.users, TLS: p.tls, RequireTLS: p.requireTLS,
		Metrics: metrics, Logger: p.logger, MaxConnections: p.maxConns,
	})
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	r := &runningGateway{gw: gw, eng: eng, done: make(chan error, 1), log: p.logger}
	go func() { r.done <- gw.Serve() }()
	p.logger.Info("gateway serving MySQL", "addr", gw.Addr(), "accounts", len(p.users), "tls", p.tls != nil, "ddl", p.client.HasAdmin())
	return r, nil
}

// stop drains the gateway for at most timeout and closes its engine.
func (r *runningGateway) stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := r.gw.Shutdown(ctx)
	<-r.done
	r.log.Info("gateway stopped", "err", err)
	if r.onStop != nil {
		defer r.onStop()
	}
	if cerr := r.eng.Close(); cerr != nil && !errors.Is(cerr, context.Canceled) && err == nil {
		err = cerr
	}
	return err
}

// listenMySQL binds the MySQL address, saying what to do when it is taken.
func listenMySQL(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			return nil, fmt.Errorf("%s is taken: is a MySQL server or another gateway running there? Stop it, or pass another address with --listen (e.g. --listen 127.0.0.1:3307): %w", addr, err)
		}
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	return lis, nil
}

// gatewayUsers turns the cluster's SQL accounts into the gateway's.
func gatewayUsers(c *cluster.Cluster) []gateway.User {
	users := make([]gateway.User, 0, len(c.SQLUsers))
	for _, u := range c.SQLUsers {
		users = append(users, gateway.User{Name: u.Name, Host: u.EffectiveHost(), Plugin: u.EffectivePlugin(), AuthString: u.AuthString})
	}
	return users
}

// gatewayTLS loads --tls-cert and --tls-key.
func gatewayTLS(cert, key string, require bool) (*tls.Config, error) {
	switch {
	case cert == "" && key == "":
		if require {
			return nil, errors.New("--require-tls needs --tls-cert and --tls-key")
		}
		return nil, nil
	case cert == "" || key == "":
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// mysqlHint is the mysql command line that connects to addr as root.
func mysqlHint(addr string, c *cluster.Cluster, dir string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "3306"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	cmd := fmt.Sprintf("mysql -h %s -P %s -u root", host, port)
	for _, u := range c.SQLUsers {
		if u.Name == cluster.SQLRootName && u.AuthString != "" {
			return cmd + fmt.Sprintf(` -p"$(cat %s)"`, cluster.SQLRootPasswordPath(dir))
		}
	}
	return cmd
}
