package cli

import (
	"context"
	gosql "database/sql"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// runDemoScript runs the demo with a console script on stdin.
func runDemoScript(t *testing.T, dir string, base int, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	err := runDemo(ctx, strings.NewReader(script), &out, &errb, demoOptions{
		dir: dir, groups: 2, basePort: base, callTimeout: 20 * time.Second, readyWait: 60 * time.Second, grace: 10 * time.Second,
		listen: "127.0.0.1:0",
	})
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.NoError(t, ctx.Err(), "the demo did not finish in time")
	return out.String()
}

// The console runs transactions across the two groups of a real 2×4
// cluster, shows where keys live, covers every replica in status, goes on
// after a bad line, and commits with a replica of each group killed.
func TestDemoConsoleRunsCrossGroupTransactionsAndSurvivesKilledReplicas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	out := runDemoScript(t, dir, base, strings.Join([]string{
		"help",
		"insert a 1; insert été 2",
		"read a; read été; read nope",
		"where a été",
		"read a; frobnicate k",
		"write a",
		"frobnicate",
		"insert a again",
		"status",
		"kill g1r2",
		"kill g0r0",
		"write a 3; write été 4",
		"read a; read été",
		"restart g1r2",
		"kill r9",
		"quit",
		"read a",
	}, "\n")+"\n")
	t.Log(out)
	for _, want := range []string{
		"Created the local cluster in " + dir + "; started 8 replicas in 2 groups",
		`group 0 (keys from "" to "\x80")`,
		"Try: insert a 1; insert été 2",
		"where KEY...",
		"augustus> insert a 1; insert été 2\ncommitted (multi-group update, groups 0, 1,",
		"committed (multi-group read-only, groups 0, 1,",
		`"été"  group 1  (replicas g1r0, g1r1, g1r2, g1r3)`,
		"augustus> read a; frobnicate k\nerror: operation 2 (frobnicate k): unknown operation \"frobnicate\"",
		"augustus> write a\nerror: operation 1 (write a): want write KEY VALUE\n",
		"augustus> frobnicate\nunknown command \"frobnicate\": type help",
		"aborted: key exists at operation 0 (insert a again), at group 0",
		"killed g1r2 (SIGKILL). Group 1: 1 of 4 replicas down: it still answers (it tolerates f=1).",
		"killed g0r0 (SIGKILL). Group 0: 1 of 4 replicas down: it still answers",
		"started g1r2",
		`unknown replica "r9"`,
		"Stopped. The cluster and its data stay in " + dir,
	} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `0\s+read a\s+0\s+"1"`, out)
	require.Regexp(t, `1\s+read été\s+1\s+"2"`, out)
	require.Regexp(t, `2\s+read nope\s+0\s+absent`, out)
	require.Regexp(t, `0\s+read a\s+0\s+"3"`, out, "the transaction after the kills committed")
	require.Regexp(t, `1\s+read été\s+1\s+"4"`, out)
	status := out[strings.Index(out, "augustus> status"):strings.Index(out, "augustus> kill g1r2")]
	require.Contains(t, status, "Group 0 (keys")
	require.Contains(t, status, "Group 1 (keys")
	require.Equal(t, 8, strings.Count(status, "up (pid"), status)
	require.Regexp(t, `g1r0\s+up \(pid \d+\)\s+\d+\s+g1r\d\s+\d+\s+\d+`, status, "view, primary, executed and stable of a replica")
	require.NotContains(t, out, "error: context")
	require.NotContains(t, out, "no outcome within")
	require.FileExists(t, filepath.Join(dir, cluster.FileName))
	require.FileExists(t, filepath.Join(dir, "logs", "g1r3.log"))
}

func TestDemoReusesItsClusterAndKeepsTheData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 replicas twice")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	runDemoScript(t, dir, base, "insert k first\n")
	out := runDemoScript(t, dir, base+1000, "read k\nstatus\n") // the port flag only applies to a new cluster
	require.Contains(t, out, "Reusing the local cluster in "+dir)
	require.Regexp(t, `0\s+read k\s+0\s+"first"`, out)
	require.Contains(t, out, "up (pid")
}

func TestDemoSaysWhichPortIsTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 12)
	other := filepath.Join(t.TempDir(), "other")
	code, _, stderr := runMain(t, "init", "--dir", other, "--groups", "1", "--base-port", fmt.Sprint(base))
	require.Equal(t, 0, code, stderr)
	startCluster(t, other, appLog)
	var out, errb syncBuffer
	err := runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{dir: dir, groups: 2, basePort: base, callTimeout: time.Second, readyWait: time.Second, grace: time.Second, listen: "127.0.0.1:0"})
	require.ErrorContains(t, err, fmt.Sprintf("127.0.0.1:%d of replica g0r0 is not free", base))
	_, statErr := os.Stat(filepath.Join(dir, "data"))
	require.True(t, os.IsNotExist(statErr), "no replica started")
}

