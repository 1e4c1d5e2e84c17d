package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// A flushed table of short-lived records' tombstones above a bottom level
// of data is not compacted on its own (lsmTuning): with pebble's
// tombstone-density heuristic on, that table was merged into the bottom
// level at once, rewriting all of it for a table that ordinary L0
// compactions would merge later together with others.
func TestFlushedTombstonesDoNotTriggerACompactionOfTheirOwn(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: m})
	require.EqualValues(t, DefaultMemTableSize, e.popts.MemTableSize)

	// The bottom level: data keys.
	commit(t, e, false, func(b *Batch) {
		for i := range 20000 {
			require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "item-%06d", i), []byte("valu")))
		}
	})
	require.NoError(t, e.db.Flush())
	require.NoError(t, e.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false))
	compactions := func() float64 { return gathered(t, reg)["augustus_storage_compactions_total"] }
	before := compactions()

	// Records written and deleted before the flush, as the transaction
	// engine's are, beside a few data writes: the flushed table is almost
	// all tombstones.
	for round := range 20 {
		commit(t, e, false, func(b *Batch) {
			for i := range 500 {
				require.NoError(t, b.Set(TxnRecords, fmt.Appendf(nil, "rec-%02d-%04d", round, i), make([]byte, 200)))
			}
			require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "item-%06d", round*997), []byte("new!")))
		})
		commit(t, e, false, func(b *Batch) {
			for i := range 500 {
				require.NoError(t, b.Delete(TxnRecords, fmt.Appendf(nil, "rec-%02d-%04d", round, i)))
			}
		})
	}
	require.NoError(t, e.db.Flush())
	require.Equal(t, 1.0, gathered(t, reg)["augustus_storage_flushes_total"]-1, "one flush of the records (one before)")

	// Pebble picks compactions in the background; give it time to pick one.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Equal(t, before, compactions(), "a compaction ran for one flushed table of tombstones")
		time.Sleep(50 * time.Millisecond)
	}
}
