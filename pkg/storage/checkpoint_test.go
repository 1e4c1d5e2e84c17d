package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// exportAll exports the snapshot and returns the encoded chunks.
func exportAll(t testing.TB, s *Snapshot, chunkBytes int) [][]byte {
	t.Helper()
	var out [][]byte
	require.NoError(t, s.Export(t.Context(), chunkBytes, func(c Chunk) error {
		out = append(out, c.Marshal())
		return nil
	}))
	return out
}

// exportEngine exports a fresh snapshot of e and returns the chunks and the
// snapshot's sum.
func exportEngine(t testing.TB, e *Engine, chunkBytes int) ([][]byte, [SumSize]byte) {
	t.Helper()
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	defer s.Close()
	return exportAll(t, s, chunkBytes), s.Sum()
}

// stream yields the decoded encoded chunks, then io.EOF.
func stream(encoded [][]byte) func() (Chunk, error) {
	i := 0
	return func() (Chunk, error) {
		if i == len(encoded) {
			return Chunk{}, io.EOF
		}
		i++
		return UnmarshalChunk(encoded[i-1])
	}
}

// chunkStream yields the given chunks, then io.EOF.
func chunkStream(chunks ...Chunk) func() (Chunk, error) {
	i := 0
	return func() (Chunk, error) {
		if i == len(chunks) {
			return Chunk{}, io.EOF
		}
		i++
		return chunks[i-1], nil
	}
}

// rawDump returns every key and value of the store, internal records
// included, as one string.
func rawDump(t testing.TB, e *Engine) string {
	t.Helper()
	it, err := e.db.NewIter(nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	for valid := it.First(); valid; valid = it.Next() {
		fmt.Fprintf(&buf, "%x=%x\n", it.Key(), it.Value())
	}
	require.NoError(t, it.Close())
	return buf.String()
}

// fillSource writes n entries spread over the replicated keyspaces, plus
// BFTState records.
func fillSource(t testing.TB, e *Engine, n int, tag string) {
	t.Helper()
	commit(t, e, true, func(b *Batch) {
		for i := range n {
			ks := ReplicatedKeyspaces()[i%4]
			require.NoError(t, b.Set(ks, fmt.Appendf(nil, "key-%05d", i), fmt.Appendf(nil, "%s-value-%d", tag, i)))
		}
		require.NoError(t, b.Set(BFTState, []byte("view"), []byte(tag)))
	})
}

func TestExportIsDeterministicAndIgnoresLocalState(t *testing.T) {
	a, b := openMem(t), openMem(t)
	fillSource(t, a, 200, "x")
	// b reaches the same replicated contents by another path, and has other
	// BFTState.
	commit(t, b, false, func(bt *Batch) {
		require.NoError(t, bt.Set(UserData, []byte("junk"), []byte("gone soon")))
		require.NoError(t, bt.Set(BFTState, []byte("other"), []byte("local")))
	})
	for i := 199; i >= 0; i-- {
		commit(t, b, false, func(bt *Batch) {
			require.NoError(t, bt.Set(ReplicatedKeyspaces()[i%4], fmt.Appendf(nil, "key-%05d", i), fmt.Appendf(nil, "x-value-%d", i)))
		})
	}
	commit(t, b, false, func(bt *Batch) { require.NoError(t, bt.Delete(UserData, []byte("junk"))) })

	chunksA, sumA := exportEngine(t, a, 500)
	chunksB, sumB := exportEngine(t, b, 500)
	require.Equal(t, sumA, sumB)
	require.Equal(t, chunksA, chunksB, "same contents must give the same chunks")
	require.Greater(t, len(chunksA), 5)
}

func TestExportCutsBoundedNumberedChunksEndingWithFinal(t *testing.T) {
	e := openMem(t)
	fillSource(t, e, 300, "v")
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("huge"), bytes.Repeat([]byte{1}, 5000)))
	})
	const limit = 700
	chunks, _ := exportEngine(t, e, limit)
	var entries []kv
	for i, enc := range chunks {
		c, err := UnmarshalChunk(enc)
		require.NoError(t, err)
		require.Equal(t, uint64(i), c.Index)
		require.Equal(t, i == len(chunks)-1, c.Final)
		require.NotEmpty(t, c.Entries)
		if len(c.Entries) > 1 {
			require.LessOrEqual(t, len(enc), limit, "chunk %d", i)
		}
		for _, en := range c.Entries {
			entries = append(entries, kv{en.Keyspace, string(en.Key), string(en.Value)})
		}
	}
	require.Equal(t, dump(t, e, ReplicatedKeyspaces()...), entries, "chunks hold every replicated entry in order, nothing else")
}

