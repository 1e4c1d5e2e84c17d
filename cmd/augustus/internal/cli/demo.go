package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

type demoOptions struct {
	dir         string
	groups      int
	basePort    int
	callTimeout time.Duration
	readyWait   time.Duration
	grace       time.Duration
	listen      string
	noShell     bool
}

func newDemoCommand() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a local cluster, a MySQL gateway and a transaction console on it",
		Long: `Create (or reuse) a local cluster in --dir — 2 groups of 4 replicas (f=1) on
127.0.0.1, running the transaction engine — start its replicas as child
processes, wait until every group answers, serve SQL over the MySQL protocol
on --listen (127.0.0.1:3306), and open a console where you run transactions
across the groups (the syntax of augustus txn: 'insert a 1; insert été 2'),
see which group each key lives in (where KEY), watch every replica's view and
progress (status), and kill -9 and restart replicas to see each group survive
one fault.

SQL: connect with mysql -h 127.0.0.1 -P 3306 -u root (the demo's root has no
password; the gateway listens on loopback only). On its first start the demo
loads the example database demo: customers in group 0, products in the last
group, orders split by id over both, with secondary indexes. The gateway runs
in the demo's process with the cluster's admin key, so CREATE TABLE and the
other schema changes work; its log is DIR/logs/gateway.log. --no-shell runs
the cluster and the gateway without the console, for other clients, until
Ctrl-C or SIGTERM.

The keys are range-partitioned over the groups: with 2 groups, keys whose
first byte is below 0x80 (every ASCII key) live in group 0, the others (e.g.
été) in group 1. The SQL shell takes the console's place when the SQL layer
lands. Replica logs go to DIR/logs/. Leaving the console stops the replicas;
their state stays in DIR, so the next "augustus demo" continues where this one
stopped (--groups and --base-port only apply to a new cluster). The console
uses the client key client0 (the gateway shares it); "augustus txn --dir DIR"
(client1) can run transactions from another terminal at the same time. SQL
tables live in keys that start with byte 0xF5, which no text key does, so the
console's keys and the SQL rows never meet.`,
		Example: `  augustus demo
  mysql -h 127.0.0.1 -P 3306 -u root demo      # in another terminal
  augustus demo --dir /tmp/demo --base-port 7100 --groups 3 --listen 127.0.0.1:3307
  augustus demo --no-shell                       # cluster and gateway only, until Ctrl-C
  printf 'insert a 1; insert été 2\nread a; read été\nstatus\nquit\n' | augustus demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "augustus-demo", "cluster directory; created with a new cluster if it holds none")
	fl.IntVar(&o.groups, "groups", 2, "groups of 4 replicas in a new cluster")
	fl.IntVar(&o.basePort, "base-port", 7000, "first port of a new cluster (12 per group: peer, client, metrics per replica)")
	fl.DurationVar(&o.callTimeout, "call-timeout", 15*time.Second, "how long a console transaction waits for its outcome")
	fl.DurationVar(&o.readyWait, "ready-timeout", 60*time.Second, "how long to wait for every group to answer at start")
	fl.DurationVar(&o.grace, "grace", 10*time.Second, "how long replicas get to stop after SIGTERM before SIGKILL")
	fl.StringVar(&o.listen, "listen", defaultMySQLAddr, "HOST:PORT of the MySQL gateway")
	fl.BoolVar(&o.noShell, "no-shell", false, "no console: run the cluster and the gateway until Ctrl-C or SIGTERM")
	return cmd
}

func runDemo(ctx context.Context, in io.Reader, stdout, stderr io.Writer, o demoOptions) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
		what string
	}{
		{"call-timeout", o.callTimeout, "how long a console transaction waits for its outcome"},
		{"ready-timeout", o.readyWait, "how long to wait for the groups at start"},
		{"grace", o.grace, "how long replicas get to stop after SIGTERM"},
	} {
		if err := checkPositive(d.flag, d.v, d.what); err != nil {
			return err
		}
	}
	if o.groups < 1 || o.groups > maxDemoGroups {
		return fmt.Errorf("--groups %d: want 1..%d", o.groups, maxDemoGroups)
	}
	if ports := 12 * o.groups; o.basePort < 1 || o.basePort > 65536-ports {
		return fmt.Errorf("--base-port %d: want 1..%d (a new cluster of %d groups takes %d ports from it)", o.basePort, 65536-ports, o.groups, ports)
	}
	if o.listen == "" {
		o.listen = defaultMySQLAddr
	}
	c, created, err := demoCluster(stdout, o)
	if err != nil {
		return err
	}
	if err := checkPortsFree(c); err != nil {
		return err
	}
	// The gateway's address is bound before any replica starts: a taken
	// port fails the demo at once.
	sqlLis, err := listenMySQL(o.listen)
	if err != nil {
		return fmt.Errorf("demo: the MySQL gateway's %w", err)
	}
	defer sqlLis.Close()
	logDir := filepath.Join(o.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("demo: replica log directory: %w", err)
	}
	// The console's kill and restart are how the demo shows faults, so its
	// supervisor never restarts a replica on its own.
	sup, err := newSupervisor(supervisorConfig{
		args: func(name string) []string {
			return []string{"replica", "--dir", o.dir, "--id", name, "--app", appTxn, "--log-level", "info"}
		},
		output: func(name string) (io.Writer, func(), error) {
			f, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, nil, err
			}
			return f, func() { _ = f.Close() }, nil
		},
		policy: restartNever,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintf(stdout, "Stopping the replicas...\n")
		if killed := sup.Close(o.grace); len(killed) > 0 {
			fmt.Fprintf(stdout, "Replicas %s did not stop within %s and were killed.\n", strings.Join(killed, ", "), o.grace)
		}
		fmt.Fprintf(stdout, "Stopped. The cluster and its data stay in %s: run augustus demo --dir %s to continue, or delete it.\n", o.dir, o.dir)
	}()
	names := replicaNames(c)
	for _, name := range names {
		if _, err := sup.Start(name); err != nil {
			return err
		}
	}
	verb := "Reusing"
	if created {
		verb = "Created"
	}
	fmt.Fprintf(stdout, "%s the local cluster in %s; started %d replicas in %d groups (logs in %s).\n", verb, o.dir, len(names), len(c.Groups), logDir)
	if !created && len(c.Groups) < 2 {
		fmt.Fprintf(stdout, "It has one group, so no transaction spans groups: for the %d-group demo, delete %s or pass another --dir.\n", o.groups, o.dir)
	}

	key, err := cluster.LoadClientKey(o.dir, c.Clients[0].Name)
	if err != nil {
		return err
	}
	pmap, err := oracle.FromCluster(c)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var admin ed25519.PrivateKey
	if len(c.Admins) > 0 {
		if admin, err = cluster.LoadAdminKey(o.dir, c.Admins[0].Name); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	fmt.Fprintf(stdout, "Waiting for the groups to answer...\n")
	// The client connects to every group and asks each for what it holds
	// of this client (W3): when that returns, every group answers.
	readyCtx, cancelReady := context.WithTimeout(ctx, o.readyWait)
	// A group with more than f replicas that exited (the demo's supervisor
	// does not restart them: a bad key, a data directory written by another
	// build) will never answer: say why at once instead of after readyWait.
	stuckCtx, stuck := context.WithCancelCause(readyCtx)
	stopWatch := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for {
			if err := groupsLeftDown(c, sup); err != nil {
				stuck(err)
				return
			}
			select {
			case <-stopWatch:
				return
			case <-stuckCtx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	reg := prometheus.NewRegistry()
	cl, err := coord.NewClient(stuckCtx, coord.ClientConfig{
		Cluster: c, Key: key, Admin: admin, Map: pmap, Logger: quiet, Registerer: reg,
		GroupTimeout: 500 * time.Millisecond, DrainTimeout: 5 * time.Second,
	})
	close(stopWatch)
	<-watchDone
	cause := context.Cause(stuckCtx)
	cancelReady()
	if err != nil {
		var down *groupDownError
		if errors.As(cause, &down) {
			return fmt.Errorf("demo: %w (logs in %s; to start a new demo cluster instead, delete %s)", down, logDir, o.dir)
		}
		return fmt.Errorf("demo: the groups did not answer within %s (see the logs in %s): %w", o.readyWait, logDir, err)
	}
	// Close lets the console's last transaction finish terminating before
	// the replicas stop (deferred after the supervisor, so it runs first).
	defer cl.Close()

	gw, state, err := demoGateway(ctx, o, c, cl, sqlLis, reg, logDir)
	if err != nil {
		return err
	}
	// Deferred last, so it stops first: the gateway drains while the client
	// and the replicas still serve.
	defer func() {
		if err := gw.stop(o.grace); err != nil {
			fmt.Fprintf(stdout, "The gateway stopped with: %v\n", err)
		}
	}()
	sqlBanner := demoSQLBanner(mysqlHint(gw.gw.Addr().String(), c, o.dir), len(c.Groups), state)
	if o.noShell {
		fmt.Fprintf(stdout, "\n%s\nThe cluster and the gateway run until Ctrl-C or SIGTERM (no console: --no-shell).\n", sqlBanner)
		select {
		case <-ctx.Done():
		case err := <-gw.done:
			if err != nil {
				return fmt.Errorf("demo: the gateway stopped: %w", err)
			}
		}
		return nil
	}
	k := &console{out: stdout, cl: cl, pmap: pmap, reg: reg, sup: sup, c: c, f: c.F, callTimeout: o.callTimeout,
		example: crossGroupExample(pmap)}
	fmt.Fprint(stdout, "\n"+sqlBanner)
	fmt.Fprint(stdout, demoBanner(c, pmap, k.example))
	lines, err := newLineReader(ctx, in, stdout, filepath.Join(o.dir, ".console_history"))
	if err != nil {
		return err
	}
	defer lines.Close()
	_, k.echo = lines.(*pipeReader)
	return k.run(ctx, lines)
}

// demoGateway starts the demo's gateway over the console's client, logging
// to logDir/gateway.log, and loads the example database on a new cluster.
func demoGateway(ctx context.Context, o demoOptions, c *cluster.Cluster, cl *coord.Client, lis net.Listener,
	reg *prometheus.Registry, logDir string) (*runningGateway, demoState, error) {
	f, err := os.OpenFile(filepath.Join(logDir, "gateway.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, demoAbsent, fmt.Errorf("demo: gateway log: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	gw, err := startGateway(ctx, gatewayParams{
		client: cl, listener: lis, users: gatewayUsers(c), logger: logger, registerer: reg,
		maxConns: 200,
	})
	if err != nil {
		_ = f.Close()
		return nil, demoAbsent, fmt.Errorf("demo: %w", err)
	}
	gw.onStop = func() { _ = f.Close() }
	state, err := loadDemoDatabase(ctx, gw.eng, len(c.Groups), len(c.Admins) > 0)
	if err != nil {
		_ = gw.stop(o.grace)
		return nil, demoAbsent, err
	}
	return gw, state, nil
}

// maxDemoGroups bounds --groups: every replica is a process on this machine.
const maxDemoGroups = 8

// crossGroupExample is a transaction over keys of two groups of m, or "".
func crossGroupExample(m *oracle.Map) string {
	// Candidates: an ASCII key and keys whose first byte is high, which
	// the default map puts in group 0 and in later groups.
	first := []byte("a")
	for _, other := range []string{"été", "ünder", "\xc0k", "\xe0k", "\xf0k"} {
		if m.KeyGroup([]byte(other)) != m.KeyGroup(first) {
			lit := other
			if !utf8.ValidString(other) {
				lit = quote([]byte(other))
			}
			return fmt.Sprintf("insert a 1; insert %s 2   then   read a; read %s", lit, lit)
		}
	}
	return ""
}

func demoBanner(c *cluster.Cluster, m *oracle.Map, example string) string {
	var b strings.Builder
	n := 0
	if len(c.Groups) > 0 {
		n = len(c.Groups[0].Replicas)
	}
	fmt.Fprintf(&b, "\nEvery group answers: %d groups of %d replicas, each ordering calls with PBFT and\n", len(c.Groups), n)
	fmt.Fprintf(&b, "tolerating f=%d faulty, running the Augustus transaction engine.\n\n", c.F)
	k := &console{c: c, pmap: m}
	for _, g := range c.Groups {
		fmt.Fprintf(&b, "  group %d%s\n", g.ID, k.keysOf(bft.GroupID(g.ID)))
	}
	fmt.Fprintf(&b, `
