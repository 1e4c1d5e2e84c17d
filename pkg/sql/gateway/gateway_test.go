package gateway

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	gosql "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/engine"
	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
	"github.com/augustus-db/augustus/pkg/txn"
)

// testGateway is a gateway on loopback over an engine on an in-memory
// store of two groups.
type testGateway struct {
	g     *Gateway
	eng   *engine.Engine
	reg   *prometheus.Registry
	store *memstore.Store
	done  chan error
}

type gwOptions struct {
	users []User
	admin bool
	cfg   func(*Config)
}

func newTestGateway(t *testing.T, o gwOptions) *testGateway {
	t.Helper()
	st := memstore.New(2)
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	eng, err := engine.New(context.Background(), engine.Config{Store: st, Admin: o.admin, OnRetry: metrics.Retried})
	require.NoError(t, err)
	users := o.users
	if users == nil {
		users = []User{{Name: "root"}}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := Config{Engine: eng, Listener: lis, Users: users, Metrics: metrics}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	g, err := New(cfg)
	require.NoError(t, err)
	tg := &testGateway{g: g, eng: eng, reg: reg, store: st, done: make(chan error, 1)}
	go func() { tg.done <- g.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, g.Shutdown(ctx))
		select {
		case <-tg.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Shutdown")
		}
		if err := eng.Close(); err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	})
	return tg
}

// dsn is a go-sql-driver DSN for user:password on the gateway.
func (tg *testGateway) dsn(user, password, db string, params ...string) string {
	q := "timeout=5s"
	for _, p := range params {
		q += "&" + p
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", user, password, tg.g.Addr(), db, q)
}

func (tg *testGateway) open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// conn is one connection of db (statements of a transaction or a session
// setting must share it).
func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func exec(t *testing.T, c interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, q string, args ...any) sql.Result {
	t.Helper()
	r, err := c.ExecContext(context.Background(), q, args...)
	require.NoError(t, err, q)
	return r
}

// passwordHash is mysql_native_password's hash (cluster.NativePasswordHash).
func passwordHash(pw string) string {
	s1 := sha1.Sum([]byte(pw))
	s2 := sha1.Sum(s1[:])
	return "*" + strings.ToUpper(hex.EncodeToString(s2[:]))
}

func mysqlCode(err error) uint16 {
	var me *gosql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func TestStatementsOverTheWireTextPreparedAndMulti(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: true})
	db := tg.open(t, tg.dsn("root", "", "", "multiStatements=true"))
	ctx := context.Background()
	exec(t, db, "CREATE DATABASE shop")
	exec(t, db, "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2), INDEX by_name (name))")

	// Prepared (go-sql-driver prepares when given arguments).
	r := exec(t, db, "INSERT INTO shop.items VALUES (?, ?, ?), (?, ?, ?)", 1, "apple", "0.50", 2, "pear", "0.75")
	n, err := r.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	var name string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT name FROM shop.items WHERE id = ?", 2).Scan(&name))
	require.Equal(t, "pear", name)

	// Multi-statements: the results of all, in order.
	rows, err := db.QueryContext(ctx, "INSERT INTO shop.items VALUES (3, 'fig', 2.00); SELECT COUNT(*) FROM shop.items; SELECT name FROM shop.items ORDER BY id")
	require.NoError(t, err)
	var sets [][]string
	for {
		var set []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			set = append(set, s)
		}
		sets = append(sets, set)
		if !rows.NextResultSet() {
			break
		}
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Equal(t, [][]string{{"3"}, {"apple", "pear", "fig"}}, sets[len(sets)-2:])

	// Trailing comments are no statement.
	rows, err = db.QueryContext(ctx, "SELECT 1; -- done")
	require.NoError(t, err)
	for rows.NextResultSet() {
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())

	// A failing statement of a multi-statement stops the rest.
	_, err = db.ExecContext(ctx, "INSERT INTO shop.items VALUES (4, 'kiwi', 1); INSERT INTO shop.items VALUES (1, 'dup', 1); INSERT INTO shop.items VALUES (5, 'lime', 1)")
	require.Error(t, err)
	require.EqualValues(t, 1062, mysqlCode(err), "%v", err)
	var count int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT COUNT(*) FROM shop.items WHERE id IN (4, 5)").Scan(&count))
	require.Equal(t, 1, count, "kiwi went in, lime never ran")

	// SHOW statements a client uses.
	var tbl, create string
	require.NoError(t, db.QueryRowContext(ctx, "SHOW CREATE TABLE shop.items").Scan(&tbl, &create))
	require.Contains(t, create, "by_name")
	require.Equal(t, 1.0, testutil.ToFloat64(tg.g.metrics.statements.WithLabelValues("ddl", "engine"))-1, "two DDL statements")
}