func TestExportOfEmptyStateIsOneEmptyFinalChunk(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(BFTState, []byte("seq"), []byte{1})) })
	chunks, sum := exportEngine(t, e, DefaultChunkBytes)
	require.Equal(t, [][]byte{(Chunk{Final: true}).Marshal()}, chunks)
	require.Equal(t, (&Digest{}).Sum(), sum)
}

func TestExportRejectsBadChunkSizeAndStopsOnCallbackError(t *testing.T) {
	e := openMem(t)
	fillSource(t, e, 50, "v")
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	defer s.Close()
	require.ErrorIs(t, s.Export(t.Context(), 0, func(Chunk) error { return nil }), ErrInvalidArgument)
	require.ErrorIs(t, s.Export(t.Context(), MaxChunkSize+1, func(Chunk) error { return nil }), ErrInvalidArgument)

	boom := errors.New("peer went away")
	calls := 0
	err = s.Export(t.Context(), 100, func(Chunk) error { calls++; return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, calls)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.Export(ctx, 100, func(Chunk) error { return nil }), context.Canceled)
}

func TestExportSplitsAtMaxChunkEntries(t *testing.T) {
	e := openMem(t)
	// Write through pebble directly: this test is about chunking, and the
	// digest of 65K writes is slow under the race detector.
	pb := e.db.NewBatch()
	for i := range MaxChunkEntries + 10 {
		require.NoError(t, pb.Set(MakeKey(UserData, fmt.Appendf(nil, "%06d", i)), nil, nil))
	}
	require.NoError(t, e.db.Apply(pb, nil))
	require.NoError(t, pb.Close())
	s, err := e.NewSnapshot()
	require.NoError(t, err)
	defer s.Close()
	var counts []int
	require.NoError(t, s.Export(t.Context(), MaxChunkSize, func(c Chunk) error {
		counts = append(counts, len(c.Entries))
		return nil
	}))
	require.Equal(t, []int{MaxChunkEntries, 10}, counts)
}

func TestInstallCheckpointIntoEmptyStore(t *testing.T) {
	src, dst := openMem(t), openMem(t)
	fillSource(t, src, 500, "src")
	chunks, sum := exportEngine(t, src, 2000)

	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))

	repl := ReplicatedKeyspaces()
	require.Equal(t, dump(t, src, repl...), dump(t, dst, repl...))
	got, err := dst.Sum()
	require.NoError(t, err)
	require.Equal(t, sum, got)
	requireDigestConsistent(t, dst)
	require.Empty(t, dump(t, dst, BFTState), "BFTState is not transferred")
}

func TestInstallCheckpointReplacesReplicatedStateAndKeepsBFTState(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 400, "new")
	chunks, sum := exportEngine(t, src, 1500)

	// Small staging files, so that the state is staged in many sstables.
	dst := openOn(t, vfs.NewMem(), "db", Options{stagingFileSize: 2000})
	commit(t, dst, true, func(b *Batch) {
		for i := range 300 {
			ks := ReplicatedKeyspaces()[(i+1)%4]
			// Overlapping keys with other values, and keys the source lacks.
			require.NoError(t, b.Set(ks, fmt.Appendf(nil, "key-%05d", i*2), []byte("old")))
			require.NoError(t, b.Set(ks, fmt.Appendf(nil, "only-old-%d", i), []byte("old")))
		}
		require.NoError(t, b.Set(BFTState, []byte("view"), []byte("mine")))
		require.NoError(t, b.Set(BFTState, []byte{0xff, 0xff}, []byte("last")))
	})
	bftBefore := dump(t, dst, BFTState)

	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))

	repl := ReplicatedKeyspaces()
	require.Equal(t, dump(t, src, repl...), dump(t, dst, repl...), "old replicated keys must vanish")
	require.Equal(t, bftBefore, dump(t, dst, BFTState))
	requireDigestConsistent(t, dst)

	// The engine keeps working on the installed state.
	commit(t, dst, true, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("key-00000"), []byte("after")))
		require.NoError(t, b.Delete(Metadata, []byte("key-00001")))
	})
	requireDigestConsistent(t, dst)
}

