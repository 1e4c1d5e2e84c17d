package storage

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// An indexed batch keeps one iterator open between point reads of
// replicated keyspaces (Batch.pointIter). Its reads must still be exactly
// "the batch's own writes over the committed state as of the read": writes
// to the batch after the iterator opened, commits of other batches and the
// batch's own commit and reset all show. The model is a map of the committed
// state and the batch's overlay.
func TestIndexedBatchPointReadsMatchCommittedStatePlusOwnWrites(t *testing.T) {
	forRowCaches(t, testIndexedBatchPointReadsMatchCommittedStatePlusOwnWrites)
}

// rowCacheSizes are the row caches the read tests run with: none and the
// default (an evicted entry is a miss, read from pebble like any other).
var rowCacheSizes = []struct {
	name string
	size int64
}{{"no row cache", -1}, {"default row cache", 0}}

func forRowCaches(t *testing.T, test func(t *testing.T, opts Options)) {
	for _, rc := range rowCacheSizes {
		t.Run(rc.name, func(t *testing.T) { test(t, Options{RowCacheSize: rc.size}) })
	}
}

func testIndexedBatchPointReadsMatchCommittedStatePlusOwnWrites(t *testing.T, opts Options) {
	rapid.Check(t, func(rt *rapid.T) {
		e := openOn(t, vfs.NewMem(), "db", opts)
		committed := map[string]string{}
		overlay := map[string]*string{} // nil: deleted in the batch
		b := e.NewIndexedBatch()
		defer b.Close()
		key := func() string { return fmt.Sprintf("k%d", rapid.IntRange(0, 12).Draw(rt, "key")) }
		for step := range rapid.IntRange(1, 120).Draw(rt, "steps") {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0: // write into the batch
				k, v := key(), fmt.Sprintf("b%d", step)
				require.NoError(rt, b.Set(UserData, []byte(k), []byte(v)))
				overlay[k] = &v
			case 1: // delete in the batch
				k := key()
				require.NoError(rt, b.Delete(UserData, []byte(k)))
				overlay[k] = nil
			case 2: // another batch commits under the open iterator
				k, v := key(), fmt.Sprintf("o%d", step)
				commit(t, e, false, func(o *Batch) { require.NoError(rt, o.Set(UserData, []byte(k), []byte(v))) })
				committed[k] = v
			case 3: // another batch deletes
				k := key()
				commit(t, e, false, func(o *Batch) { require.NoError(rt, o.Delete(UserData, []byte(k))) })
				delete(committed, k)
			case 4: // the batch commits and is reset
				require.NoError(rt, e.Commit(b, false))
				for k, v := range overlay {
					if v == nil {
						delete(committed, k)
					} else {
						committed[k] = *v
					}
				}
				clear(overlay)
				b.Reset()
			default: // read
				k := key()
				got, err := b.Get(UserData, []byte(k))
				want, ok := committed[k]
				if v, in := overlay[k]; in {
					want, ok = "", v != nil
					if v != nil {
						want = *v
					}
				}
				if !ok {
					require.ErrorIs(rt, err, ErrNotFound, "key %s", k)
					continue
				}
				require.NoError(rt, err)
				require.Equal(rt, want, string(got), "key %s", k)
			}
		}
	})
}

// A checkpoint installed under a batch's open read iterator replaces what
// the batch reads.
func TestIndexedBatchReadsTheInstalledCheckpointAfterInstall(t *testing.T) {
	src, dst := openMem(t), openMem(t)
	commit(t, src, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("installed"))) })
	commit(t, dst, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("before"))) })
	chunks, sum := exportEngine(t, src, 2000)

	b := dst.NewIndexedBatch()
	defer b.Close()
	v, err := b.Get(UserData, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "before", string(v))
	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))
	v, err = b.Get(UserData, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "installed", string(v))
}

// Closing the engine while a batch holds its read iterator open closes the
// iterator (pebble refuses to close with leaked iterators); the batch then
// says the engine is closed.
func TestEngineCloseClosesABatchsOpenReadIterator(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("v"))) })
	b := e.NewIndexedBatch()
	_, err := b.Get(UserData, []byte("k"))
	require.NoError(t, err)
	require.NoError(t, e.Close())
	_, err = b.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	err = b.Close()
	require.True(t, err == nil || errors.Is(err, ErrClosed), "batch close after engine close: %v", err)
}

