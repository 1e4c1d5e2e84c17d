package storage

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

func TestGetReturnsCommittedValueAndNotFoundForAbsentKey(t *testing.T) {
	e := openMem(t)
	commit(t, e, true, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("k"), []byte("v")))
		require.NoError(t, b.Set(UserData, []byte("empty"), nil))
	})
	v, err := e.Get(UserData, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, []byte("v"), v)

	v, err = e.Get(UserData, []byte("empty"))
	require.NoError(t, err, "a key set to an empty value is present")
	require.NotNil(t, v)
	require.Empty(t, v)

	_, err = e.Get(UserData, []byte("absent"))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestKeyspacesAreDisjoint(t *testing.T) {
	e := openMem(t)
	all := []Keyspace{BFTState, UserData, Metadata, TxnRecords, ReplyCache}
	commit(t, e, false, func(b *Batch) {
		for _, ks := range all {
			require.NoError(t, b.Set(ks, []byte("same"), []byte(ks.String())))
		}
	})
	for _, ks := range all {
		v, err := e.Get(ks, []byte("same"))
		require.NoError(t, err)
		require.Equal(t, ks.String(), string(v))
		got := dump(t, e, ks)
		require.Equal(t, []kv{{ks, "same", ks.String()}}, got, "a scan stays inside its keyspace")
	}
}

func TestScanReturnsKeysInOrderWithinBoundsAndLimit(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) {
		for i := 9; i >= 0; i-- {
			require.NoError(t, b.Set(UserData, []byte{byte('a' + i)}, []byte{byte('0' + i)}))
		}
		// Neighbours in the adjacent keyspaces must not leak in.
		require.NoError(t, b.Set(BFTState, []byte{0xff}, nil))
		require.NoError(t, b.Set(Metadata, []byte{0x00}, nil))
	})
	keys := func(start, end []byte, limit int) string {
		var out []byte
		require.NoError(t, e.Scan(UserData, start, end, limit, func(k, v []byte) error {
			out = append(out, k...)
			return nil
		}))
		return string(out)
	}
	require.Equal(t, "abcdefghij", keys(nil, nil, 0))
	require.Equal(t, "cdef", keys([]byte("c"), []byte("g"), 0))
	require.Equal(t, "cd", keys([]byte("c"), []byte("g"), 2))
	require.Equal(t, "hij", keys([]byte("h"), nil, 0))
	require.Equal(t, "ab", keys(nil, []byte("c"), 0))
	require.Equal(t, "", keys([]byte("c"), []byte("c"), 0), "start == end is empty")
	require.Equal(t, "abcdefghij", keys([]byte{}, nil, 0), "an empty start is the keyspace start")
}

func TestScanStopsEarlyOnErrStopScanAndPropagatesOtherErrors(t *testing.T) {
	e := openMem(t)
	commit(t, e, false, func(b *Batch) {
		for i := range 5 {
			require.NoError(t, b.Set(UserData, []byte{byte('a' + i)}, nil))
		}
	})
	n := 0
	require.NoError(t, e.Scan(UserData, nil, nil, 0, func(k, v []byte) error {
		n++
		if n == 2 {
			return ErrStopScan
		}
		return nil
	}))
	require.Equal(t, 2, n)

	boom := errors.New("boom")
	err := e.Scan(UserData, nil, nil, 0, func(k, v []byte) error { return boom })
	require.ErrorIs(t, err, boom)
}

func TestScanRejectsInvalidRangeAndKeyspace(t *testing.T) {
	e := openMem(t)
	noop := func(k, v []byte) error { return nil }
	require.ErrorIs(t, e.Scan(UserData, []byte("b"), []byte("a"), 0, noop), ErrInvalidRange)
	require.ErrorIs(t, e.Scan(Keyspace(0x7f), nil, nil, 0, noop), ErrInvalidKeyspace)
	require.ErrorIs(t, e.Scan(ksReplicatedMeta, nil, nil, 0, noop), ErrInvalidKeyspace,
		"internal keyspaces are not reachable")
}

