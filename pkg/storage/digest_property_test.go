package storage

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// op is one write of a generated history.
type op struct {
	ks    Keyspace
	key   []byte
	value []byte
	del   bool
}

var allKeyspaces = []Keyspace{BFTState, UserData, Metadata, TxnRecords, ReplyCache}

func genKey() *rapid.Generator[[]byte] {
	// A small alphabet, so that histories hit the same keys often.
	return rapid.SliceOfN(rapid.ByteRange('a', 'c'), 1, 3)
}

func genOp() *rapid.Generator[op] {
	return rapid.Custom(func(t *rapid.T) op {
		return op{
			ks:    rapid.SampledFrom(allKeyspaces).Draw(t, "ks"),
			key:   genKey().Draw(t, "key"),
			value: rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "value"),
			del:   rapid.IntRange(0, 3).Draw(t, "kind") == 0,
		}
	})
}

// openRapid opens an in-memory engine for one rapid run.
func openRapid(t *rapid.T) *Engine {
	e, err := Open("db", Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// applyOps commits ops, cutting them into batches at the given sizes (the
// rest in one last batch).
func applyOps(t *rapid.T, e *Engine, ops []op, batchSizes []int) {
	b := e.NewBatch()
	defer b.Close()
	flush := func() {
		if err := e.Commit(b, false); err != nil {
			t.Fatalf("commit: %v", err)
		}
		b.Reset()
	}
	i := 0
	for _, o := range ops {
		var err error
		if o.del {
			err = b.Delete(o.ks, o.key)
		} else {
			err = b.Set(o.ks, o.key, o.value)
		}
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		if i < len(batchSizes) && b.Count() >= batchSizes[i] {
			flush()
			i++
		}
	}
	flush()
}

func sumOf(t *rapid.T, e *Engine) [SumSize]byte {
	s, err := e.Sum()
	if err != nil {
		t.Fatalf("sum: %v", err)
	}
	return s
}

func genBatchSizes() *rapid.Generator[[]int] {
	return rapid.SliceOfN(rapid.IntRange(1, 6), 0, 10)
}

func TestPropertyDigestDoesNotDependOnWriteOrderOrBatching(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Distinct keys, so that every order reaches the same contents.
		sets := rapid.SliceOfNDistinct(genOp(), 0, 20, func(o op) string {
			return string(MakeKey(o.ks, o.key))
		}).Draw(t, "sets")
		for i := range sets {
			sets[i].del = false
		}
		perm := rapid.Permutation(sets).Draw(t, "permutation")

		e1, e2 := openRapid(t), openRapid(t)
		applyOps(t, e1, sets, genBatchSizes().Draw(t, "batches1"))
		applyOps(t, e2, perm, genBatchSizes().Draw(t, "batches2"))
		if sumOf(t, e1) != sumOf(t, e2) {
			t.Fatalf("same writes in another order or batching gave another digest")
		}
	})
}

func TestPropertyPutThenDeleteRestoresTheDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := openRapid(t)
		applyOps(t, e, rapid.SliceOfN(genOp(), 0, 20).Draw(t, "history"), genBatchSizes().Draw(t, "batches"))
		before := sumOf(t, e)
		ks := rapid.SampledFrom(ReplicatedKeyspaces()).Draw(t, "ks")
		// A fresh key (outside the generated alphabet) is absent.
		key := append([]byte("fresh-"), genKey().Draw(t, "key")...)
		value := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "value")
		together := rapid.Bool().Draw(t, "same batch")
		if together {
			applyOps(t, e, []op{{ks: ks, key: key, value: value}, {ks: ks, key: key, del: true}}, nil)
		} else {
			applyOps(t, e, []op{{ks: ks, key: key, value: value}}, nil)
			if sumOf(t, e) == before {
				t.Fatalf("adding an element did not change the digest")
			}
			applyOps(t, e, []op{{ks: ks, key: key, del: true}}, nil)
		}
		if sumOf(t, e) != before {
			t.Fatalf("put then delete did not restore the digest")
		}
	})
}

func TestPropertyOverwriteEqualsDeleteThenPut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		history := rapid.SliceOfN(genOp(), 0, 20).Draw(t, "history")
		sizes := genBatchSizes().Draw(t, "batches")
		ks := rapid.SampledFrom(ReplicatedKeyspaces()).Draw(t, "ks")
		key := genKey().Draw(t, "key")
		v1 := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "v1")
		v2 := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "v2")

		overwrite, deletePut := openRapid(t), openRapid(t)
		for _, e := range []*Engine{overwrite, deletePut} {
			applyOps(t, e, history, sizes)
			applyOps(t, e, []op{{ks: ks, key: key, value: v1}}, nil)
		}
		applyOps(t, overwrite, []op{{ks: ks, key: key, value: v2}}, nil)
		applyOps(t, deletePut, []op{{ks: ks, key: key, del: true}}, nil)
		applyOps(t, deletePut, []op{{ks: ks, key: key, value: v2}}, nil)
		if sumOf(t, overwrite) != sumOf(t, deletePut) {
			t.Fatalf("overwrite and delete+put gave different digests")
		}
	})
}

func TestPropertyDigestsAreEqualExactlyWhenReplicatedContentsAre(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e1, e2 := openRapid(t), openRapid(t)
		applyOps(t, e1, rapid.SliceOfN(genOp(), 0, 20).Draw(t, "history1"), genBatchSizes().Draw(t, "batches1"))
		applyOps(t, e2, rapid.SliceOfN(genOp(), 0, 20).Draw(t, "history2"), genBatchSizes().Draw(t, "batches2"))
		repl := ReplicatedKeyspaces()
		c1, c2 := dump(t, e1, repl...), dump(t, e2, repl...)
		sameContents := len(c1) == len(c2)
		for i := 0; sameContents && i < len(c1); i++ {
			sameContents = c1[i] == c2[i]
		}
		if sameSum := sumOf(t, e1) == sumOf(t, e2); sameSum != sameContents {
			t.Fatalf("same contents: %v, same digest: %v\n%v\n%v", sameContents, sameSum, c1, c2)
		}
	})
}

func TestPropertyIncrementalDigestEqualsRecomputation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := openRapid(t)
		rounds := rapid.IntRange(1, 4).Draw(t, "rounds")
		for range rounds {
			applyOps(t, e, rapid.SliceOfN(genOp(), 0, 20).Draw(t, "ops"), genBatchSizes().Draw(t, "batches"))
			got, err := e.Digest()
			require.NoError(t, err)
			want, err := e.RecomputeDigest()
			require.NoError(t, err)
			if got != want {
				t.Fatalf("incremental digest %s, recomputed %s", got, want)
			}
			// And both equal the digest of the contents computed directly.
			if direct := digestOf(dump(t, e)); direct != want {
				t.Fatalf("recomputed digest %s, direct %s", want, direct)
			}
		}
	})
}
