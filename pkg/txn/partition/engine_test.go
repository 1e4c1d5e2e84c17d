package partition

import (
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
)

func TestConfigFromClusterUsesTheClusterFilesKeysMapAndAdmins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	c, err := cluster.Generate(cluster.DefaultGenerateOptions(dir))
	require.NoError(t, err)
	cfg, err := ConfigFromCluster(c, 1)
	require.NoError(t, err)
	require.Equal(t, bft.GroupID(1), cfg.Group)
	require.Equal(t, []bft.GroupID{0, 1}, cfg.Keys.Groups())
	require.Equal(t, bft.GroupID(1), cfg.InitialMap.KeyGroup([]byte{0xf0}))
	e, err := New(cfg)
	require.NoError(t, err)
	require.Equal(t, txn.DefaultLimits(), e.limits)
	admin, err := cluster.LoadAdminKey(dir, "admin0")
	require.NoError(t, err)
	id := txn.TxnID{1}
	require.NoError(t, cfg.Keys.VerifyAdmin(id, txn.SignAdmin(cfg.Keys.Domain(), id, admin)))

	_, err = New(Config{Group: 5, Keys: cfg.Keys, InitialMap: cfg.InitialMap})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(Config{Group: 0, Keys: cfg.Keys})
	require.ErrorIs(t, err, ErrConfig)
}

func TestMetricsCountVotesTerminationsAndPending(t *testing.T) {
	w := newWorld(t, 2, 1)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	w.groups[0].replicas[0].engine.metrics = m
	c := w.client(1)
	single(w, c, txn.NewBuilder().Insert(k("a"), []byte("1")))
	single(w, c, txn.NewBuilder().Insert(k("a"), []byte("1")))
	x := pend(t, w, c, txn.NewBuilder().Write(k("a"), []byte("2")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Votes.WithLabelValues("single", "commit", "none")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Votes.WithLabelValues("single", "abort", "key_exists")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Votes.WithLabelValues("multi_update", "commit", "none")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Pending))
	require.Equal(t, 1.0, testutil.ToFloat64(m.LockHolders))
	c.finish(x, w.commitCert(x))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Terminations.WithLabelValues("multi_update", "commit")))
	require.Zero(t, testutil.ToFloat64(m.Pending))
	w.groups[0].mustCall(w.client(2).id, c.at(9, 0, txn.NewBuilder().Read(k("zz"))).call())
	require.Equal(t, 1.0, testutil.ToFloat64(m.Refusals.WithLabelValues("no_record")))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Positive(t, n)
}
