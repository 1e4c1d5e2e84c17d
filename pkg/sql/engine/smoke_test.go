package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
)

func TestSmokeOnMemstore(t *testing.T) {
	st := memstore.New(2)
	e, err := New(context.Background(), Config{Store: st, Admin: true})
	require.NoError(t, err)
	defer e.Close()
	s := e.NewSession(sql.Client{User: "root"}, "", 0)
	ctx := e.NewContext(context.Background(), s)
	for _, q := range []string{
		"CREATE DATABASE d",
		"USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), k INT, INDEX ik (k))",
		"INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
		"SELECT * FROM t",
		"SELECT v FROM t WHERE id = 2",
		"SELECT v FROM t WHERE k = 30",
		"UPDATE t SET v = 'z' WHERE id = 1",
		"DELETE FROM t WHERE id = 3",
		"SELECT * FROM t ORDER BY id",
		"EXPLAIN PLAN SELECT v FROM t WHERE id IN (1,2)",
		"SHOW CREATE TABLE t",
	} {
		sch, rows, err := e.Query(ctx, q)
		require.NoError(t, err, q)
		fmt.Println(q, len(sch), rows)
	}
}
