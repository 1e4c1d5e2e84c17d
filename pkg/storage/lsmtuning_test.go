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

// Every level's sstables carry a Bloom filter (lsmTuning), so a point read
// of an absent key inside a flushed table's span, through an indexed batch
// as the transaction engine reads, and the committed-value lookup of a
// blind write (applyDelta) are answered by the filter, not by a data
// block; augustus_storage_bloom_filter_hits_total counts them, across a
// reopen. Without the filters pebble consults none and the counters stay
// at zero.
func TestBloomFiltersAnswerReadsOfAbsentKeysWithoutADataBlock(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	fs := vfs.NewMem()
	e := openOn(t, fs, "db", Options{Metrics: m})
	const n = 2000
	commit(t, e, false, func(b *Batch) {
		for i := range n {
			require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "item-%06d", 2*i), []byte("valu")))
		}
	})
	require.NoError(t, e.db.Flush())
	hits := func() float64 { return gathered(t, reg)["augustus_storage_bloom_filter_hits_total"] }
	require.Zero(t, hits())

	// Reads of the odd keys, absent but inside the table's span.
	b := e.NewIndexedBatch()
	for i := range n {
		_, err := b.Get(UserData, fmt.Appendf(nil, "item-%06d", 2*i+1))
		require.ErrorIs(t, err, ErrNotFound)
	}
	b.Close()
	afterReads := hits()
	require.Greater(t, afterReads, 0.9*n, "the filter answered most absent reads (about 1 %% false positives)")
	misses := gathered(t, reg)["augustus_storage_bloom_filter_misses_total"]
	require.Less(t, misses, 0.1*n)

	// Blind writes of absent keys: applyDelta looks up each one's committed
	// value for the digest.
	commit(t, e, false, func(b *Batch) {
		for i := range n {
			require.NoError(t, b.Set(UserData, fmt.Appendf(nil, "item-%06d", 2*i+1), []byte("new!")))
		}
	})
	afterWrites := hits()
	require.Greater(t, afterWrites-afterReads, 0.9*n, "the digest's lookups of absent keys used the filter")

	// The counters carry the closed engine's totals.
	require.NoError(t, e.Close())
	e = openOn(t, fs, "db", Options{Metrics: m})
	require.Equal(t, afterWrites, hits())
}
