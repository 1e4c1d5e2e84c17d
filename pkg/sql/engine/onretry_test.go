package engine

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
	"github.com/augustus-db/augustus/pkg/txn"
)

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
