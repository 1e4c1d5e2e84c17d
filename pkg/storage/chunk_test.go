package storage

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func sampleChunk() Chunk {
	return Chunk{
		Index: 300,
		Final: true,
		Entries: []Entry{
			{Keyspace: UserData, Key: []byte("a"), Value: []byte("1")},
			{Keyspace: UserData, Key: []byte("b"), Value: []byte{}},
			{Keyspace: Metadata, Key: []byte("a"), Value: bytes.Repeat([]byte{7}, 200)},
			{Keyspace: ReplyCache, Key: []byte{0}, Value: []byte("r")},
		},
	}
}

func genChunk() *rapid.Generator[Chunk] {
	return rapid.Custom(func(t *rapid.T) Chunk {
		entries := rapid.SliceOfNDistinct(rapid.Custom(func(t *rapid.T) Entry {
			return Entry{
				Keyspace: rapid.SampledFrom(ReplicatedKeyspaces()).Draw(t, "ks"),
				Key:      rapid.SliceOfN(rapid.Byte(), 1, 200).Draw(t, "key"),
				Value:    rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "value"),
			}
		}), 0, 20, func(e Entry) string { return string(MakeKey(e.Keyspace, e.Key)) }).Draw(t, "entries")
		sortEntries(entries)
		return Chunk{
			Index:   rapid.Uint64().Draw(t, "index"),
			Final:   rapid.Bool().Draw(t, "final"),
			Entries: entries,
		}
	})
}

func sortEntries(es []Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && compareEntries(&es[j-1], &es[j]) > 0; j-- {
			es[j-1], es[j] = es[j], es[j-1]
		}
	}
}

func TestChunkRoundTripsThroughItsEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genChunk().Draw(t, "chunk")
		enc := c.Marshal()
		if len(enc) != c.Size() {
			t.Fatalf("Size %d, encoding %d bytes", c.Size(), len(enc))
		}
		got, err := UnmarshalChunk(enc)
		if err != nil {
			t.Fatalf("unmarshal: %v", err)
		}
		if got.Index != c.Index || got.Final != c.Final || len(got.Entries) != len(c.Entries) {
			t.Fatalf("header differs: %+v vs %+v", got, c)
		}
		for i := range c.Entries {
			a, b := c.Entries[i], got.Entries[i]
			if a.Keyspace != b.Keyspace || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) {
				t.Fatalf("entry %d differs", i)
			}
		}
		if !bytes.Equal(got.Marshal(), enc) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestUnmarshalChunkRejectsEveryTruncation(t *testing.T) {
	c := sampleChunk()
	enc := c.Marshal()
	for n := range len(enc) {
		_, err := UnmarshalChunk(enc[:n])
		require.ErrorIs(t, err, ErrInvalidChunk, "prefix of %d bytes", n)
	}
}

func TestUnmarshalChunkRejectsMalformedInput(t *testing.T) {
	valid := sampleChunk().Marshal()
	entry := func(ks Keyspace, key, value []byte) []byte {
		b := []byte{byte(ks)}
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = append(b, key...)
		b = binary.AppendUvarint(b, uint64(len(value)))
		return append(b, value...)
	}
	withEntries := func(entries ...[]byte) []byte {
		b := []byte{chunkVersion, 0, 0}
		b = binary.AppendUvarint(b, uint64(len(entries)))
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{2}, valid[1:]...)},
		{"unknown flags", append([]byte{chunkVersion, 0x82}, valid[2:]...)},
		{"trailing bytes", append(bytes.Clone(valid), 0)},
		{"non-canonical index", []byte{chunkVersion, 0, 0x80, 0x00, 0}},
		{"index overflow", append([]byte{chunkVersion, 0}, bytes.Repeat([]byte{0xff}, 11)...)},
		{"count larger than the data", []byte{chunkVersion, 0, 0, 0xff, 0xff, 0x03, 1, 1, 'a', 0}},
		{"key length past the end", withEntries([]byte{byte(UserData), 5, 'a'})},
		{"key length over the limit", withEntries(binary.AppendUvarint([]byte{byte(UserData)}, MaxKeySize+1))},
		{"value length over the limit", withEntries(binary.AppendUvarint([]byte{byte(UserData), 1, 'a'}, MaxValueSize+1))},
		{"empty key", withEntries(entry(UserData, nil, []byte("v")))},
		{"bft state entry", withEntries(entry(BFTState, []byte("k"), nil))},
		{"internal keyspace entry", withEntries(entry(ksReplicatedMeta, []byte("digest"), nil))},
		{"unknown keyspace", withEntries(entry(Keyspace(0x42), []byte("k"), nil))},
		{"duplicate key", withEntries(entry(UserData, []byte("k"), nil), entry(UserData, []byte("k"), nil))},
		{"keys out of order", withEntries(entry(UserData, []byte("b"), nil), entry(UserData, []byte("a"), nil))},
		{"keyspaces out of order", withEntries(entry(Metadata, []byte("a"), nil), entry(UserData, []byte("b"), nil))},
		{"oversize input", make([]byte, MaxChunkSize+1)},
		{"too many entries", tooManyEntries()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := UnmarshalChunk(tc.data)
			require.ErrorIs(t, err, ErrInvalidChunk)
		})
	}
	// The well-formed input the cases were cut from decodes.
	_, err := UnmarshalChunk(valid)
	require.NoError(t, err)
}

// tooManyEntries encodes a chunk that is valid but for its entry count.
func tooManyEntries() []byte {
	c := Chunk{Entries: make([]Entry, MaxChunkEntries+1)}
	for i := range c.Entries {
		c.Entries[i] = Entry{Keyspace: UserData, Key: binary.BigEndian.AppendUint32(nil, uint32(i))}
	}
	return c.Marshal()
}

func TestUnmarshalChunkAcceptsTheEmptyFinalChunk(t *testing.T) {
	c := Chunk{Final: true}
	got, err := UnmarshalChunk(c.Marshal())
	require.NoError(t, err)
	require.True(t, got.Final)
	require.Empty(t, got.Entries)
	require.Equal(t, []byte{chunkVersion, chunkFlagFinal, 0, 0}, c.Marshal())
}

func TestChunkCloneDoesNotAliasTheOriginal(t *testing.T) {
	c := sampleChunk()
	enc := c.Marshal()
	decoded, err := UnmarshalChunk(enc)
	require.NoError(t, err)
	clone := decoded.Clone()
	clear(enc) // the decoded chunk aliased enc
	require.Equal(t, sampleChunk().Marshal(), clone.Marshal())
}

func FuzzUnmarshalChunk(f *testing.F) {
	f.Add(sampleChunk().Marshal())
	f.Add((&Chunk{Final: true}).Marshal())
	f.Add((&Chunk{Index: 1 << 40, Entries: []Entry{{Keyspace: TxnRecords, Key: []byte("k")}}}).Marshal())
	f.Add([]byte{chunkVersion, 0, 0, 1, byte(UserData), 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := UnmarshalChunk(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidChunk)
			return
		}
		// Whatever decodes is valid and canonical.
		require.NoError(t, c.Validate())
		require.Equal(t, data, c.Marshal())
		require.Equal(t, len(data), c.Size())
	})
}