func TestAuthenticationAgainstTheClusterAccounts(t *testing.T) {
	users := []User{
		{Name: "root", AuthString: passwordHash("s3cret")},
		{Name: "open"},
	}
	tg := newTestGateway(t, gwOptions{users: users})
	ping := func(user, pw string) error {
		db, err := sql.Open("mysql", tg.dsn(user, pw, ""))
		require.NoError(t, err)
		defer db.Close()
		return db.Ping()
	}
	require.NoError(t, ping("root", "s3cret"))
	require.NoError(t, ping("open", ""))
	for _, bad := range [][2]string{{"root", "wrong"}, {"root", ""}, {"nobody", ""}, {"open", "x"}} {
		err := ping(bad[0], bad[1])
		require.Error(t, err, "%s/%q", bad[0], bad[1])
		require.EqualValues(t, 1045, mysqlCode(err), "%s/%q: %v", bad[0], bad[1], err)
	}
	require.GreaterOrEqual(t, testutil.ToFloat64(tg.g.metrics.refused.WithLabelValues("auth")), 1.0)
}

func TestAccountStatementsAreRefused(t *testing.T) {
	tg := newTestGateway(t, gwOptions{})
	db := tg.open(t, tg.dsn("root", "", ""))
	for _, q := range []string{
		"CREATE USER bob IDENTIFIED BY 'x'",
		"DROP USER root",
		"GRANT SELECT ON *.* TO root",
		"REVOKE ALL PRIVILEGES, GRANT OPTION FROM root",
	} {
		_, err := db.Exec(q)
		require.Error(t, err, q)
		require.Contains(t, err.Error(), "cluster.json", q)
	}
	// root still logs in and nobody else does.
	require.NoError(t, db.Ping())
}

func TestDoEvaluatesAndReturnsNoResult(t *testing.T) {
	tg := newTestGateway(t, gwOptions{})
	db := tg.open(t, tg.dsn("root", "", "", "multiStatements=true"))
	for _, q := range []string{"DO 1", "do 1 + 1, 'x'", "/* ping */ DO 0", "DO 1; DO 2"} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	_, err := db.Exec("DO no_such_function(1)")
	require.Error(t, err)
	require.Equal(t, 6.0, testutil.ToFloat64(tg.g.metrics.statements.WithLabelValues("do", "engine")), "five DO statements and one that failed")
}

func TestReadOnlyTransactionsRefuseWritesWithoutDroppingTheConnection(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: true})
	db := tg.open(t, tg.dsn("root", "", ""))
	exec(t, db, "CREATE DATABASE d")
	exec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	exec(t, db, "INSERT INTO d.t VALUES (1, 10)")

	c := conn(t, db)
	exec(t, c, "START TRANSACTION READ ONLY")
	for _, q := range []string{"UPDATE d.t SET v = 11 WHERE id = 1", "INSERT INTO d.t VALUES (2, 20)", "DELETE FROM d.t"} {
		_, err := c.ExecContext(context.Background(), q)
		require.Error(t, err, q)
		require.EqualValues(t, 1792, mysqlCode(err), "%s: %v", q, err)
	}
	var v int
	require.NoError(t, c.QueryRowContext(context.Background(), "SELECT v FROM d.t WHERE id = 1").Scan(&v))
	require.Equal(t, 10, v)
	exec(t, c, "COMMIT")

	// SET SESSION TRANSACTION READ ONLY holds for autocommit statements.
	exec(t, c, "SET SESSION TRANSACTION READ ONLY")
	_, err := c.ExecContext(context.Background(), "UPDATE d.t SET v = 12 WHERE id = 1")
	require.EqualValues(t, 1792, mysqlCode(err), "%v", err)
	exec(t, c, "SET SESSION TRANSACTION READ WRITE")
	exec(t, c, "UPDATE d.t SET v = 13 WHERE id = 1")
	require.NoError(t, c.QueryRowContext(context.Background(), "SELECT v FROM d.t WHERE id = 1").Scan(&v))
	require.Equal(t, 13, v)
}

