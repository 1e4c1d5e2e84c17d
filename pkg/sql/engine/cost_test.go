package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// shapeOf describes what one transaction does: its operation kinds with
// their counts, in a stable order.
func shapeOf(t *txn.Txn) map[string]int {
	m := map[string]int{}
	for _, op := range t.Ops {
		k := op.Kind.String()
		if op.Kind == txn.OpCmp && op.Absent {
			k = "cmp-absent"
		}
		m[k]++
	}
	return m
}

// TestCostPerStatementShape counts the short transactions, and the
// operations in each, that autocommit statements of each shape send
// (DESIGN.md §6, from the client's own record of what it sent: coord's
// Observer sees every attempt, retries included), and fails if a shape
// sends more than the design allows:
//
//	point SELECT by primary key       one transaction, exactly one read
//	range SELECT                      one read-range per chunk, plus one
//	                                  cmp-range guard when it took more than one
//	INSERT of new rows                one transaction: an insert per row and
//	                                  per index entry
//	UPDATE / DELETE ... WHERE pk = ?   two: the read, then one write (or
//	                                  delete) guarded by a cmp on it, index
//	                                  entries included
func TestCostPerStatementShape(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := startCluster(t, 2)
	fe := c.frontEndWith(0, false, func(cfg *Config) { cfg.FirstChunk = 4 })
	cn := fe.connect()
	for _, q := range []string{
		"CREATE DATABASE cost", "USE cost",
		"CREATE TABLE t (id INT PRIMARY KEY, k INT, c VARCHAR(20), pad VARCHAR(20), UNIQUE KEY uc (c), KEY kk (k))",
		"INSERT INTO t VALUES (1, 10, 'c1', 'p'), (2, 20, 'c2', 'p'), (3, 30, 'c3', 'p'), (4, 40, 'c4', 'p'), (5, 50, 'c5', 'p')",
		"INSERT INTO t VALUES (6, 60, 'c6', 'p'), (7, 70, 'c7', 'p'), (8, 80, 'c8', 'p'), (9, 90, 'c9', 'p'), (10, 100, 'c10', 'p')",
		"SELECT * FROM t WHERE id = 1", // warm: the catalog and the client's map are current
	} {
		out := cn.exec(q)
		require.NotContains(t, out, "error", q)
	}

	type want struct {
		query  string
		result string
		txns   []map[string]int
	}
	for _, w := range []want{
		{"SELECT c FROM t WHERE id = 3", "c3\n", []map[string]int{{"read": 1}}},
		{"SELECT c FROM t WHERE id = 99", "(no rows)\n", []map[string]int{{"read": 1}}},
		{"SELECT c FROM t WHERE id IN (2, 4, 6) ORDER BY id", "c2\nc4\nc6\n", []map[string]int{{"read": 3}}},
		// A range of three rows: one chunk of at most 4.
		{"SELECT id FROM t WHERE id BETWEEN 2 AND 4", "2\n3\n4\n", []map[string]int{{"read-range": 1}}},
		// Ten rows in chunks of 4 and 8: two read-ranges and one guard.
		{"SELECT count(*) FROM t", "10\n", []map[string]int{{"read-range": 1}, {"read-range": 1}, {"cmp-range": 1}}},
		// INSERT of new rows: an insert per row and per index entry (two
		// indexes), one transaction.
		{"INSERT INTO t VALUES (11, 110, 'c11', 'p'), (12, 120, 'c12', 'p')", "ok 2\n", []map[string]int{{"insert": 6}}},
		// UPDATE by primary key of an unindexed column: read, then cmp +
		// write.
		{"UPDATE t SET pad = 'q' WHERE id = 5", "ok 1\n", []map[string]int{{"read": 1}, {"cmp": 1, "write": 1}}},
		// Of an indexed column: the index entry moves in the same
		// transaction.
		{"UPDATE t SET k = k + 1 WHERE id = 5", "ok 1\n", []map[string]int{{"read": 1}, {"cmp": 1, "write": 1, "delete": 1, "insert": 1}}},
		// A row that does not exist: the read alone.
		{"UPDATE t SET pad = 'q' WHERE id = 99", "ok 0\n", []map[string]int{{"read": 1}}},
		// DELETE by primary key: read, then cmp + delete of the row and its
		// two index entries.
		{"DELETE FROM t WHERE id = 6", "ok 1\n", []map[string]int{{"read": 1}, {"cmp": 1, "delete": 3}}},
	} {
		n := fe.obs.count()
		got := cn.exec(w.query)
		require.Equal(t, w.result, got, w.query)
		sent := fe.obs.since(n)
		var shapes []map[string]int
		for _, s := range sent {
			shapes = append(shapes, shapeOf(s))
		}
		t.Logf("%-70s %d txns %v", w.query, len(sent), shapes)
		require.Equal(t, w.txns, shapes, "%s: sent %s", w.query, fmt.Sprint(shapes))
	}
}

// TestAutoIncrementCostsOneTransactionPerBlock: inserts into an
// AUTO_INCREMENT table cost their one transaction each, plus one small
// transaction on the counter per block of ids (after the first block, when
// this front-end's belief about the counter is right).
func TestAutoIncrementCostsOneTransactionPerBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := startCluster(t, 2)
	fe := c.frontEndWith(0, false, func(cfg *Config) { cfg.AutoIncrementBlock = 5 })
	cn := fe.connect()
	for _, q := range []string{"CREATE DATABASE ai", "USE ai", "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", "INSERT INTO t (v) VALUES (0)"} {
		require.NotContains(t, cn.exec(q), "error", q)
	}
	n := fe.obs.count()
	for i := range 12 {
		require.Equal(t, "ok 1\n", cn.exec(fmt.Sprintf("INSERT INTO t (v) VALUES (%d)", i)))
	}
	sent := fe.obs.since(n)
	counter := 0
	for _, s := range sent {
		if sh := shapeOf(s); sh["cmp"] == 1 && sh["write"] == 1 {
			counter++
		}
	}
	// Ids 2..13: the first block (1..5) holds 2..5, then 6..10, 11..15.
	require.Equal(t, 2, counter, "two more blocks")
	require.Len(t, sent, 12+counter)
	require.Equal(t, "13\n", cn.exec("SELECT max(id) FROM t"))
}
