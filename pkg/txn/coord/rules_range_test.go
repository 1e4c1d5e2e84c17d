package coord

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

func kvs(keys ...string) []txn.KV {
	out := make([]txn.KV, len(keys))
	for i, k := range keys {
		out[i] = txn.KV{Key: []byte(k), Value: []byte("v" + k)}
	}
	return out
}

func keysOf(kv []txn.KV) []string {
	out := make([]string, len(kv))
	for i, e := range kv {
		out[i] = string(e.Key)
	}
	return out
}

// txn.md T1: across groups the client keeps the merged prefix up to the
// smallest last returned key among the groups that stopped early, at most
// limit entries; More and Next say where the next chunk starts.
func TestT1MergeKeepsThePrefixUpToTheSmallestEarlyStop(t *testing.T) {
	cases := []struct {
		name  string
		parts []rangePart
		limit int
		want  []string
		more  bool
	}{
		{"one group, complete", []rangePart{{entries: kvs("a", "b")}}, 3, []string{"a", "b"}, false},
		{"one group, stopped early", []rangePart{{entries: kvs("a", "b"), early: true}}, 2, []string{"a", "b"}, true},
		{"range groups, first stopped early", []rangePart{{entries: kvs("a", "b"), early: true}, {entries: kvs("x")}}, 2, []string{"a", "b"}, true},
		{"range groups, none stopped", []rangePart{{entries: kvs("a")}, {entries: kvs("x", "y")}}, 3, []string{"a", "x", "y"}, false},
		{"range groups, over the limit", []rangePart{{entries: kvs("a", "b")}, {entries: kvs("x", "y")}}, 3, []string{"a", "b", "x"}, true},
		{"hash groups interleave", []rangePart{{entries: kvs("a", "c", "e"), early: true}, {entries: kvs("b", "d")}}, 3, []string{"a", "b", "c"}, true},
		{"hash groups, smallest last key wins", []rangePart{{entries: kvs("a", "f"), early: true}, {entries: kvs("b", "c"), early: true}}, 2, []string{"a", "b"}, true},
		{"hash groups, cut below the limit", []rangePart{{entries: kvs("a", "f"), early: true}, {entries: kvs("b", "c"), early: true}}, 2, []string{"a", "b"}, true},
		{"empty", []rangePart{{}, {}}, 2, []string{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeRange(tc.parts, tc.limit)
			require.Equal(t, tc.want, keysOf(got.Entries))
			require.Equal(t, tc.more, got.More)
			if tc.more {
				require.Equal(t, append([]byte(tc.want[len(tc.want)-1]), 0), got.Next)
			}
		})
	}
	// The cut: group 1 stopped at "c", so "f" (past it) is left out even
	// under the limit — group 1 may hold keys between "c" and "f".
	got := mergeRange([]rangePart{{entries: kvs("a", "f"), early: false}, {entries: kvs("b", "c"), early: true}}, 5)
	require.Equal(t, []string{"a", "b", "c"}, keysOf(got.Entries))
	require.True(t, got.More)
}

// txn.md T1 end to end: a scan in chunks over two range-partitioned groups
// reads every key once, in order.
func TestT1ChunkedReadRangeAcrossRangeGroups(t *testing.T) {
	w := newWorld(t, 2, 60)
	c := w.newClient(50, nil)
	scanAll(t, w, c, 4)
}

// txn.md T1 end to end under hash partitioning: every chunk involves both
// groups and their entries interleave.
func TestT1ChunkedReadRangeAcrossHashedGroups(t *testing.T) {
	w := newWorld(t, 2, 61, func(w *world) {
		m, err := oracle.Hash([]bft.GroupID{0, 1})
		require.NoError(w.t, err)
		w.pmap = m
	})
	c := w.newClient(50, nil)
	scanAll(t, w, c, 3)
}

func scanAll(t *testing.T, w *world, c *wclient, limit uint32) {
	var want []string
	for i := range 11 {
		k := fmt.Sprintf("%c%02d", "ab\x90"[i%3], i)
		want = append(want, k)
		_, err := c.do(txn.NewBuilder().Insert([]byte(k), []byte("v")))
		require.NoError(t, err)
	}
	w.settle()
	var got []string
	start := []byte{}
	for chunks := 0; ; chunks++ {
		require.Less(t, chunks, 20)
		res, err := c.do(txn.NewBuilder().ReadRange(start, nil, limit))
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Ops[0].Entries), int(limit))
		got = append(got, keysOf(res.Ops[0].Entries)...)
		if !res.Ops[0].More {
			break
		}
		start = res.Ops[0].Next
	}
	slices.Sort(want)
	require.Equal(t, want, got)
}