func TestAPanickingStatementIsAnErrorAndTheConnectionStays(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: true})
	testHookBeforeRun = func(q string) {
		if strings.Contains(q, "boom") {
			panic("boom")
		}
	}
	t.Cleanup(func() { testHookBeforeRun = nil })
	db := tg.open(t, tg.dsn("root", "", ""))
	exec(t, db, "CREATE DATABASE d")
	exec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	c := conn(t, db)
	exec(t, c, "BEGIN")
	exec(t, c, "INSERT INTO d.t VALUES (1, 1)")
	_, err := c.ExecContext(context.Background(), "SELECT 'boom'")
	require.Error(t, err)
	require.EqualValues(t, 1105, mysqlCode(err))
	require.Contains(t, err.Error(), "connection stays open")
	require.Contains(t, err.Error(), "rolled back")
	// The same connection works, and the transaction's insert is gone.
	var n int
	require.NoError(t, c.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM d.t").Scan(&n))
	require.Equal(t, 0, n)
	exec(t, c, "INSERT INTO d.t VALUES (2, 2)")
	require.Equal(t, 1.0, testutil.ToFloat64(tg.g.metrics.panics))
}

func TestTooManyPlaceholdersAreRefusedAtPrepare(t *testing.T) {
	tg := newTestGateway(t, gwOptions{})
	db := tg.open(t, tg.dsn("root", "", ""))
	q := "SELECT 1 WHERE 1 IN (" + strings.TrimSuffix(strings.Repeat("?,", maxPlaceholders+1), ",") + ")"
	args := make([]any, maxPlaceholders+1)
	for i := range args {
		args[i] = i
	}
	_, err := db.Exec(q, args...)
	require.Error(t, err)
	require.EqualValues(t, 1390, mysqlCode(err), "%v", err)
	require.NoError(t, db.Ping())
}

func TestDDLWithoutAnAdminKeyIsRefusedClearly(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: false})
	db := tg.open(t, tg.dsn("root", "", ""))
	_, err := db.Exec("CREATE DATABASE d")
	require.Error(t, err)
	require.Contains(t, strings.ToLower(err.Error()), "admin")
}

func TestShutdownDrainsRunningStatementsAndRefusesNewOnes(t *testing.T) {
	tg := newTestGateway(t, gwOptions{})
	db := tg.open(t, tg.dsn("root", "", ""))
	c := conn(t, db)
	require.NoError(t, c.PingContext(context.Background()))
	release := make(chan struct{})
	started := make(chan struct{})
	testHookBeforeRun = func(q string) {
		if strings.Contains(q, "slow") {
			close(started)
			<-release
		}
	}
	t.Cleanup(func() { testHookBeforeRun = nil })
	res := make(chan error, 1)
	go func() {
		var s string
		res <- c.QueryRowContext(context.Background(), "SELECT 'slow'").Scan(&s)
	}()
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- tg.g.Shutdown(ctx)
	}()
	// New connections are refused once the listener is closed.
	require.Eventually(t, func() bool {
		d, err := net.DialTimeout("tcp", tg.g.Addr().String(), time.Second)
		if err != nil {
			return true
		}
		_ = d.Close()
		return false
	}, 5*time.Second, 20*time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a statement ran", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-res, "the running statement finishes")
	require.NoError(t, <-shut)
}

// The metrics count statements by kind, errors by MySQL code, and the
// short transactions the engine sent; every label value comes from a fixed
// set.
func TestMetricsCountStatementsErrorsAndShortTransactions(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: true})
	db := tg.open(t, tg.dsn("root", "", ""))
	exec(t, db, "CREATE DATABASE d")
	exec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	exec(t, db, "INSERT INTO d.t VALUES (1, 1)")
	_, err := db.Exec("INSERT INTO d.t VALUES (1, 2)")
	require.EqualValues(t, 1062, mysqlCode(err))
	_, err = db.Exec("SELEKT 1")
	require.EqualValues(t, 1064, mysqlCode(err))
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM d.t WHERE id = 1").Scan(&v))

	fams, err := tg.reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			if m.Counter != nil {
				got[key] = m.Counter.GetValue()
			}
		}
	}
	require.Equal(t, 2.0, got["augustus_sql_statements_total,kind=insert,path=engine"])
	require.Equal(t, 2.0, got["augustus_sql_statements_total,kind=ddl,path=engine"])
	require.Equal(t, 1.0, got["augustus_sql_errors_total,code=1062,kind=insert"])
	require.Equal(t, 1.0, got["augustus_sql_errors_total,code=1064,kind=unparsed"])
	require.GreaterOrEqual(t, got["augustus_sql_short_transactions_total,kind=read"], 1.0)
	require.GreaterOrEqual(t, got["augustus_sql_short_transactions_total,kind=commit"], 1.0)
	for key := range got {
		require.NotContains(t, key, "d.t", "no statement text in labels")
	}
}

