package engine

import (
	"context"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

func (f *frontEnd) table(t *testing.T, db, name string) (*catalog.Snapshot, *catalog.Table) {
	s := f.eng.Catalog().Current()
	d, ok := s.Database(db)
	require.True(t, ok)
	tb, ok := s.Table(d.ID, name)
	require.True(t, ok)
	return s, tb
}

func (f *frontEnd) spanKeys(t *testing.T, sp rowenc.Span) int {
	res, err := f.client.Do(context.Background(), coord.Ops{{Kind: txn.OpReadRange, Key: sp.Start, End: sp.End, Limit: 1000}}, coord.Options{})
	require.NoError(t, err)
	return len(res.Ops[0].Entries)
}

// PARTITION BY RANGE places the parts in different groups (round-robin),
// the partition map routes each row's key to its part's group, and an
// INSERT over both parts is one transaction over both groups. DROP TABLE
// and TRUNCATE leave a drop job that the schema changer finishes: the old
// span ends empty and the job leaves the catalog.
func TestPlacementRoutesRowsAndDroppedSpansAreCleared(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := startCluster(t, 2)
	fe := c.frontEnd(0, false)
	cn := fe.connect()
	for _, q := range []string{"CREATE DATABASE p", "USE p",
		"CREATE TABLE r (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) (PARTITION lo VALUES LESS THAN (100), PARTITION hi VALUES LESS THAN (MAXVALUE))"} {
		require.NotContains(t, cn.exec(q), "error", q)
	}
	s, r := fe.table(t, "p", "r")
	require.Equal(t, catalog.PlaceRange, r.Placement.Kind)
	require.Len(t, r.Placement.Groups, 2)
	require.NotEqual(t, r.Placement.Groups[0], r.Placement.Groups[1], "round-robin over the two groups")
	key := func(id int32) []byte {
		k, err := rowenc.AppendKey(rowenc.IndexPrefix(r.ID, rowenc.PrimaryIndexID), types.Int32, id)
		require.NoError(t, err)
		return k
	}
	require.Equal(t, r.Placement.Groups[0], s.Map.KeyGroup(key(99)))
	require.Equal(t, r.Placement.Groups[1], s.Map.KeyGroup(key(100)))

	n := fe.obs.count()
	require.Equal(t, "ok 2\n", cn.exec("INSERT INTO r VALUES (1, 1), (150, 150)"))
	sent := fe.obs.since(n)
	require.Len(t, sent, 1)
	require.Equal(t, []bft.GroupID{0, 1}, sent[0].GroupIDs(), "one transaction over both groups")
	require.Equal(t, "ok 1\n", cn.exec("INSERT INTO r VALUES (2, 2)"))
	require.Len(t, fe.obs.since(n + 1)[0].Groups, 1, "a row of one part: one group")

	// TRUNCATE: a new id, the old span cleared in the background.
	old := rowenc.TableSpan(r.ID)
	require.Equal(t, 3, fe.spanKeys(t, old))
	require.Equal(t, "ok 0\n", cn.exec("TRUNCATE TABLE r"))
	_, r2 := fe.table(t, "p", "r")
	require.NotEqual(t, r.ID, r2.ID)
	require.Equal(t, r.Placement, r2.Placement)
	require.Equal(t, "(no rows)\n", cn.exec("SELECT * FROM r"))
	waitJobs(t, fe)
	require.Zero(t, fe.spanKeys(t, old))

	// DROP TABLE.
	require.Equal(t, "ok 1\n", cn.exec("INSERT INTO r VALUES (5, 5)"))
	require.Equal(t, "ok 0\n", cn.exec("DROP TABLE r"))
	waitJobs(t, fe)
	require.Zero(t, fe.spanKeys(t, rowenc.TableSpan(r2.ID)))
}

func waitJobs(t *testing.T, fe *frontEnd) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(fe.eng.Catalog().Current().Jobs()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("drop jobs left: %v", fe.eng.Catalog().Current().Jobs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