func TestWritesAndReadsRejectBadKeysValuesAndKeyspaces(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	defer b.Close()
	require.ErrorIs(t, b.Set(UserData, nil, []byte("v")), ErrEmptyKey)
	require.ErrorIs(t, b.Set(UserData, make([]byte, MaxKeySize+1), nil), ErrKeyTooLarge)
	require.NoError(t, b.Set(UserData, make([]byte, MaxKeySize), nil), "MaxKeySize itself is allowed")
	require.ErrorIs(t, b.Set(UserData, []byte("k"), make([]byte, MaxValueSize+1)), ErrValueTooLarge)
	require.ErrorIs(t, b.Set(Keyspace(0), []byte("k"), nil), ErrInvalidKeyspace)
	require.ErrorIs(t, b.Set(ksLocal, []byte("format"), nil), ErrInvalidKeyspace)
	require.ErrorIs(t, b.Delete(UserData, nil), ErrEmptyKey)
	require.ErrorIs(t, b.Delete(Keyspace(0x20), []byte("k")), ErrInvalidKeyspace)
	require.Equal(t, 1, b.Count(), "rejected writes are not added")

	_, err := e.Get(UserData, nil)
	require.ErrorIs(t, err, ErrEmptyKey)
	_, err = e.Get(UserData, make([]byte, MaxKeySize+1))
	require.ErrorIs(t, err, ErrKeyTooLarge)
	_, err = e.Get(Keyspace(0x14), []byte("k"))
	require.ErrorIs(t, err, ErrInvalidKeyspace)
}

func TestLargestValueRoundTrips(t *testing.T) {
	e := openMem(t)
	big := bytes.Repeat([]byte{0xab}, MaxValueSize)
	commit(t, e, false, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("big"), big))
	})
	v, err := e.Get(UserData, []byte("big"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, v))
	requireDigestConsistent(t, e)
}

func TestClosedEngineReturnsErrClosed(t *testing.T) {
	e := openMem(t)
	b := e.NewBatch()
	require.NoError(t, b.Set(UserData, []byte("k"), nil))
	require.NoError(t, e.Close())

	require.ErrorIs(t, e.Close(), ErrClosed)
	_, err := e.Get(UserData, []byte("k"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, e.Scan(UserData, nil, nil, 0, func(k, v []byte) error { return nil }), ErrClosed)
	require.ErrorIs(t, e.Commit(b, true), ErrClosed)
	_, err = e.NewSnapshot()
	require.ErrorIs(t, err, ErrClosed)
	_, err = e.Digest()
	require.ErrorIs(t, err, ErrClosed)
	_, err = e.Sum()
	require.ErrorIs(t, err, ErrClosed)
	_, err = e.RecomputeDigest()
	require.ErrorIs(t, err, ErrClosed)
	err = e.InstallCheckpoint(t.Context(), func() (Chunk, error) { return Chunk{Final: true}, nil }, [SumSize]byte{})
	require.ErrorIs(t, err, ErrClosed)

	// A batch made after Close can be filled but not committed.
	late := e.NewBatch()
	require.NoError(t, late.Set(UserData, []byte("k"), nil))
	require.ErrorIs(t, e.Commit(late, true), ErrClosed)
	require.NoError(t, late.Close())
	require.NoError(t, b.Close())
}

func TestReopenKeepsDataAndDigest(t *testing.T) {
	fs := vfs.NewMem()
	e, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	commit(t, e, true, func(b *Batch) {
		require.NoError(t, b.Set(UserData, []byte("k"), []byte("v")))
		require.NoError(t, b.Set(BFTState, []byte("seq"), []byte{7}))
	})
	before, err := e.Sum()
	require.NoError(t, err)
	require.NoError(t, e.Close())

	e = openOn(t, fs, "db", Options{VerifyDigestOnOpen: true})
	after, err := e.Sum()
	require.NoError(t, err)
	require.Equal(t, before, after)
	require.Equal(t, []kv{{BFTState, "seq", "\x07"}, {UserData, "k", "v"}}, dump(t, e))
}

func TestNewStoreHasTheEmptyDigest(t *testing.T) {
	e := openMem(t)
	d, err := e.Digest()
	require.NoError(t, err)
	require.Equal(t, Digest{}, d)
	requireDigestConsistent(t, e)
}

func TestOpenRejectsStoreOfUnknownFormat(t *testing.T) {
	fs := vfs.NewMem()
	e, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	// Forge a newer format marker through pebble directly.
	require.NoError(t, e.db.Set(formatKey, []byte{99}, nil))
	require.NoError(t, e.Close())
	_, err = Open("db", Options{FS: fs})
	require.ErrorIs(t, err, ErrIncompatibleFormat)
}

func TestOpenWithVerifyDetectsDigestThatDoesNotMatchContents(t *testing.T) {
	fs := vfs.NewMem()
	e, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("v"))) })
	// Change a value behind the digest's back.
	require.NoError(t, e.db.Set(MakeKey(UserData, []byte("k")), []byte("forged"), nil))
	require.NoError(t, e.Close())

	_, err = Open("db", Options{FS: fs, VerifyDigestOnOpen: true})
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestOpenCreatesMissingParentDirectories(t *testing.T) {
	fs := vfs.NewMem()
	e := openOn(t, fs, "a/b/c/db", Options{})
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), nil)) })
	_, err := fs.Stat("a/b/c/db")
	require.NoError(t, err)
}