func TestDemoRejectsNonsenseDurationsAndPorts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grace", "-1s"}, "--grace -1s: must be positive"},
		{[]string{"--call-timeout", "0s"}, "--call-timeout 0s: must be positive"},
		{[]string{"--ready-timeout", "-2s"}, "--ready-timeout -2s: must be positive"},
		{[]string{"--base-port", "70000"}, "--base-port 70000: want 1..65512 (a new cluster of 2 groups takes 24 ports from it)"},
		{[]string{"--groups", "0"}, "--groups 0: want 1..8"},
	} {
		dir := filepath.Join(t.TempDir(), "demo")
		code, _, stderr := runMain(t, append([]string{"demo", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "nothing created")
	}
}

// A reused demo directory whose group cannot start (here: more than f of
// group 0's data directories are files, as a store another build wrote
// would fail too) fails at once with each replica's reason and how to start
// over, not after the whole wait for the groups.
func TestDemoSaysAtOnceWhyAGroupCannotStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	code, _, stderr := runMain(t, "init", "--dir", dir, "--groups", "2", "--base-port", fmt.Sprint(base))
	require.Equal(t, 0, code, stderr)
	for _, name := range []string{"g0r0", "g0r1"} {
		p := filepath.Join(dir, "data", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("not a store"), 0o644))
	}
	var out, errb syncBuffer
	start := time.Now()
	err := runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{
		dir: dir, groups: 2, basePort: base, callTimeout: time.Second, readyWait: time.Minute, grace: 5 * time.Second, listen: "127.0.0.1:0"})
	require.Error(t, err)
	require.Less(t, time.Since(start), 30*time.Second, "not after the minute of waiting")
	require.ErrorContains(t, err, "group 0 cannot answer")
	require.ErrorContains(t, err, "g0r0: ")
	require.ErrorContains(t, err, "g0r1: ")
	require.ErrorContains(t, err, "delete "+dir)
}

// With --no-shell the demo runs the cluster and the gateway until it is
// told to stop: a MySQL client finds the example database (tables in both
// groups, joined), creates a table and writes across groups, and the demo
// then stops cleanly.
func TestDemoServesSQLWithTheExampleDatabaseUntilStopped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, strings.NewReader(""), &out, &errb, demoOptions{
			dir: dir, groups: 2, basePort: base, callTimeout: 20 * time.Second, readyWait: 60 * time.Second,
			grace: 10 * time.Second, listen: "127.0.0.1:0", noShell: true,
		})
	}()
	hint := regexp.MustCompile(`SQL: mysql -h 127\.0\.0\.1 -P (\d+) -u root\n`)
	var port string
	require.Eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the demo ended before serving: %v\n%s\n%s", err, out.String(), errb.String())
		default:
		}
		m := hint.FindStringSubmatch(out.String())
		if m != nil {
			port = m[1]
		}
		return m != nil
	}, 2*time.Minute, 100*time.Millisecond, "the demo prints the connection hint")
	require.Contains(t, out.String(), "database demo was loaded with customers (group 0), products (group 1)")
	require.NotContains(t, out.String(), "augustus>", "no console")

	db, err := gosql.Open("mysql", "root@tcp(127.0.0.1:"+port+")/demo?timeout=10s")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query("SELECT c.name, p.title, o.qty FROM orders o JOIN customers c ON c.id = o.customer_id JOIN products p ON p.sku = o.sku WHERE c.city = 'Boston' ORDER BY o.id")
	require.NoError(t, err)
	var got []string
	for rows.Next() {
		var name, title string
		var qty int
		require.NoError(t, rows.Scan(&name, &title, &qty))
		got = append(got, fmt.Sprintf("%s/%s/%d", name, title, qty))
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"Barbara Liskov/Headphones/1", "Nancy Lynch/USB-C cable/5", "Nancy Lynch/Trackball/2"}, got)

	// A transaction across the groups: an order (group 1's part of orders)
	// and the stock of its product (group 1) and a new customer (group 0).
	tx, err := db.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO customers VALUES (7, 'Edsger Dijkstra', 'Austin')")
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO orders (customer_id, sku, qty) VALUES (7, 'KB-01', 1)")
	require.NoError(t, err)
	_, err = tx.Exec("UPDATE products SET stock = stock - 1 WHERE sku = 'KB-01'")
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	var stock, orders int
	require.NoError(t, db.QueryRow("SELECT stock FROM products WHERE sku = 'KB-01'").Scan(&stock))
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders WHERE customer_id = 7").Scan(&orders))
	require.Equal(t, 39, stock)
	require.Equal(t, 1, orders)
	_, err = db.Exec("CREATE TABLE notes (id INT PRIMARY KEY, body TEXT)")
	require.NoError(t, err, "the demo's gateway has the admin key")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(90 * time.Second):
		t.Fatal("the demo did not stop")
	}
	require.Contains(t, out.String(), "Stopped. The cluster and its data stay in "+dir)
	logData, err := os.ReadFile(filepath.Join(dir, "logs", "gateway.log"))
	require.NoError(t, err)
	require.Contains(t, string(logData), "gateway serving MySQL")
}

func TestDemoSaysTheMySQLPortIsTaken(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	var out, errb syncBuffer
	err = runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{
		dir: dir, groups: 2, basePort: base, callTimeout: time.Second, readyWait: time.Second, grace: time.Second, listen: lis.Addr().String()})
	require.ErrorContains(t, err, lis.Addr().String()+" is taken")
	require.ErrorContains(t, err, "--listen")
	_, statErr := os.Stat(filepath.Join(dir, "data"))
	require.True(t, os.IsNotExist(statErr), "no replica started")
}
