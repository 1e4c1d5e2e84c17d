package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// execRetrying runs statements as an application would: a transaction that
// fails with 1213 is rolled back and run again (bounded).
func (c *conn) execRetrying(t *testing.T, stmts ...string) {
	t.Helper()
	for attempt := 0; attempt < 100; attempt++ {
		ok := true
		for _, q := range stmts {
			out := c.exec(q)
			if strings.HasPrefix(out, "error 1213") {
				c.exec("ROLLBACK")
				ok = false
				break
			}
			require.NotContains(t, out, "error", q)
		}
		if ok {
			return
		}
	}
	t.Fatalf("%v: still conflicting after 100 attempts", stmts)
}

// No lost update: concurrent increments of one row from sessions of two
// front-ends (each with its own client) all count.
func TestConcurrentIncrementsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := startCluster(t, 2)
	setup := c.frontEnd(0, false).connect()
	for _, q := range []string{"CREATE DATABASE inc", "USE inc", "CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0)"} {
		require.NotContains(t, setup.exec(q), "error", q)
	}
	const sessions, each = 4, 8
	var wg sync.WaitGroup
	for s := range sessions {
		cn := c.frontEnd(s%2, false).connect()
		require.Equal(t, "ok\n", cn.exec("USE inc"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				cn.execRetrying(t, "UPDATE t SET v = v + 1 WHERE id = 1")
			}
		}()
	}
	wg.Wait()
	require.Equal(t, fmt.Sprintf("%d\n", sessions*each), setup.exec("SELECT v FROM t WHERE id = 1"))
}

// No write skew: two doctors on call; each, in a transaction, goes off call
// if the other is still on. Run concurrently, round after round: at least
// one stays on call every time (one of the two COMMITs fails with 1213).
func TestWriteSkewNeverCommitsBoth(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := startCluster(t, 2)
	a := c.frontEnd(0, false).connect()
	b := c.frontEnd(1, false).connect()
	for _, q := range []string{"CREATE DATABASE ws", "USE ws", "CREATE TABLE doctors (name VARCHAR(10) PRIMARY KEY, on_call BOOL NOT NULL)",
		"INSERT INTO doctors VALUES ('alice', true), ('bob', true)"} {
		require.NotContains(t, a.exec(q), "error", q)
	}
	require.Equal(t, "ok\n", b.exec("USE ws"))
	goOff := func(cn *conn, me string) bool {
		for _, q := range []string{"BEGIN", "SELECT count(*) FROM doctors WHERE on_call"} {
			out := cn.exec(q)
			if strings.HasPrefix(out, "error 1213") {
				return false
			}
			require.NotContains(t, out, "error", q)
			if strings.HasPrefix(q, "SELECT") && out != "2\n" {
				cn.exec("ROLLBACK")
				return false
			}
		}
		if out := cn.exec(fmt.Sprintf("UPDATE doctors SET on_call = false WHERE name = '%s'", me)); strings.HasPrefix(out, "error") {
			cn.exec("ROLLBACK")
			return false
		}
		out := cn.exec("COMMIT")
		if strings.HasPrefix(out, "error 1213") {
			return false
		}
		require.Equal(t, "ok\n", out)
		return true
	}
	const rounds = 6
	bothOff := 0
	for range rounds {
		require.NotContains(t, a.exec("UPDATE doctors SET on_call = true"), "error")
		var wg sync.WaitGroup
		var okA, okB bool
		wg.Add(2)
		go func() { defer wg.Done(); okA = goOff(a, "alice") }()
		go func() { defer wg.Done(); okB = goOff(b, "bob") }()
		wg.Wait()
		require.False(t, okA && okB, "both doctors went off call")
		if a.exec("SELECT count(*) FROM doctors WHERE on_call") == "0\n" {
			bothOff++
		}
	}
	require.Zero(t, bothOff)
}
