package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
	"github.com/augustus-db/augustus/pkg/txn"
)

// An autocommit statement holds its rows until it commits, up to
// MaxResultBytes: past it the statement fails saying how to read the rows
// instead; in an explicit transaction the rows stream and are not counted.
func TestAutocommitResultOverTheCapFailsClearlyAndStreamsInATransaction(t *testing.T) {
	st := memstore.New(2)
	e, err := New(context.Background(), Config{Store: st, Admin: true, MaxResultBytes: 64 << 10})
	require.NoError(t, err)
	defer e.Close()
	ctx := e.NewContext(context.Background(), e.NewSession(sql.Client{User: "root"}, "", 0))
	run := func(q string) ([]sql.Row, error) {
		_, rows, err := e.Query(ctx, q)
		return rows, err
	}
	for _, q := range []string{"CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(200))"} {
		_, err := run(q)
		require.NoError(t, err, q)
	}
	pad := strings.Repeat("x", 200)
	for i := 0; i < 1000; i += 100 {
		var vals []string
		for j := i; j < i+100; j++ {
			vals = append(vals, fmt.Sprintf("(%d, '%s')", j, pad))
		}
		_, err := run("INSERT INTO t VALUES " + strings.Join(vals, ","))
		require.NoError(t, err)
	}

	_, err = run("SELECT * FROM t")
	require.Error(t, err)
	var se *mysql.SQLError
	require.ErrorAs(t, err, &se)
	require.Equal(t, erTooBigSelect, se.Num)
	require.Contains(t, se.Message, "read it in pages")

	rows, err := run("SELECT * FROM t WHERE id >= 500 ORDER BY id LIMIT 100")
	require.NoError(t, err)
	require.Len(t, rows, 100)

	_, err = run("BEGIN")
	require.NoError(t, err)
	rows, err = run("SELECT * FROM t")
	require.NoError(t, err, "rows of an explicit transaction stream")
	require.Len(t, rows, 1000)
	_, err = run("COMMIT")
	require.NoError(t, err)
}

// OnRetry sees every autocommit retry, with its cause.
func TestOnRetryIsCalledForEachAutocommitRetry(t *testing.T) {
	st := memstore.New(2)
	var retries []error
	e, err := New(context.Background(), Config{Store: st, Admin: true, OnRetry: func(err error) { retries = append(retries, err) }})
	require.NoError(t, err)
	defer e.Close()
	ctx := e.NewContext(context.Background(), e.NewSession(sql.Client{User: "root"}, "", 0))
	for _, q := range []string{"CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"} {
		_, _, err := e.Query(ctx, q)
		require.NoError(t, err, q)
	}
	require.Empty(t, retries)
	st.FailNext(txn.ReasonCompare, txn.ReasonCompare)
	_, _, err = e.Query(ctx, "UPDATE t SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	require.Len(t, retries, 2)
	_, rows, err := e.Query(ctx, "SELECT v FROM t WHERE id = 1")
	require.NoError(t, err)
	require.EqualValues(t, 2, rows[0][0])
}