func TestInstallCheckpointSurvivesReopen(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 100, "src")
	chunks, sum := exportEngine(t, src, 500)

	fs := vfs.NewMem()
	dst, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	fillSource(t, dst, 50, "old")
	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))
	require.NoError(t, dst.Close())

	dst = openOn(t, fs, "db", Options{VerifyDigestOnOpen: true})
	got, err := dst.Sum()
	require.NoError(t, err)
	require.Equal(t, sum, got)
	require.Equal(t, dump(t, src, ReplicatedKeyspaces()...), dump(t, dst, ReplicatedKeyspaces()...))
}

func TestInstallCheckpointLeavesOpenSnapshotsAtTheirState(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 100, "new")
	chunks, sum := exportEngine(t, src, 500)

	dst := openMem(t)
	fillSource(t, dst, 100, "old")
	s, err := dst.NewSnapshot()
	require.NoError(t, err)
	defer s.Close()
	before := dump(t, s)
	sumBefore := s.Sum()

	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))

	require.Equal(t, before, dump(t, s), "a snapshot taken before the install must not change")
	recomputed, err := s.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, sumBefore, recomputed.Sum())
	// And it can still serve the old checkpoint.
	reexport := exportAll(t, s, 500)
	fresh := openMem(t)
	require.NoError(t, fresh.InstallCheckpoint(t.Context(), stream(reexport), sumBefore))
}

func TestInstallCheckpointOfEmptyStateClearsReplicatedKeyspaces(t *testing.T) {
	dst := openMem(t)
	fillSource(t, dst, 100, "old")
	require.NoError(t, dst.InstallCheckpoint(t.Context(), chunkStream(Chunk{Final: true}), (&Digest{}).Sum()))
	require.Empty(t, dump(t, dst, ReplicatedKeyspaces()...))
	require.NotEmpty(t, dump(t, dst, BFTState))
	requireDigestConsistent(t, dst)
}

func TestInstallCheckpointRejectsTamperedStreamsAndChangesNothing(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 200, "src")
	chunks, sum := exportEngine(t, src, 800)
	require.Greater(t, len(chunks), 4)
	decode := func(i int) Chunk {
		c, err := UnmarshalChunk(chunks[i])
		require.NoError(t, err)
		return c.Clone()
	}
	all := func() []Chunk {
		out := make([]Chunk, len(chunks))
		for i := range chunks {
			out[i] = decode(i)
		}
		return out
	}

	for _, tc := range []struct {
		name   string
		chunks func() []Chunk
		sum    [SumSize]byte
		want   error
	}{
		{"changed value", func() []Chunk {
			cs := all()
			cs[2].Entries[1].Value = []byte("tampered")
			return cs
		}, sum, ErrDigestMismatch},
		{"extra key", func() []Chunk {
			cs := all()
			last := &cs[len(cs)-1]
			last.Entries = append(last.Entries, Entry{Keyspace: ReplyCache, Key: []byte("zzz-extra"), Value: []byte("x")})
			return cs
		}, sum, ErrDigestMismatch},
		{"dropped entry", func() []Chunk {
			cs := all()
			cs[1].Entries = cs[1].Entries[1:]
			return cs
		}, sum, ErrDigestMismatch},
		{"wrong expected digest", all, [SumSize]byte{1}, ErrDigestMismatch},
		{"dropped middle chunk", func() []Chunk {
			cs := all()
			return append(cs[:2], cs[3:]...)
		}, sum, ErrChunkOrder},
		{"dropped final chunk", func() []Chunk {
			cs := all()
			return cs[:len(cs)-1]
		}, sum, ErrChunkOrder},
		{"renumbered after a dropped chunk", func() []Chunk {
			cs := all()
			cs = append(cs[:2], cs[3:]...)
			for i := range cs {
				cs[i].Index = uint64(i)
			}
			return cs
		}, sum, ErrDigestMismatch},
		{"swapped chunks", func() []Chunk {
			cs := all()
			cs[1], cs[2] = cs[2], cs[1]
			return cs
		}, sum, ErrChunkOrder},
		{"swapped and renumbered chunks", func() []Chunk {
			cs := all()
			cs[1], cs[2] = cs[2], cs[1]
			cs[1].Index, cs[2].Index = 1, 2
			return cs
		}, sum, ErrChunkOrder},
		{"duplicated chunk", func() []Chunk {
			cs := all()
			dup := cs[1]
			dup.Index = 2
			rest := cs[2:]
			for i := range rest {
				rest[i].Index++
			}
			return append(append(cs[:2:2], dup), rest...)
		}, sum, ErrChunkOrder},
		{"chunk after the final chunk", func() []Chunk {
			cs := all()
			return append(cs, Chunk{Index: uint64(len(cs)), Final: true})
		}, sum, ErrChunkOrder},
		{"bft state entry", func() []Chunk {
			cs := all()
			cs[0].Entries = append([]Entry{{Keyspace: BFTState, Key: []byte("view"), Value: []byte("evil")}}, cs[0].Entries...)
			return cs
		}, sum, ErrInvalidChunk},
		{"internal digest record", func() []Chunk {
			cs := all()
			last := &cs[len(cs)-1]
			last.Entries = append(last.Entries, Entry{Keyspace: ksReplicatedMeta, Key: digestKey[1:], Value: make([]byte, DigestSize)})
			return cs
		}, sum, ErrInvalidChunk},
		{"empty key", func() []Chunk {
			cs := all()
			cs[0].Entries = append([]Entry{{Keyspace: UserData, Key: nil, Value: []byte("v")}}, cs[0].Entries...)
			return cs
		}, sum, ErrInvalidChunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := openMem(t)
			fillSource(t, dst, 120, "old")
			before := rawDump(t, dst)
			sumBefore, err := dst.Sum()
			require.NoError(t, err)

			err = dst.InstallCheckpoint(t.Context(), chunkStream(tc.chunks()...), tc.sum)
			require.ErrorIs(t, err, tc.want)

			require.Equal(t, before, rawDump(t, dst), "a rejected stream must change nothing")
			sumAfter, err := dst.Sum()
			require.NoError(t, err)
			require.Equal(t, sumBefore, sumAfter)
			requireDigestConsistent(t, dst)
		})
	}
}