Type a transaction: operations separated by ';' (the syntax of augustus txn)
commit atomically across the groups their keys live in; a group's vote counts
only when f+1 = %d of its replicas return the same one. SQL goes through the
gateway above (mysql); the SQL shell takes this console's place later.
`, c.F+1)
	if example != "" {
		fmt.Fprintf(&b, "Try: %s\n", example)
	}
	b.WriteString("Type help for the commands.\n\n")
	return b.String()
}

// demoCluster loads the cluster in o.dir or creates one.
func demoCluster(stdout io.Writer, o demoOptions) (*cluster.Cluster, bool, error) {
	path := filepath.Join(o.dir, cluster.FileName)
	if _, err := os.Stat(path); err == nil {
		c, err := cluster.Load(path)
		if err != nil {
			return nil, false, err
		}
		if len(c.Clients) == 0 {
			return nil, false, fmt.Errorf("demo: %s lists no client; the demo needs one (or use another --dir)", path)
		}
		if len(c.SQLUsers) == 0 {
			// A demo cluster made before the gateway: give it the demo's
			// root, without a password.
			c.SQLUsers = []cluster.SQLUser{{Name: cluster.SQLRootName, Host: "%", Plugin: cluster.PluginNativePassword}}
			if err := c.Save(path); err != nil {
				return nil, false, fmt.Errorf("demo: add the SQL account root: %w", err)
			}
			fmt.Fprintf(stdout, "Added the SQL account root (no password) to %s.\n", path)
		}
		return c, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("demo: %w", err)
	}
	opts := cluster.DefaultGenerateOptions(o.dir)
	// Two clients: the console uses client0, and augustus txn (the last
	// client by default) can run beside it.
	opts.Groups, opts.BasePort, opts.Clients = o.groups, o.basePort, 2
	// The demo's gateway listens on loopback and its root has no password.
	opts.SQLRoot = cluster.SQLRootNoPassword
	c, err := cluster.Generate(opts)
	if err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// checkPortsFree fails early, and clearly, if a replica address is taken.
func checkPortsFree(c *cluster.Cluster) error {
	for _, g := range c.Groups {
		for _, r := range g.Replicas {
			for _, addr := range []string{r.PeerAddr, r.ClientAddr, r.MetricsAddr} {
				if addr == "" {
					continue
				}
				lis, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("demo: %s of replica %s is not free (is another demo or cluster running? use another --dir and --base-port): %w", addr, r.Name, err)
				}
				_ = lis.Close()
			}
		}
	}
	return nil
}

// groupDownError: a group has more than f replicas that exited and are not
// restarted, so it cannot answer until someone fixes them.
type groupDownError struct {
	group   int
	reasons []string
}

func (e *groupDownError) Error() string {
	return fmt.Sprintf("group %d cannot answer: more than f of its replicas exited at start-up: %s",
		e.group, strings.Join(e.reasons, "; "))
}

// groupsLeftDown returns a *groupDownError for the first group with more
// than f replicas stopped (supervisor.Stopped), or nil.
func groupsLeftDown(c *cluster.Cluster, sup *supervisor) error {
	for _, g := range c.Groups {
		var reasons []string
		for _, r := range g.ReplicasByIndex() {
			if why, down := sup.Stopped(r.Name); down {
				reasons = append(reasons, r.Name+": "+why)
			}
		}
		if len(reasons) > c.F {
			return &groupDownError{group: int(g.ID), reasons: reasons}
		}
	}
	return nil
}
