package storage

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// gathered returns the value of each metric (counter value, histogram sample
// count), keyed by name and label values.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[name] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func TestMetricsCountWrittenBytesCommitLatencyAndFsyncs(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: NewMetrics(reg)})
	base := gathered(t, reg)
	require.Greater(t, base["augustus_storage_fsyncs_total"], 0.0, "creating the store fsyncs")

	commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(BFTState, []byte("k"), make([]byte, 1000))) })
	afterNoSync := gathered(t, reg)
	require.Equal(t, 1.0, afterNoSync["augustus_storage_batch_commit_duration_seconds"])
	require.Greater(t, afterNoSync["augustus_storage_written_bytes_total"], 1000.0)
	require.Equal(t, base["augustus_storage_fsyncs_total"], afterNoSync["augustus_storage_fsyncs_total"],
		"an unsynced commit does not fsync")

	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), make([]byte, 1000))) })
	afterSync := gathered(t, reg)
	require.Equal(t, 2.0, afterSync["augustus_storage_batch_commit_duration_seconds"])
	require.Greater(t, afterSync["augustus_storage_written_bytes_total"]-afterNoSync["augustus_storage_written_bytes_total"],
		float64(1000+DigestSize), "a replicated commit also writes the digest")
	require.Greater(t, afterSync["augustus_storage_fsyncs_total"], afterNoSync["augustus_storage_fsyncs_total"],
		"a synced commit fsyncs")
}

func TestMetricsCountCheckpointInstallsByResult(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: NewMetrics(reg)})
	empty := (&Digest{}).Sum()
	require.NoError(t, e.InstallCheckpoint(t.Context(), chunkStream(Chunk{Final: true}), empty))
	require.ErrorIs(t, e.InstallCheckpoint(t.Context(), chunkStream(Chunk{Final: true}), [SumSize]byte{9}), ErrDigestMismatch)
	require.ErrorIs(t, e.InstallCheckpoint(t.Context(), func() (Chunk, error) { return Chunk{}, io.ErrUnexpectedEOF }, empty),
		io.ErrUnexpectedEOF)
	m := gathered(t, reg)
	require.Equal(t, 1.0, m["augustus_storage_checkpoint_installs_total{result=installed}"])
	require.Equal(t, 1.0, m["augustus_storage_checkpoint_installs_total{result=rejected}"])
	require.Equal(t, 1.0, m["augustus_storage_checkpoint_installs_total{result=failed}"])
}

func TestMetricNamesFollowTheConvention(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.CheckpointInstalls.WithLabelValues("installed")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	require.ElementsMatch(t, []string{
		"augustus_storage_written_bytes_total",
		"augustus_storage_batch_commit_duration_seconds",
		"augustus_storage_wal_sync_duration_seconds",
		"augustus_storage_fsyncs_total",
		"augustus_storage_checkpoint_installs_total",
		"augustus_storage_row_cache_hits_total",
		"augustus_storage_row_cache_misses_total",
		"augustus_storage_row_cache_bytes",
		"augustus_storage_compaction_debt_bytes",
		"augustus_storage_compactions_running",
		"augustus_storage_l0_sublevels",
		"augustus_storage_flushes_total",
		"augustus_storage_compactions_total",
		"augustus_storage_flushed_bytes_total",
		"augustus_storage_compacted_bytes_total",
		"augustus_storage_wal_written_bytes_total",
		"augustus_storage_bloom_filter_hits_total",
		"augustus_storage_bloom_filter_misses_total",
	}, names)
}

func TestNilMetricsRecordNothingAndUnregisteredMetricsWork(t *testing.T) {
	var m *Metrics
	require.NotPanics(t, func() {
		m.fsync()
		m.wroteBytes(1)
		m.install("installed")
	})
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: NewMetrics(nil)})
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), nil)) })
}

