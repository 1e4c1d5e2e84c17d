package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// sqlCluster is a cluster of 2 groups × 4 `augustus replica` processes
// running the transaction engine, and one `augustus gateway` process in
// front of it, all on loopback.
type sqlCluster struct {
	*testCluster
	gw       *gatewayProc
	password string // root's, from keys/sql-root.password
}

// gatewayProc is an `augustus gateway` process.
type gatewayProc struct {
	cmd     *exec.Cmd
	out     lockedBuffer
	done    chan error
	addr    string // MySQL
	metrics string // Prometheus
}

// newSQLCluster writes a 2-group cluster with augustus init (which makes
// root with a generated password), starts its replicas with --app txn and
// a gateway with the admin key.
func newSQLCluster(t *testing.T) *sqlCluster {
	t.Helper()
	tc := newCluster(t, clusterOptions{groups: 2, clients: 2})
	for _, n := range tc.names {
		tc.start(n, "--app", "txn")
	}
	for _, n := range tc.names {
		tc.waitUp(n)
	}
	pw, err := cluster.ReadSQLRootPassword(tc.dir)
	if err != nil {
		t.Fatal(err)
	}
	sc := &sqlCluster{testCluster: tc, password: pw}
	sc.gw = startGateway(t, tc.dir)
	return sc
}

// startGateway runs `augustus gateway` on free loopback ports and waits
// until it serves.
func startGateway(t *testing.T, dir string, extra ...string) *gatewayProc {
	t.Helper()
	addrs := freeAddrs(t, 2)
	g := &gatewayProc{done: make(chan error, 1), addr: addrs[0], metrics: addrs[1]}
	args := append([]string{"gateway", "--dir", dir, "--listen", g.addr, "--metrics-addr", g.metrics,
		"--admin", "admin0", "--client", "client1", "--log-level", "warn"}, extra...)
	g.cmd = exec.Command(binary, args...)
	g.cmd.Stdout, g.cmd.Stderr = &g.out, &g.out
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.done <- g.cmd.Wait() }()
	t.Cleanup(func() {
		if g.stop(t, 40*time.Second) != nil || t.Failed() {
			t.Logf("---- gateway output ----\n%s", lastLines(g.out.String(), 60))
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(g.out.String(), "serving MySQL on") {
		select {
		case err := <-g.done:
			g.done <- err
			t.Fatalf("the gateway exited (%v):\n%s", err, g.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not serve within 90s:\n%s", g.out.String())
		}
	}
	return g
}

// stop sends SIGTERM and waits for the gateway to exit (SIGKILL after
// timeout); it returns the exit error.
func (g *gatewayProc) stop(t *testing.T, timeout time.Duration) error {
	select {
	case err := <-g.done:
		g.done <- err
		return err
	default:
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-g.done:
		g.done <- err
		return err
	case <-time.After(timeout):
		t.Errorf("the gateway did not stop within %s of SIGTERM; killing it", timeout)
		_ = g.cmd.Process.Kill()
		err := <-g.done
		g.done <- err
		return errors.New("killed")
	}
}

// dsn is a go-sql-driver DSN for root on the gateway.
func (sc *sqlCluster) dsn(db string, params ...string) string {
	q := "timeout=10s&readTimeout=120s&writeTimeout=30s"
	for _, p := range params {
		q += "&" + p
	}
	return fmt.Sprintf("root:%s@tcp(%s)/%s?%s", sc.password, sc.gw.addr, db, q)
}

func (sc *sqlCluster) open(t *testing.T, db string, params ...string) *sql.DB {
	t.Helper()
	d, err := sql.Open("mysql", sc.dsn(db, params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// mustExec runs statements, failing the test on an error.
func mustExec(t *testing.T, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := db.ExecContext(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// mysqlErrno is the MySQL error number of err, 0 if it has none.
func mysqlErrno(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// requireTool finds a client program installed from a Debian package. CI
// (.ci/run) installs them and sets AUGUSTUS_E2E_REQUIRE_CLIENTS=1, so a
// missing one fails there; elsewhere the test is skipped with the command
// that installs it.
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not installed (apt-get install -y %s)", name, pkg)
	if os.Getenv("AUGUSTUS_E2E_REQUIRE_CLIENTS") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func parseMetrics(r io.Reader) (metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	return metrics(fams), err
}

// gatewayMetric scrapes one value from the gateway's /metrics.
func (g *gatewayProc) metric(name string, labels ...string) float64 {
	resp, err := scrapeClient.Get("http://" + g.metrics + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return -1
	}
	return m.value(name, labels...)
}
