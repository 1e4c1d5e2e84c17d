package logictest_test

import (
	"context"
	gosql "database/sql"
	"fmt"
	"net"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// serveMemory starts a GMS MySQL server over a new memory backend on a
// loopback port and returns a database/sql pool connected to it.
func serveMemory(t *testing.T) *gosql.DB {
	t.Helper()
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(true), memory.HistoryProvider(true)).(*memory.DbProvider)
	e := sqle.NewDefault(pro)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := server.NewServer(server.Config{Protocol: "tcp", Listener: l}, e, sql.NewContext, memory.NewSessionBuilder(pro), nil)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Start() }()
	db, err := gosql.Open("mysql", fmt.Sprintf("root@tcp(%s)/", l.Addr()))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, db.Close())
		require.NoError(t, s.Close())
		<-done
	})
	return db
}

// TestDataDrivenOverTheWire runs the same example files through the
// database/sql adapter, go-sql-driver/mysql and GMS's server: both adapters
// must render every value and error alike, or one of the runs fails.
func TestDataDrivenOverTheWire(t *testing.T) {
	logictest.RunDataDriven(t, "testdata/logic", func(t *testing.T) logictest.Engine {
		return logictest.NewSQLDB(serveMemory(t))
	}, logictest.DataDrivenOptions{EngineTags: []string{"memory", "gms"}})
}

// query runs q on a new session of eng and returns its single row.
func query(t *testing.T, eng logictest.Engine, stmts []string, q string) []logictest.Value {
	t.Helper()
	ctx := context.Background()
	s, err := eng.Connect(ctx)
	require.NoError(t, err)
	defer s.Close()
	for _, stmt := range stmts {
		_, err := s.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	rows, err := s.Query(ctx, q)
	require.NoError(t, err)
	require.Len(t, rows.Values, 1)
	return rows.Values[0]
}

// Values of every kind read the same through both adapters: the text a
// MySQL client receives.
func TestAdaptersRenderValuesAsTheWireDoes(t *testing.T) {
	setup := []string{
		"CREATE DATABASE v", "USE v",
		"CREATE TABLE t (i INT PRIMARY KEY, u BIGINT UNSIGNED, f DOUBLE, r FLOAT, d DECIMAL(10,3), s VARCHAR(10), b VARBINARY(4), dt DATETIME, dd DATE, tm TIME, j JSON, e ENUM('x','y'), bo BOOL, n INT)",
		"INSERT INTO t VALUES (-1, 18446744073709551615, 0.1, 1.5, 2.500, '', 0x0102, '2024-02-29 13:14:15', '2024-02-29', '-01:02:03', '{\"a\": [1, null]}', 'y', TRUE, NULL)",
	}
	q := "SELECT i, u, f, r, d, s, b, dt, dd, tm, j, e, bo, n, 7/2, 1e300*10 FROM t"
	want := []logictest.Value{
		logictest.Text("-1"), logictest.Text("18446744073709551615"), logictest.Text("0.1"), logictest.Text("1.5"),
		logictest.Text("2.500"), logictest.Text(""), logictest.Text("\x01\x02"), logictest.Text("2024-02-29 13:14:15"),
		logictest.Text("2024-02-29"), logictest.Text("-01:02:03"), logictest.Text(`{"a": [1, null]}`), logictest.Text("y"),
		logictest.Text("1"), logictest.NullValue, logictest.Text("3.5000"),
	}
	inProcess := query(t, logictest.NewMemory(), setup, q)
	wire := query(t, logictest.NewSQLDB(serveMemory(t)), setup, q)
	require.Equal(t, inProcess, wire, "in process and over the wire")
	require.Len(t, inProcess, len(want)+1)
	require.Equal(t, want, inProcess[:len(want)])
	// 1e300*10 overflows a double: whatever GMS makes of it, both agree.
	t.Logf("1e300*10 reads %v", inProcess[len(want)])
}

// Errors keep their MySQL number through both adapters.
func TestAdaptersReportMySQLErrorNumbers(t *testing.T) {
	for name, eng := range map[string]logictest.Engine{"gms": logictest.NewMemory(), "database/sql": logictest.NewSQLDB(serveMemory(t))} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, err := eng.Connect(ctx)
			require.NoError(t, err)
			defer s.Close()
			for _, stmt := range []string{"CREATE DATABASE e", "USE e", "CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1)"} {
				_, err := s.Exec(ctx, stmt)
				require.NoError(t, err)
			}
			_, err = s.Exec(ctx, "INSERT INTO t VALUES (1)")
			require.Equal(t, uint16(1062), logictest.AsError(err).Code)
			_, err = s.Query(ctx, "SELECT * FROM nosuch")
			require.Equal(t, uint16(1146), logictest.AsError(err).Code)
			_, err = s.Query(ctx, "SELECT (SELECT a FROM t UNION ALL SELECT 2)")
			require.Equal(t, uint16(1242), logictest.AsError(err).Code)
			res, err := s.Exec(ctx, "INSERT INTO t VALUES (2), (3)")
			require.NoError(t, err)
			require.Equal(t, uint64(2), res.RowsAffected)
		})
	}
}

// Closing a session rolls its open transaction back, as a server does when
// a client goes away.
func TestGMSSessionCloseRollsBack(t *testing.T) {
	eng := logictest.NewMemory()
	ctx := context.Background()
	a, err := eng.Connect(ctx)
	require.NoError(t, err)
	for _, stmt := range []string{"CREATE DATABASE r", "USE r", "CREATE TABLE t (a INT PRIMARY KEY)", "BEGIN", "INSERT INTO t VALUES (1)"} {
		_, err := a.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	require.NoError(t, a.Close())
	_, err = a.Exec(ctx, "SELECT 1")
	require.Error(t, err, "a closed session refuses statements")
	got := query(t, eng, []string{"USE r"}, "SELECT count(*) FROM t")
	require.Equal(t, []logictest.Value{logictest.Text("0")}, got)
}

// A database/sql session's connection is discarded at Close, not returned
// to the pool, so no session state (an open transaction) reaches the next
// user of the pool.
func TestSQLDBSessionCloseDiscardsTheConnection(t *testing.T) {
	db := serveMemory(t)
	eng := logictest.NewSQLDB(db)
	ctx := context.Background()
	s, err := eng.Connect(ctx)
	require.NoError(t, err)
	for _, stmt := range []string{"CREATE DATABASE c", "USE c", "CREATE TABLE t (a INT PRIMARY KEY)", "BEGIN", "INSERT INTO t VALUES (1)"} {
		_, err := s.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	require.Equal(t, 1, db.Stats().OpenConnections)
	require.NoError(t, s.Close())
	require.Equal(t, 0, db.Stats().OpenConnections)
	require.Equal(t, []logictest.Value{logictest.Text("0")}, query(t, eng, nil, "SELECT count(*) FROM c.t"))
}