// gaugeValue returns the value of the unlabelled gauge name in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// The compaction gauges read the open engine's LSM: flushed tables that
// overlap in L0 above a base level are debt until compacted (automatic
// compactions are off here, so it stays), and a closed engine reads 0.
func TestCompactionGaugesReadTheOpenEnginesBacklog(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	gauge := func(name string) float64 { return gaugeValue(t, reg, name) }
	m := NewMetrics(reg)
	require.Zero(t, gauge("augustus_storage_compaction_debt_bytes"), "no engine open yet")
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: m, noCompactions: true})
	fill := func(table int) {
		commit(t, e, false, func(b *Batch) {
			for i := range 2000 {
				require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "key-%05d-%d", i, table), make([]byte, 100)))
			}
		})
		require.NoError(t, e.db.Flush())
	}
	// A base level (pebble counts debt only when L0 has an Lbase below it
	// to merge into), then overlapping tables in L0 above it.
	fill(0)
	require.NoError(t, e.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false))
	require.Zero(t, gauge("augustus_storage_compaction_debt_bytes"), "one compacted level: nothing to do")
	for table := 1; table <= 4; table++ {
		fill(table)
	}
	require.Greater(t, gauge("augustus_storage_compaction_debt_bytes"), 1e5, "4 overlapping L0 tables to merge into the base level")
	require.Zero(t, gauge("augustus_storage_compactions_running"))
	require.NoError(t, e.Close())
	require.Zero(t, gauge("augustus_storage_compaction_debt_bytes"), "a closed engine reads 0")
}

// The LSM counters follow the engine's flushes and compactions, so an
// operator can read the store's write amplification ((flushed + compacted)
// / WAL bytes), and they keep counting across a close and reopen in the
// same process (a checkpoint restore), where pebble's own start again at 0.
func TestLSMCountersCountFlushesAndCompactionsAcrossReopens(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	read := func() map[string]float64 { return gathered(t, reg) }
	gauge := func(name string) float64 { return gaugeValue(t, reg, name) }
	fs := vfs.NewMem()
	e := openOn(t, fs, "db", Options{Metrics: m, noCompactions: true})
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(e *Engine, table int) {
		commit(t, e, false, func(b *Batch) {
			for i := range 2000 {
				v := make([]byte, 100)
				for j := range v {
					v[j] = byte(rng.Uint32())
				}
				require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "key-%05d-%d", i, table), v))
			}
		})
		require.NoError(t, e.db.Flush())
	}
	before := read()
	require.Zero(t, before["augustus_storage_flushes_total"])
	require.Zero(t, before["augustus_storage_compacted_bytes_total"])
	fill(e, 0)
	fill(e, 1)
	afterFlush := read()
	require.GreaterOrEqual(t, afterFlush["augustus_storage_flushes_total"], 2.0)
	require.Greater(t, afterFlush["augustus_storage_flushed_bytes_total"], 2*2000*100.0, "two flushes of 200 KB of values that do not compress")
	require.Greater(t, afterFlush["augustus_storage_wal_written_bytes_total"], 2*2000*100.0, "the WAL holds both batches uncompressed")
	require.Zero(t, afterFlush["augustus_storage_compacted_bytes_total"], "automatic compactions are off")
	require.Equal(t, 2.0, gauge("augustus_storage_l0_sublevels"), "two overlapping flushed tables")

	require.NoError(t, e.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false))
	afterCompact := read()
	require.Greater(t, afterCompact["augustus_storage_compacted_bytes_total"], afterFlush["augustus_storage_flushed_bytes_total"]/2)
	require.Greater(t, afterCompact["augustus_storage_compactions_total"], afterFlush["augustus_storage_compactions_total"])
	require.Zero(t, gauge("augustus_storage_l0_sublevels"), "L0 compacted away")

	// Close and reopen: every counter keeps its value and goes on from it.
	require.NoError(t, e.Close())
	closed := read()
	for _, name := range []string{"augustus_storage_flushes_total", "augustus_storage_compactions_total",
		"augustus_storage_flushed_bytes_total", "augustus_storage_compacted_bytes_total", "augustus_storage_wal_written_bytes_total"} {
		require.Equal(t, afterCompact[name], closed[name], "%s after close", name)
	}
	e2 := openOn(t, fs, "db", Options{Metrics: m, noCompactions: true})
	fill(e2, 2)
	reopened := read()
	require.Greater(t, reopened["augustus_storage_flushes_total"], closed["augustus_storage_flushes_total"])
	require.Greater(t, reopened["augustus_storage_wal_written_bytes_total"], closed["augustus_storage_wal_written_bytes_total"])
	require.Equal(t, closed["augustus_storage_compacted_bytes_total"], reopened["augustus_storage_compacted_bytes_total"])
}
