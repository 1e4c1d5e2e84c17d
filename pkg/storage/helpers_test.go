package storage

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// openMem opens an engine on a fresh in-memory filesystem and closes it at
// the end of the test.
func openMem(t testing.TB) *Engine {
	t.Helper()
	return openOn(t, vfs.NewMem(), "db", Options{})
}

// openOn opens an engine in dir on fs and closes it at the end of the test
// (unless the test closed it).
func openOn(t testing.TB, fs vfs.FS, dir string, opts Options) *Engine {
	t.Helper()
	opts.FS = fs
	e, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// commit builds a batch with fill and commits it.
func commit(t testing.TB, e *Engine, sync bool, fill func(b *Batch)) {
	t.Helper()
	b := e.NewBatch()
	defer b.Close()
	fill(b)
	require.NoError(t, e.Commit(b, sync))
}

// testingT is what both *testing.T and *rapid.T provide.
type testingT interface {
	require.TestingT
	Helper()
}

type kv struct {
	ks    Keyspace
	key   string
	value string
}

func (x kv) String() string { return fmt.Sprintf("%s/%q=%q", x.ks, x.key, x.value) }

// reader is what Engine, Snapshot and indexed batches share.
type reader interface {
	Get(ks Keyspace, key []byte) ([]byte, error)
	Scan(ks Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error
}

var _ = []reader{(*Engine)(nil), (*Snapshot)(nil), (*Batch)(nil)}

// dump returns every entry of the given keyspaces (all exported keyspaces if
// none are given), in key order.
func dump(t testingT, r reader, kss ...Keyspace) []kv {
	t.Helper()
	if len(kss) == 0 {
		kss = []Keyspace{BFTState, UserData, Metadata, TxnRecords, ReplyCache}
	}
	out := []kv{}
	for _, ks := range kss {
		require.NoError(t, r.Scan(ks, nil, nil, 0, func(k, v []byte) error {
			out = append(out, kv{ks, string(k), string(v)})
			return nil
		}))
	}
	return out
}

// digestOf computes the digest of the replicated entries of kvs directly.
func digestOf(kvs []kv) Digest {
	var d Digest
	for _, x := range kvs {
		if x.ks.Replicated() {
			d.Add(x.ks, []byte(x.key), []byte(x.value))
		}
	}
	return d
}

// sortedKVs sorts entries in engine key order.
func sortedKVs(kvs []kv) []kv {
	kvs = slices.Clone(kvs)
	slices.SortFunc(kvs, func(a, b kv) int {
		if a.ks != b.ks {
			return int(a.ks) - int(b.ks)
		}
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return kvs
}

// requireDigestConsistent checks that the incrementally maintained digest
// equals a recomputation by full scan.
func requireDigestConsistent(t testingT, e *Engine) {
	t.Helper()
	got, err := e.Digest()
	require.NoError(t, err)
	want, err := e.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, want.Sum(), got.Sum(), "incremental digest differs from recomputation")
	require.NoError(t, e.VerifyDigest())
}
