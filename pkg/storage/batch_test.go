package storage

import (
	"encoding/binary"
	"github.com/augustus-db/augustus/internal/invariants"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchIsInvisibleUntilCommitted(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	defer b.Close()
	require.NoError(t, b.Set(UserData, []byte("k"), []byte("v")))
	_, err := e.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, e.Commit(b, false))
	_, err = e.Get(UserData, []byte("k"))
	require.NoError(t, err)
}

func TestBatchLastWriteOfAKeyWins(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("1")))
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("2")))
		require.NoError(t, b.Set(UserData, []byte("b"), []byte("1")))
		require.NoError(t, b.Delete(UserData, []byte("b")))
		require.NoError(t, b.Delete(UserData, []byte("c")))
		require.NoError(t, b.Set(UserData, []byte("c"), []byte("3")))
	})
	require.Equal(t, []kv{{UserData, "a", "2"}, {UserData, "c", "3"}}, dump(t, e))
	requireDigestConsistent(t, e)
}

func TestCommittedBatchRefusesWritesAndRecommitUntilReset(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	defer b.Close()
	require.NoError(t, b.Set(UserData, []byte("a"), []byte("1")))
	require.NoError(t, e.Commit(b, false))
	require.ErrorIs(t, b.Set(UserData, []byte("b"), nil), ErrBatchCommitted)
	require.ErrorIs(t, b.Delete(UserData, []byte("b")), ErrBatchCommitted)
	require.ErrorIs(t, b.DeleteRange(BFTState, nil, nil), ErrBatchCommitted)
	require.ErrorIs(t, e.Commit(b, false), ErrBatchCommitted)

	b.Reset()
	require.True(t, b.Empty())
	require.NoError(t, b.Set(UserData, []byte("b"), []byte("2")))
	require.NoError(t, e.Commit(b, true))
	require.Equal(t, []kv{{UserData, "a", "1"}, {UserData, "b", "2"}}, dump(t, e))
	requireDigestConsistent(t, e)
}

func TestClosedBatchRefusesWrites(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.Set(UserData, []byte("k"), nil), ErrClosed)
	require.ErrorIs(t, e.Commit(b, false), ErrClosed)
	require.NoError(t, b.Close(), "closing twice is harmless")
}

func TestCommitRejectsBatchOfAnotherEngine(t *testing.T) {
	e1, e2 := openMem(t), openMem(t)
	b := e1.NewBatch()
	defer b.Close()
	require.NoError(t, b.Set(UserData, []byte("k"), nil))
	require.ErrorIs(t, e2.Commit(b, false), ErrForeignBatch)
	require.ErrorIs(t, e2.Commit(nil, false), ErrForeignBatch)
}

func TestCommitOfEmptyBatchChangesNothing(t *testing.T) {
	e := openMem(t)
	before, err := e.Sum()
	require.NoError(t, err)
	commit(t, e, true, func(b *Batch) {})
	after, err := e.Sum()
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func seqKey(n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("log/"), n)
}

func TestDeleteRangePrunesBFTStateLogBySequenceNumber(t *testing.T) {
	e := openMem(t)
	commit(t, e, true, func(b *Batch) {
		for n := uint64(1); n <= 300; n++ {
			require.NoError(t, b.Set(BFTState, seqKey(n), []byte("record")))
		}
		require.NoError(t, b.Set(BFTState, []byte("view"), []byte{1}))
	})
	// Prune the log below the stable checkpoint at 256.
	commit(t, e, true, func(b *Batch) {
		require.NoError(t, b.DeleteRange(BFTState, seqKey(0), seqKey(256)))
	})
	var first, count uint64
	require.NoError(t, e.Scan(BFTState, []byte("log/"), []byte("log0"), 0, func(k, v []byte) error {
		if count == 0 {
			first = binary.BigEndian.Uint64(k[4:])
		}
		count++
		return nil
	}))
	require.Equal(t, uint64(256), first)
	require.Equal(t, uint64(45), count)
	_, err := e.Get(BFTState, []byte("view"))
	require.NoError(t, err, "keys outside the range survive")
}

func TestDeleteRangeWithNilBoundsClearsOnlyBFTState(t *testing.T) {
	e := openMem(t)
	commit(t, e, true, func(b *Batch) {
		require.NoError(t, b.Set(BFTState, []byte("x"), nil))
		require.NoError(t, b.Set(BFTState, []byte{0xff, 0xff}, nil))
		require.NoError(t, b.Set(UserData, []byte("x"), nil))
	})
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.DeleteRange(BFTState, nil, nil)) })
	require.Equal(t, []kv{{UserData, "x", ""}}, dump(t, e))
	requireDigestConsistent(t, e)
}

