package storage

import (
	"errors"
	"fmt"
	"testing"

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
	rapid.Check(t, func(rt *rapid.T) {
		e := openMem(t)
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
