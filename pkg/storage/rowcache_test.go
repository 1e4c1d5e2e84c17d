package storage

import (
	"testing"

	"github.com/VictoriaMetrics/fastcache"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// The row cache answers reads of keys that commits wrote or earlier reads
// filled, follows every later commit (a new value, a delete), leaves a
// batch's own writes to pebble, and gives the digest update the committed
// value of a blind write without a seek. The reads' results under random
// histories are checked by the property tests (forRowCaches).
func TestRowCacheAnswersReadsAndFollowsCommits(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	e := openOn(t, vfs.NewMem(), "db", Options{Metrics: m})
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("v0")))
		require.NoError(t, b.Set(UserData, []byte("b"), []byte("v0")))
	})
	read := func(b *Batch, k string) string {
		t.Helper()
		v, err := b.Get(UserData, []byte(k))
		require.NoError(t, err)
		return string(v)
	}
	hits := func() float64 { return testutil.ToFloat64(m.RowCacheHits) }
	misses := func() float64 { return testutil.ToFloat64(m.RowCacheMisses) }

	r := e.NewIndexedBatch()
	defer r.Close()
	require.Equal(t, "v0", read(r, "a"))
	require.Equal(t, 1.0, hits(), "the commit wrote a through to the cache")
	require.Equal(t, 0.0, misses())

	// A batch's own write is read through pebble, not from the cache.
	require.NoError(t, r.Set(UserData, []byte("a"), []byte("mine")))
	require.Equal(t, "mine", read(r, "a"))
	require.Equal(t, 1.0, hits())

	// A read fills a key the cache lost (here: all of it).
	e.rows.clear(&e.replGen)
	w := e.NewIndexedBatch()
	defer w.Close()
	require.Equal(t, "v0", read(w, "b"))
	require.Equal(t, 1.0, misses())
	require.Equal(t, "v0", read(w, "b"))
	require.Equal(t, 2.0, hits(), "the first read filled b")

	// Later commits: a new value, a longer one, a delete, a new key.
	for _, v := range []string{"v1", "a longer v2"} {
		commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("b"), []byte(v))) })
		before := hits()
		require.Equal(t, v, read(w, "b"))
		require.Equal(t, before+1, hits())
	}
	commit(t, e, false, func(b *Batch) { require.NoError(t, b.Delete(UserData, []byte("b"))) })
	_, err := w.Get(UserData, []byte("b"))
	require.ErrorIs(t, err, ErrNotFound)
	_, held := e.rows.peek(AppendKey(nil, UserData, []byte("b")))
	require.False(t, held, "the delete dropped b")
	commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("b"), []byte("v3"))) })
	require.Equal(t, "v3", read(w, "b"))

	// A blind write of a key the cache holds: the digest update takes the
	// committed value from the cache, with no seek.
	blind := e.NewIndexedBatch()
	defer blind.Close()
	require.NoError(t, blind.Set(UserData, []byte("b"), []byte("v4")))
	before := e.deltaSeeks.Load()
	require.NoError(t, e.Commit(blind, false))
	require.Equal(t, before, e.deltaSeeks.Load(), "b's committed value came from the cache")
	got, err := e.Digest()
	require.NoError(t, err)
	want, err := e.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// The cache's capacity is the option's (fastcache's least is 32 MiB), and a
// negative size turns it off.
func TestRowCacheSizeOption(t *testing.T) {
	capacity := func(e *Engine) uint64 {
		var st fastcache.Stats
		e.rows.c.UpdateStats(&st)
		return st.MaxBytesSize
	}
	require.EqualValues(t, DefaultRowCacheSize, capacity(openOn(t, vfs.NewMem(), "db", Options{})))
	require.EqualValues(t, 64<<20, capacity(openOn(t, vfs.NewMem(), "db", Options{RowCacheSize: 64 << 20})))
	require.Nil(t, openOn(t, vfs.NewMem(), "db", Options{RowCacheSize: -1}).rows)
}
