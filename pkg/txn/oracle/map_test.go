package oracle

import (
	"bytes"
	"slices"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
)

func twoRanges(t *testing.T) *Map {
	t.Helper()
	m, err := FromCluster(&cluster.Cluster{Partitions: cluster.SplitFirstByte(2)})
	require.NoError(t, err)
	return m
}

// txn.md M3, T5: range partitioning (the default) keeps a key range in the
// groups holding it.
func TestRangeMapRoutesKeysAndRangesToTheGroupsHoldingThem(t *testing.T) {
	m := twoRanges(t)
	require.Equal(t, bft.GroupID(0), m.KeyGroup(nil))
	require.Equal(t, bft.GroupID(0), m.KeyGroup([]byte{0x7f, 0xff}))
	require.Equal(t, bft.GroupID(1), m.KeyGroup([]byte{0x80}))
	require.Equal(t, bft.GroupID(1), m.KeyGroup([]byte{0xff, 0xff}))

	rg := func(start, end []byte) []bft.GroupID { return m.AppendRangeGroups(nil, start, end) }
	require.Equal(t, []bft.GroupID{0}, rg([]byte{0x10}, []byte{0x20}))
	require.Equal(t, []bft.GroupID{0}, rg([]byte{0x10}, []byte{0x80}), "end is exclusive")
	require.Equal(t, []bft.GroupID{0, 1}, rg([]byte{0x10}, []byte{0x80, 0}))
	require.Equal(t, []bft.GroupID{1}, rg([]byte{0x80}, nil))
	require.Equal(t, []bft.GroupID{0, 1}, rg(nil, nil))
	require.Equal(t, []bft.GroupID{0, 1}, m.Groups())
}

// txn.md M3, T5: under hash partitioning a range involves every group.
func TestHashMapSpreadsKeysAndInvolvesEveryGroupInARange(t *testing.T) {
	m, err := Hash([]bft.GroupID{2, 5, 7})
	require.NoError(t, err)
	seen := map[bft.GroupID]int{}
	for i := range 300 {
		k := []byte{byte(i), byte(i >> 8), 'k'}
		g := m.KeyGroup(k)
		require.Equal(t, g, m.KeyGroup(bytes.Clone(k)), "stable")
		seen[g]++
	}
	require.Len(t, seen, 3)
	require.Equal(t, []bft.GroupID{2, 5, 7}, m.AppendRangeGroups(nil, []byte("a"), []byte("b")))
	// The hash is fixed forever: pin one value.
	require.Equal(t, bft.GroupID(2), m.KeyGroup([]byte("pinned")), "FNV-1a of \"pinned\" mod 3 changed")
}

func TestInvolvedGroupsUsesTheMap(t *testing.T) {
	m := twoRanges(t)
	ops := txn.NewBuilder().Read([]byte{0x01}).Write([]byte{0x02}, []byte("v")).
		ReadRange([]byte{0x70}, []byte{0x90}, 10).Read([]byte("meta")).Meta().Ops()
	require.Equal(t, []bft.GroupID{0, 1}, txn.InvolvedGroups(ops, m))
	require.Equal(t, []bft.GroupID{1}, txn.InvolvedGroups(txn.NewBuilder().Read([]byte{0x90}).Ops(), m))
	require.Empty(t, txn.InvolvedGroups(txn.NewBuilder().Read([]byte("x")).Meta().Ops(), m))
}

func TestNewRejectsMapsThatDoNotCoverTheKeySpaceOnce(t *testing.T) {
	for name, rs := range map[string][]Range{
		"empty":          nil,
		"gap at start":   {{Start: []byte("a"), Groups: []bft.GroupID{0}}},
		"unsorted":       {{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte("b"), Groups: []bft.GroupID{1}}, {Start: []byte("a"), Groups: []bft.GroupID{0}}},
		"duplicate":      {{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte("a"), Groups: []bft.GroupID{1}}, {Start: []byte("a"), Groups: []bft.GroupID{0}}},
		"no group":       {{Start: nil}},
		"repeated group": {{Start: nil, Groups: []bft.GroupID{0, 0}}},
	} {
		_, err := New(rs)
		require.ErrorIs(t, err, ErrInvalid, name)
	}
}

// txn.md M3: a split moves nothing; a reassignment moves its span.
func TestMovedFindsReassignedSpansOnly(t *testing.T) {
	old := twoRanges(t)
	split, err := New([]Range{{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte{0x40}, Groups: []bft.GroupID{0}}, {Start: []byte{0x80}, Groups: []bft.GroupID{1}}})
	require.NoError(t, err)
	require.Empty(t, Moved(old, split))

	moved, err := New([]Range{{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte{0x40}, Groups: []bft.GroupID{1}}})
	require.NoError(t, err)
	require.Equal(t, []Span{{Start: []byte{0x40}, End: []byte{0x80}, Old: []bft.GroupID{0}, New: []bft.GroupID{1}}}, Moved(old, moved))

	hashed, err := Hash([]bft.GroupID{0, 1})
	require.NoError(t, err)
	spans := Moved(old, hashed)
	require.Len(t, spans, 2)
	require.Nil(t, spans[1].End)
}

func genMap(t *rapid.T) *Map {
	starts := rapid.SliceOfNDistinct(rapid.StringOfN(rapid.RuneFrom(nil, unicode.Latin), 1, 3, 6), 0, 4, rapid.ID[string]).Draw(t, "starts")
	slices.Sort(starts)
	ranges := []Range{{Start: []byte{}}}
	for _, s := range starts {
		ranges = append(ranges, Range{Start: []byte(s)})
	}
	for i := range ranges {
		gs := rapid.SliceOfNDistinct(rapid.Uint32Range(0, 9), 1, 3, rapid.ID[uint32]).Draw(t, "groups")
		for _, g := range gs {
			ranges[i].Groups = append(ranges[i].Groups, bft.GroupID(g))
		}
	}
	m, err := New(ranges)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMapEncodingRoundTripsBothWays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMap(t)
		enc := m.Encode()
		got, err := Decode(enc)
		require.NoError(t, err)
		require.True(t, got.Equal(m))
		require.Equal(t, enc, got.Encode())
	})
}

// Every key a range map routes to g lies in a span whose groups contain g,
// and a point's group is among its one-key range's groups.
func TestKeyGroupAgreesWithRangeGroups(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMap(t)
		k := rapid.SliceOfN(rapid.Byte(), 1, 4).Draw(t, "key")
		gs := m.AppendRangeGroups(nil, k, append(bytes.Clone(k), 0))
		require.Contains(t, gs, m.KeyGroup(k))
	})
}

func FuzzDecodeMap(f *testing.F) {
	m, _ := New([]Range{{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte{0x80}, Groups: []bft.GroupID{1, 2}}})
	f.Add(m.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(m.Encode(), b) {
			t.Fatalf("accepted a non-canonical map %x", b)
		}
	})
}
