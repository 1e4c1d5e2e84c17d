package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The benchmarks run on a real directory (b.TempDir) so that fsync costs what
// it costs on this machine. Keys are 16 bytes, values 100 bytes.
const (
	benchKeys      = 100_000
	benchValueSize = 100
)

// benchKeyList holds the keys, built once so that the benchmarks do not
// count their construction.
var benchKeyList = sync.OnceValue(func() [][]byte {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64([]byte("user0000"), uint64(i))
	}
	return keys
})

func benchKey(i int) []byte { return benchKeyList()[i] }

// openBench opens an engine in a temporary directory, preloaded with
// benchKeys keys in UserData.
func openBench(b *testing.B) *Engine {
	b.Helper()
	e, err := Open(b.TempDir(), Options{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = e.Close() })
	value := make([]byte, benchValueSize)
	batch := e.NewBatch()
	defer batch.Close()
	for i := range benchKeys {
		require.NoError(b, batch.Set(UserData, benchKey(i), value))
		if batch.Count() == 10_000 {
			require.NoError(b, e.Commit(batch, false))
			batch.Reset()
		}
	}
	require.NoError(b, e.Commit(batch, true))
	return e
}

func BenchmarkGet(b *testing.B) {
	e := openBench(b)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Get(UserData, benchKey(rng.IntN(benchKeys))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScan100Rows(b *testing.B) {
	e := openBench(b)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		err := e.Scan(UserData, benchKey(rng.IntN(benchKeys-100)), nil, 100, func(k, v []byte) error {
			n++
			return nil
		})
		if err != nil || n != 100 {
			b.Fatalf("scan: %v, %d rows", err, n)
		}
	}
}

// BenchmarkCommit commits batches of 1 and 100 writes, with and without
// fsync. "replicated" overwrites existing UserData keys, the worst case of
// the digest update (two element expansions per write); "bft-state" writes
// the replica-local keyspace, which pays no digest work.
func BenchmarkCommit(b *testing.B) {
	for _, ks := range []Keyspace{UserData, BFTState} {
		name := "replicated"
		if ks == BFTState {
			name = "bft-state"
		}
		for _, ops := range []int{1, 100} {
			for _, sync := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/ops=%d/sync=%v", name, ops, sync), func(b *testing.B) {
					e := openBench(b)
					rng := rand.New(rand.NewPCG(1, 1))
					value := make([]byte, benchValueSize)
					batch := e.NewBatch()
					defer batch.Close()
					b.ReportAllocs()
					for b.Loop() {
						batch.Reset()
						for range ops {
							value[0]++
							if err := batch.Set(ks, benchKey(rng.IntN(benchKeys)), value); err != nil {
								b.Fatal(err)
							}
						}
						if err := e.Commit(batch, sync); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*ops), "ns/write")
				})
			}
		}
	}
}

// BenchmarkDigestUpdate measures the digest work per written element: one
// expansion and lane addition for an insert or a delete, two for an
// overwrite.
func BenchmarkDigestUpdate(b *testing.B) {
	for _, size := range []int{100, 1024} {
		key, value := benchKey(42), make([]byte, size)
		b.Run(fmt.Sprintf("insert/value=%d", size), func(b *testing.B) {
			h := newElementHasher()
			var d Digest
			b.ReportAllocs()
			for b.Loop() {
				value[0]++
				d.addLanes(h.expand(UserData, key, value))
			}
		})
		b.Run(fmt.Sprintf("overwrite/value=%d", size), func(b *testing.B) {
			h := newElementHasher()
			var d Digest
			old := make([]byte, size)
			b.ReportAllocs()
			for b.Loop() {
				value[0]++
				d.subLanes(h.expand(UserData, key, old))
				d.addLanes(h.expand(UserData, key, value))
			}
		})
	}
	b.Run("sum", func(b *testing.B) {
		var d Digest
		d.Add(UserData, []byte("k"), []byte("v"))
		b.ReportAllocs()
		for b.Loop() {
			_ = d.Sum()
		}
	})
}

// BenchmarkCheckpoint exports and installs the benchKeys-key state.
func BenchmarkCheckpoint(b *testing.B) {
	src := openBench(b)
	s, err := src.NewSnapshot()
	require.NoError(b, err)
	defer s.Close()
	var chunks [][]byte
	var total int64
	require.NoError(b, s.Export(b.Context(), DefaultChunkBytes, func(c Chunk) error {
		enc := c.Marshal()
		chunks = append(chunks, enc)
		total += int64(len(enc))
		return nil
	}))

	b.Run("export", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Export(b.Context(), DefaultChunkBytes, func(c Chunk) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("install", func(b *testing.B) {
		dst, err := Open(b.TempDir(), Options{})
		require.NoError(b, err)
		defer dst.Close()
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			i := 0
			next := func() (Chunk, error) {
				if i == len(chunks) {
					return Chunk{}, io.EOF
				}
				i++
				return UnmarshalChunk(chunks[i-1])
			}
			if err := dst.InstallCheckpoint(b.Context(), next, s.Sum()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBatchGet reads random keys through an indexed batch the way the
// transaction engine executes a PBFT batch: reads interleaved with writes to
// the same batch, committed every 100 transactions of 4 reads and 4 writes.
func BenchmarkBatchGet(b *testing.B) {
	e := openBench(b)
	rng := rand.New(rand.NewPCG(1, 1))
	value := make([]byte, benchValueSize)
	batch := e.NewIndexedBatch()
	defer batch.Close()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := batch.Get(UserData, benchKey(rng.IntN(benchKeys))); err != nil {
			b.Fatal(err)
		}
		n++
		if n%4 == 0 {
			for range 4 {
				if err := batch.Set(UserData, benchKey(rng.IntN(benchKeys)), value); err != nil {
					b.Fatal(err)
				}
			}
		}
		if n%400 == 0 {
			if err := e.Commit(batch, false); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
}
