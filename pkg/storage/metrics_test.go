package storage

import (
	"io"
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