func TestOpenFsyncsParentSoANewStoreSurvivesACrash(t *testing.T) {
	// NewCrashableMem models unsynced directory entries: a crash clone
	// keeps only what was fsynced, so without the parent fsync the store's
	// directory (and everything in it) would vanish.
	fs := vfs.NewCrashableMem()
	e, err := Open("/data/replica-1/db", Options{FS: fs})
	require.NoError(t, err)
	commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("k"), []byte("v"))) })

	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, e.Close())

	e2 := openOn(t, crashed, "/data/replica-1/db", Options{})
	v, err := e2.Get(UserData, []byte("k"))
	require.NoError(t, err, "a synced commit in a new store must survive a crash")
	require.Equal(t, []byte("v"), v)
}

func TestOpenRemovesLeftoverCheckpointStaging(t *testing.T) {
	fs := vfs.NewMem()
	require.NoError(t, fs.MkdirAll("db/"+stagingDirName, 0o755))
	f, err := fs.Create("db/"+stagingDirName+"/000000.sst", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	openOn(t, fs, "db", Options{})
	_, err = fs.Stat("db/" + stagingDirName)
	require.Error(t, err, "staging directory must be gone after Open")
}

func TestOpenRejectsEmptyDirectoryAndNegativeCache(t *testing.T) {
	_, err := Open("", Options{FS: vfs.NewMem()})
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = Open("db", Options{FS: vfs.NewMem(), CacheSize: -1})
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestKeyHelpersRoundTrip(t *testing.T) {
	for _, ks := range []Keyspace{BFTState, UserData, Metadata, TxnRecords, ReplyCache} {
		k := MakeKey(ks, []byte("key\x00\xff"))
		require.Equal(t, byte(ks), k[0])
		gotKS, gotKey, err := ParseKey(k)
		require.NoError(t, err)
		require.Equal(t, ks, gotKS)
		require.Equal(t, []byte("key\x00\xff"), gotKey)
	}
	_, _, err := ParseKey(nil)
	require.ErrorIs(t, err, ErrEmptyKey)
	_, _, err = ParseKey([]byte{byte(UserData)})
	require.ErrorIs(t, err, ErrEmptyKey)
	_, _, err = ParseKey(digestKey)
	require.ErrorIs(t, err, ErrInvalidKeyspace)
}

func TestKeyspacePrefixesAreDistinctAndReplicationIsAsDocumented(t *testing.T) {
	seen := map[byte]Keyspace{}
	for _, ks := range []Keyspace{BFTState, UserData, Metadata, TxnRecords, ReplyCache, ksLocal, ksReplicatedMeta} {
		_, dup := seen[byte(ks)]
		require.False(t, dup, "prefix %#x reused", byte(ks))
		seen[byte(ks)] = ks
	}
	require.Equal(t, []Keyspace{UserData, Metadata, TxnRecords, ReplyCache}, ReplicatedKeyspaces())
	for _, ks := range ReplicatedKeyspaces() {
		require.True(t, ks.Replicated())
		require.True(t, ks.Valid())
		// The replicated span must hold every replicated keyspace and the
		// digest, and nothing local.
		require.True(t, byte(ks) >= replicatedSpanStart && byte(ks) < replicatedDataEnd)
	}
	require.False(t, BFTState.Replicated())
	for _, ks := range []Keyspace{BFTState, ksLocal} {
		require.False(t, byte(ks) >= replicatedSpanStart && byte(ks) < replicatedSpanEnd, "%s inside the replicated span", ks)
	}
	require.True(t, digestKey[0] >= replicatedDataEnd && digestKey[0] < replicatedSpanEnd)
	require.Equal(t, "user-data", UserData.String())
	require.Equal(t, fmt.Sprintf("keyspace(%#02x)", 0x7f), Keyspace(0x7f).String())
}
