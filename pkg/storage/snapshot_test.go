package storage

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSnapshotSeesStateAtCreationDespiteLaterCommits(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("1")))
		require.NoError(t, b.Set(UserData, []byte("b"), []byte("1")))
		require.NoError(t, b.Set(BFTState, []byte("seq"), []byte{1}))
	})
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	defer s.Close()
	sumAtSnapshot, err := e.Sum()
	require.NoError(t, err)

	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("a"), []byte("2")))
		require.NoError(t, b.Delete(UserData, []byte("b")))
		require.NoError(t, b.Set(UserData, []byte("c"), []byte("2")))
		require.NoError(t, b.Set(BFTState, []byte("seq"), []byte{2}))
	})

	v, err := s.Get(UserData, []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v))
	_, err = s.Get(UserData, []byte("c"))
	require.ErrorIs(t, err, ErrNotFound)
	require.Equal(t, []kv{{BFTState, "seq", "\x01"}, {UserData, "a", "1"}, {UserData, "b", "1"}}, dump(t, s))

	require.Equal(t, sumAtSnapshot, s.Sum(), "the snapshot's digest is the one of its state")
	d := s.Digest()
	require.Equal(t, sumAtSnapshot, d.Sum())
	recomputed, err := s.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, s.Digest(), recomputed)
	now, err := e.Sum()
	require.NoError(t, err)
	require.NotEqual(t, now, s.Sum())
}

func TestSnapshotDigestIsConsistentUnderConcurrentCommits(t *testing.T) {
	e := openMem(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		b := e.NewBatch()
		defer b.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b.Reset()
			if err := b.Set(UserData, []byte{byte(i % 16)}, []byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			if err := e.Commit(b, false); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		s, err := e.NewSnapshot()
		require.NoError(t, err)
		d, err := s.RecomputeDigest()
		require.NoError(t, err)
		require.Equal(t, d, s.Digest())
		require.NoError(t, s.Close())
	}
	close(stop)
	wg.Wait()
}

func TestClosedSnapshotReturnsErrClosed(t *testing.T) {
	e := openMem(t)
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")
	_, err = s.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Scan(UserData, nil, nil, 0, func(k, v []byte) error { return nil }), ErrClosed)
	_, err = s.RecomputeDigest()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Export(t.Context(), 1024, func(Chunk) error { return nil }), ErrClosed)
}

func TestEngineCloseClosesOpenSnapshots(t *testing.T) {
	e := openMem(t)
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	require.NoError(t, e.Close())
	_, err = s.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, s.Close())
}