func TestDeleteRangeIsRefusedOnReplicatedKeyspacesAndInvalidRanges(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	defer b.Close()
	for _, ks := range ReplicatedKeyspaces() {
		require.ErrorIs(t, b.DeleteRange(ks, nil, nil), ErrReplicatedRangeDelete)
	}
	require.ErrorIs(t, b.DeleteRange(BFTState, []byte("b"), []byte("a")), ErrInvalidRange)
	require.ErrorIs(t, b.DeleteRange(Keyspace(0x05), nil, nil), ErrInvalidKeyspace)
	require.True(t, b.Empty())
}

func TestIndexedBatchReadsItsOwnWritesOverCommittedState(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("old")))
		require.NoError(t, b.Set(UserData, []byte("b"), []byte("old")))
	})
	b := e.NewIndexedBatch()
	defer b.Close()
	require.NoError(t, b.Set(UserData, []byte("a"), []byte("new")))
	require.NoError(t, b.Delete(UserData, []byte("b")))
	require.NoError(t, b.Set(UserData, []byte("c"), []byte("new")))

	v, err := b.Get(UserData, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "new", string(v))
	_, err = b.Get(UserData, []byte("b"))
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, []kv{{UserData, "a", "new"}, {UserData, "c", "new"}}, dump(t, b, UserData))

	require.NoError(t, e.Commit(b, false))
	require.Equal(t, []kv{{UserData, "a", "new"}, {UserData, "c", "new"}}, dump(t, e, UserData))
	requireDigestConsistent(t, e)
}

func TestPlainBatchRefusesReads(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	defer b.Close()
	_, err := b.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrNotIndexed)
	require.ErrorIs(t, b.Scan(UserData, nil, nil, 0, func(k, v []byte) error { return nil }), ErrNotIndexed)
}

func TestBFTStateOnlyCommitsLeaveTheDigestAlone(t *testing.T) {
	e := openMem(t)
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("v"))) })
	before, err := e.Sum()
	require.NoError(t, err)
	persistedBefore, err := getCopy(e.db, digestKey)
	require.NoError(t, err)

	commit(t, e, true, func(b *Batch) {
		require.NoError(t, b.Set(BFTState, []byte("seq"), []byte{1}))
		require.NoError(t, b.DeleteRange(BFTState, nil, []byte("a")))
	})
	after, err := e.Sum()
	require.NoError(t, err)
	require.Equal(t, before, after)
	persistedAfter, err := getCopy(e.db, digestKey)
	require.NoError(t, err)
	require.Equal(t, persistedBefore, persistedAfter)
}

func TestConcurrentReplicatedCommitsKeepTheDigestExact(t *testing.T) {
	e := openMem(t)
	const writers, rounds = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := e.NewBatch()
			defer b.Close()
			for r := range rounds {
				b.Reset()
				// Every writer overwrites the shared keys and its own.
				for k := range 4 {
					if err := b.Set(UserData, []byte{'s', byte(k)}, []byte{byte(w), byte(r)}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := b.Set(TxnRecords, []byte{'w', byte(w)}, []byte{byte(r)}); err != nil {
					t.Error(err)
					return
				}
				if r%3 == 0 {
					if err := b.Delete(UserData, []byte{'s', byte(r % 4)}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := b.Set(BFTState, []byte{'w', byte(w)}, []byte{byte(r)}); err != nil {
					t.Error(err)
					return
				}
				if err := e.Commit(b, r%5 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	requireDigestConsistent(t, e)
}

func TestReplicatedCommitDoesNotAllocatePerWrite(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	if invariants.Enabled {
		t.Skip("pebble's own invariants build (the same tag) allocates on every write")
	}
	e := openMem(t)
	value := make([]byte, 100)
	b := e.NewBatch()
	defer b.Close()
	// AllocsPerRun counts the whole process's allocations, pebble's
	// background work included, so compare commits of 10 and 100 writes:
	// the digest update reuses its scratch, so ten times the writes must not
	// cost more allocations (the difference stays near zero, not near 90).
	commitsOf := func(n int) float64 {
		return testing.AllocsPerRun(50, func() {
			b.Reset()
			for i := range n {
				_ = b.Set(UserData, []byte{'k', byte(i)}, value)
			}
			if err := e.Commit(b, false); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := commitsOf(10), commitsOf(100)
	t.Logf("allocations per replicated commit: %.1f (10 writes), %.1f (100 writes)", small, large)
	require.LessOrEqual(t, large-small, 5.0, "allocations grow with the writes of a replicated commit")
}