// An autocommit statement that meets conflicts is run again inside the
// gateway (engine.Run) and the client sees it succeed: the handler must not
// give the statement a context that ends when its first attempt's
// iterator closes (GMS's process-list query context does).
func TestAutocommitConflictsAreRetriedInsideTheGateway(t *testing.T) {
	tg := newTestGateway(t, gwOptions{admin: true})
	db := tg.open(t, tg.dsn("root", "", ""))
	exec(t, db, "CREATE DATABASE d")
	exec(t, db, "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
	exec(t, db, "INSERT INTO d.t VALUES (1, 1)")
	tg.store.FailNext(txn.ReasonConflict, txn.ReasonConflict)
	exec(t, db, "UPDATE d.t SET v = v + 1 WHERE id = 1")
	require.Equal(t, 2.0, testutil.ToFloat64(tg.g.metrics.retries.WithLabelValues("conflict")))
	var v int
	require.NoError(t, db.QueryRow("SELECT v FROM d.t WHERE id = 1").Scan(&v))
	require.Equal(t, 2, v)

	// In an explicit transaction the conflict reaches the client, which
	// restarts the transaction.
	c := conn(t, db)
	exec(t, c, "BEGIN")
	tg.store.FailNext(txn.ReasonConflict)
	_, err := c.ExecContext(context.Background(), "UPDATE d.t SET v = v + 1 WHERE id = 1")
	require.EqualValues(t, 1213, mysqlCode(err), "%v", err)
	exec(t, c, "ROLLBACK")
}

// fastPath is an Interceptor of the kind the fast path will be: it answers
// the statements it knows and passes the rest down the chain to the
// gateway's handler.
type fastPath struct {
	m        *Metrics
	answered int
}

func (f *fastPath) Priority() int { return 0 }

func (f *fastPath) Query(ctx context.Context, chain server.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) error {
	if query != "SELECT 'fast'" {
		return chain.ComQuery(ctx, c, query, callback)
	}
	f.answered++
	start := time.Now()
	err := callback(&sqltypes.Result{
		Fields: []*querypb.Field{{Name: "fast", Type: sqltypes.VarChar, Charset: 255}},
		Rows:   [][]sqltypes.Value{{sqltypes.NewVarChar("answered without GMS")}},
	}, false)
	f.m.Observe(KindSelect, PathFast, time.Since(start), err)
	return err
}

func (f *fastPath) ParsedQuery(chain server.Chain, c *mysql.Conn, query string, parsed sqlparser.Statement, callback func(*sqltypes.Result, bool) error) error {
	return chain.ComQuery(context.Background(), c, query, callback)
}

func (f *fastPath) MultiQuery(ctx context.Context, chain server.Chain, c *mysql.Conn, query string, callback func(*sqltypes.Result, bool) error) (string, error) {
	return chain.ComMultiQuery(ctx, c, query, callback)
}

func (f *fastPath) Prepare(ctx context.Context, chain server.Chain, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	return chain.ComPrepare(ctx, c, query, prepare)
}

func (f *fastPath) StmtExecute(ctx context.Context, chain server.Chain, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	return chain.ComStmtExecute(ctx, c, prepare, callback)
}

// The Interceptor slot sees statements before the gateway's handler: what
// it answers never reaches GMS, what it passes on runs as usual.
func TestInterceptorsRunBeforeTheHandler(t *testing.T) {
	var fp fastPath
	tg := newTestGateway(t, gwOptions{cfg: func(c *Config) {
		fp.m = c.Metrics
		c.Interceptors = []server.Interceptor{&fp}
	}})
	db := tg.open(t, tg.dsn("root", "", ""))
	var s string
	require.NoError(t, db.QueryRow("SELECT 'fast'").Scan(&s))
	require.Equal(t, "answered without GMS", s)
	require.NoError(t, db.QueryRow("SELECT 'slow'").Scan(&s))
	require.Equal(t, "slow", s)
	require.Equal(t, 1, fp.answered)
	require.Equal(t, 1.0, testutil.ToFloat64(tg.g.metrics.statements.WithLabelValues("select", "fast")))
	require.Equal(t, 1.0, testutil.ToFloat64(tg.g.metrics.statements.WithLabelValues("select", "engine")))
}