// A batch closed by its goroutine while the engine closes from another: the
// iterator is closed exactly once, by one of them, and nothing races (run
// with -race).
func TestBatchAndEngineCloseConcurrentlyWithAnOpenReadIterator(t *testing.T) {
	for range 20 {
		e := openMem(t)
		commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("v"))) })
		b := e.NewIndexedBatch()
		_, err := b.Get(UserData, []byte("k"))
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() { done <- b.Close() }()
		require.NoError(t, e.Close())
		err = <-done
		require.True(t, err == nil || errors.Is(err, ErrClosed), "batch close: %v", err)
	}
}

// A commit takes the committed values of the keys it writes from the
// batch's own earlier reads (oldvalues.go) when the committed state has not
// changed since: the digest must still be exactly the recomputed one, with
// other batches committing between the reads and the commit, keys written
// before being read, written, deleted and rewritten, and reads after own
// writes (which return the batch's value, not the committed one), through
// point reads and scans.
func TestCommitDigestFromTheBatchsOwnReadsEqualsRecomputation(t *testing.T) {
	forRowCaches(t, testCommitDigestFromTheBatchsOwnReadsEqualsRecomputation)
}

func testCommitDigestFromTheBatchsOwnReadsEqualsRecomputation(t *testing.T, opts Options) {
	rapid.Check(t, func(rt *rapid.T) {
		e := openOn(t, vfs.NewMem(), "db", opts)
		b := e.NewIndexedBatch()
		defer b.Close()
		key := func() []byte { return fmt.Appendf(nil, "k%d", rapid.IntRange(0, 8).Draw(rt, "key")) }
		for step := range rapid.IntRange(1, 100).Draw(rt, "steps") {
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 7: // a scan's entries are remembered too
				require.NoError(rt, b.Scan(UserData, key(), nil, rapid.IntRange(0, 4).Draw(rt, "limit"), func(k, v []byte) error { return nil }))
			case 0:
				require.NoError(rt, b.Set(UserData, key(), fmt.Appendf(nil, "b%d", step)))
			case 1:
				require.NoError(rt, b.Delete(UserData, key()))
			case 2:
				k, v := key(), fmt.Appendf(nil, "o%d", step)
				commit(t, e, false, func(o *Batch) { require.NoError(rt, o.Set(UserData, k, v)) })
			case 3:
				k := key()
				commit(t, e, false, func(o *Batch) { require.NoError(rt, o.Delete(UserData, k)) })
			case 4:
				require.NoError(rt, e.Commit(b, false))
				b.Reset()
				got, err := e.Digest()
				require.NoError(rt, err)
				want, err := e.RecomputeDigest()
				require.NoError(rt, err)
				require.Equal(rt, want, got, "digest after the batch's commit at step %d", step)
			default:
				_, err := b.Get(UserData, key())
				if err != nil {
					require.ErrorIs(rt, err, ErrNotFound)
				}
			}
		}
	})
}

// The point of the memo: a transaction that read every key it writes
// commits without seeking any committed value again; a key it did not read,
// or one read before another batch committed, is sought.
func TestCommitSeeksOnlyTheOldValuesTheBatchDidNotRead(t *testing.T) {
	// The memo alone: a row cache would answer some of the seeks.
	e := openOn(t, vfs.NewMem(), "db", Options{RowCacheSize: -1})
	commit(t, e, false, func(o *Batch) {
		for _, k := range []string{"a", "b", "c"} {
			require.NoError(t, o.Set(UserData, []byte(k), []byte("v0")))
		}
	})
	b := e.NewIndexedBatch()
	defer b.Close()
	for _, k := range []string{"a", "b", "x"} { // x is absent
		_, err := b.Get(UserData, []byte(k))
		if k == "x" {
			require.ErrorIs(t, err, ErrNotFound)
		} else {
			require.NoError(t, err)
		}
	}
	for _, k := range []string{"a", "b", "x"} {
		require.NoError(t, b.Set(UserData, []byte(k), []byte("v1")))
	}
	before := e.deltaSeeks.Load()
	require.NoError(t, e.Commit(b, false))
	require.Equal(t, before, e.deltaSeeks.Load(), "every written key was read: no seek")
	b.Reset()

	// c was not read; a was read, then another batch committed.
	_, err := b.Get(UserData, []byte("a"))
	require.NoError(t, err)
	commit(t, e, false, func(o *Batch) { require.NoError(t, o.Set(UserData, []byte("z"), []byte("v"))) })
	require.NoError(t, b.Set(UserData, []byte("a"), []byte("v2")))
	require.NoError(t, b.Set(UserData, []byte("c"), []byte("v2")))
	before = e.deltaSeeks.Load()
	require.NoError(t, e.Commit(b, false))
	require.Equal(t, before+2, e.deltaSeeks.Load())
	got, err := e.Digest()
	require.NoError(t, err)
	want, err := e.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, want, got)
}
