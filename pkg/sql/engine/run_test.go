package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
	"github.com/augustus-db/augustus/pkg/txn"
)

// memEngine is an engine over the in-memory store (the runner's unit
// tests: no cluster).
func memEngine(t *testing.T, adjust func(*Config)) (*Engine, *memstore.Store, *sql.Context) {
	st := memstore.New(2)
	cfg := Config{Store: st, Admin: true}
	if adjust != nil {
		adjust(&cfg)
	}
	e, err := New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx := e.NewContext(context.Background(), e.NewSession(sql.Client{User: "root"}, "", 0))
	for _, q := range []string{"CREATE DATABASE m", "USE m", "CREATE TABLE t (id INT PRIMARY KEY, v INT)"} {
		_, _, err := e.Query(ctx, q)
		require.NoError(t, err, q)
	}
	return e, st, ctx
}

// An autocommit statement that meets a conflict is run again from the
// start by Run, a bounded number of times; then the client gets 1213.
func TestRunRetriesAutocommitStatements(t *testing.T) {
	e, st, ctx := memEngine(t, func(c *Config) { c.MaxRetries = 2 })
	_, _, err := e.Query(ctx, "INSERT INTO t VALUES (1, 1)")
	require.NoError(t, err)

	st.FailNext(txn.ReasonConflict, txn.ReasonConflict)
	_, rows, err := e.Query(ctx, "UPDATE t SET v = v + 1 WHERE id = 1")
	require.NoError(t, err, "two conflicts, two retries")
	require.Len(t, rows, 1)

	st.FailNext(txn.ReasonConflict, txn.ReasonConflict, txn.ReasonConflict)
	_, _, err = e.Query(ctx, "UPDATE t SET v = v + 1 WHERE id = 1")
	var se *mysql.SQLError
	require.ErrorAs(t, err, &se)
	require.Equal(t, mysql.ERLockDeadlock, se.Num)
	require.Equal(t, "40001", se.State)

	_, rows, err = e.Query(ctx, "SELECT v FROM t WHERE id = 1")
	require.NoError(t, err)
	require.Equal(t, []sql.Row{{int32(2)}}, rows, "one increment applied, the failed one not")

	// A stale catalog: the runner reloads and runs the statement again.
	st.FailNext(txn.ReasonStaleMetadata)
	_, rows, err = e.Query(ctx, "SELECT v FROM t WHERE id = 1")
	require.NoError(t, err)
	require.Len(t, rows, 1)
}

// Inside an explicit transaction nothing is retried: a conflict is the
// client's 1213, and the transaction is over.
func TestRunDoesNotRetryInsideTransactions(t *testing.T) {
	e, st, ctx := memEngine(t, nil)
	_, _, err := e.Query(ctx, "BEGIN")
	require.NoError(t, err)
	st.FailNext(txn.ReasonConflict)
	_, _, err = e.Query(ctx, "SELECT * FROM t WHERE id = 1")
	require.ErrorContains(t, err, "try restarting transaction")
	require.False(t, ctx.GetIgnoreAutoCommit(), "rolled back, as MySQL does after a deadlock")
}

// A result larger than the retry buffer streams.
func TestLargeResultsStreamPastTheRetryBuffer(t *testing.T) {
	e, _, ctx := memEngine(t, func(c *Config) { c.RetryRows = 3; c.FirstChunk = 2 })
	for i := range 10 {
		_, _, err := e.Query(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", i, i))
		require.NoError(t, err)
	}
	_, rows, err := e.Query(ctx, "SELECT * FROM t")
	require.NoError(t, err)
	require.Len(t, rows, 10)
}

// A statement left behind by a failure (GMS keeps the transaction on some
// errors) does not leak into the next autocommit statement.
func TestFailedStatementLeavesNothingForTheNext(t *testing.T) {
	e, st, ctx := memEngine(t, nil)
	_, _, err := e.Query(ctx, "INSERT INTO t VALUES (1, 1), (1, 2)")
	require.Error(t, err)
	n := st.Count()
	_, _, err = e.Query(ctx, "INSERT INTO t VALUES (2, 2)")
	require.NoError(t, err)
	sent := st.Since(n)
	require.Len(t, sent, 1)
	require.Len(t, sent[0], 1, "one insert: nothing of the failed statement")
	_, rows, err := e.Query(ctx, "SELECT id FROM t")
	require.NoError(t, err)
	require.Equal(t, []sql.Row{{int32(2)}}, rows)
}

// The Halloween problem: a statement's scan does not see the rows the same
// statement writes (an UPDATE that moves rows ahead of its own scan moves
// each once).
func TestScanDoesNotSeeItsOwnStatementsWrites(t *testing.T) {
	e, _, ctx := memEngine(t, func(c *Config) { c.FirstChunk = 1 })
	for _, q := range []string{"INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)", "UPDATE t SET id = id + 10"} {
		_, _, err := e.Query(ctx, q)
		require.NoError(t, err, q)
	}
	_, rows, err := e.Query(ctx, "SELECT id FROM t ORDER BY id")
	require.NoError(t, err)
	require.Equal(t, []sql.Row{{int32(11)}, {int32(12)}, {int32(13)}}, rows)
}