func TestInstallCheckpointStopsOnStreamErrorAndCancellation(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 100, "src")
	chunks, sum := exportEngine(t, src, 500)

	dst := openMem(t)
	fillSource(t, dst, 50, "old")
	before := rawDump(t, dst)

	lost := errors.New("connection reset")
	n := 0
	next := func() (Chunk, error) {
		if n == 2 {
			return Chunk{}, lost
		}
		n++
		return UnmarshalChunk(chunks[n-1])
	}
	require.ErrorIs(t, dst.InstallCheckpoint(t.Context(), next, sum), lost)
	require.Equal(t, before, rawDump(t, dst))

	ctx, cancel := context.WithCancel(t.Context())
	n = 0
	next = func() (Chunk, error) {
		n++
		if n == 2 {
			cancel()
		}
		if n > len(chunks) {
			return Chunk{}, io.EOF
		}
		return UnmarshalChunk(chunks[n-1])
	}
	require.ErrorIs(t, dst.InstallCheckpoint(ctx, next, sum), context.Canceled)
	require.Equal(t, before, rawDump(t, dst))

	// The staging directory is gone after a failed install.
	_, err := dst.fs.Stat(dst.fs.PathJoin(dst.dir, stagingDirName))
	require.Error(t, err)
}

func TestInstalledSSTablesTileTheReplicatedSpan(t *testing.T) {
	// With small staging files the install ingests many sstables; pebble
	// rejects overlapping ones, and the tombstones must leave no gap where
	// an old key could survive.
	src := openMem(t)
	fillSource(t, src, 300, "new")
	chunks, sum := exportEngine(t, src, 300)
	dst := openOn(t, vfs.NewMem(), "db", Options{stagingFileSize: 1})
	commit(t, dst, true, func(b *Batch) {
		for i := range 600 {
			require.NoError(t, b.Set(ReplicatedKeyspaces()[i%4], fmt.Appendf(nil, "key-%05d-old", i/2), []byte("old")))
		}
	})
	require.NoError(t, dst.InstallCheckpoint(t.Context(), stream(chunks), sum))
	require.Equal(t, dump(t, src, ReplicatedKeyspaces()...), dump(t, dst, ReplicatedKeyspaces()...))
	// An ingestion that overlaps the memtable is recorded once flushed.
	require.NoError(t, dst.db.Flush())
	m := dst.db.Metrics()
	var ingested uint64
	for _, l := range m.Levels {
		ingested += l.TablesIngested
	}
	require.Greater(t, ingested, uint64(100), "one sstable per staged entry")
	requireDigestConsistent(t, dst)
}
