package bench

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// rangeMap is the map `augustus init --groups n` writes.
func rangeMap(t *testing.T, n int) *oracle.Map {
	t.Helper()
	m, err := oracle.FromCluster(&cluster.Cluster{Partitions: cluster.SplitFirstByte(n)})
	require.NoError(t, err)
	return m
}

func TestKeySpaceGivesEveryGroupAnEqualSliceOfTheItems(t *testing.T) {
	for _, groups := range []int{1, 2, 3, 4} {
		m := rangeMap(t, groups)
		ks, err := newKeySpace(m, 10_000, 0, nil)
		require.NoError(t, err)
		require.Len(t, ks.groups, groups)
		var prev []byte
		seen := make([]int, groups)
		for i := range ks.items {
			k := ks.key(i)
			require.Len(t, k, 4)
			require.False(t, txn.IsReservedMetaKey(k), "item %d's key %x is in the metadata keyspace", i, k)
			require.Positive(t, bytes.Compare(k, prev), "keys grow with the item")
			prev = k
			gi := ks.groupIndex(i)
			require.Equal(t, m.KeyGroup(k), ks.groups[gi], "item %d", i)
			seen[gi]++
		}
		for gi, n := range ks.counts {
			require.Equal(t, seen[gi], n)
			// Within 2 %: group 0 lacks the reserved first byte 0x00.
			require.InDelta(t, ks.items/groups, n, float64(ks.items)/float64(groups)/50+1, "group %d of %d", gi, groups)
			for j := range n {
				require.Equal(t, gi, ks.groupIndex(ks.nth(gi, j)))
			}
		}
	}
}

func TestKeySpaceSuffixKeepsTheItemsGroups(t *testing.T) {
	m := rangeMap(t, 4)
	ks, err := newKeySpace(m, 1000, 0, []byte("$acct"))
	require.NoError(t, err)
	for i := range ks.items {
		require.Equal(t, m.KeyGroup(ks.key(i)), ks.groups[ks.groupIndex(i)])
		require.True(t, bytes.HasSuffix(ks.key(i), []byte("$acct")))
	}
}

func TestKeySpaceRefusesHashedRangesAndBadSizes(t *testing.T) {
	m, err := oracle.Hash([]bft.GroupID{0, 1})
	require.NoError(t, err)
	_, err = newKeySpace(m, 100, 0, nil)
	require.ErrorIs(t, err, errHashedMap)
	_, err = newKeySpace(rangeMap(t, 2), 0, 0, nil)
	require.ErrorContains(t, err, "--items 0")
}

// The share of multi-group transactions matches --multi-group; a
// multi-group transaction spans exactly two groups (the paper's), a
// single-group one exactly one; keys are distinct; groups are hit in
// proportion to the items they hold.
func TestTxnGenDealsKeysOverGroupsAsTheMixSays(t *testing.T) {
	for _, groups := range []int{2, 4} {
		m := rangeMap(t, groups)
		ks, err := newKeySpace(m, 100_000, 0, nil)
		require.NoError(t, err)
		for _, pct := range []int{0, 20, 40, 60, 80, 100} {
			for _, shape := range []txnShape{txnShapes["A"], txnShapes["B"], txnShapes["C"], txnShapes["D"]} {
				require.NoError(t, checkGen(ks, shape.reads+shape.writes, pct))
				gen := &txnGen{ks: ks, reads: shape.reads, writes: shape.writes, multiPct: pct, rng: rand.New(rand.NewPCG(uint64(pct), 7))}
				const n = 4000
				multi := 0
				hits := map[bft.GroupID]int{}
				for range n {
					gt := gen.next()
					require.Len(t, gt.reads, shape.reads)
					require.Len(t, gt.writes, shape.writes)
					ops := paperOps(ks, gt, shape.valueSize, 1)
					involved := txn.InvolvedGroups(ops, m)
					keys := map[string]bool{}
					for _, op := range ops {
						require.False(t, keys[string(op.Key)], "distinct keys")
						keys[string(op.Key)] = true
					}
					if gt.multi {
						multi++
						require.Len(t, involved, 2)
						// Reads and writes are dealt to both groups: an update
						// writes in both.
						if shape.writes > 0 {
							wg := map[bft.GroupID]bool{}
							for _, it := range gt.writes {
								wg[m.KeyGroup(ks.key(it))] = true
							}
							require.Len(t, wg, 2)
						}
					} else {
						require.Len(t, involved, 1)
					}
					for _, g := range involved {
						hits[g]++
					}
				}
				share := float64(multi) / n * 100
				require.InDelta(t, float64(pct), share, 3, "%d groups, %s, --multi-group %d: %.1f%% multi-group", groups, shape.name, pct, share)
				for _, g := range m.Groups() {
					want := float64(n) * (1 + float64(pct)/100) / float64(groups)
					require.InDelta(t, want, float64(hits[g]), want*0.15, "group %d's share", g)
				}
			}
		}
	}
}

func TestCheckGenRefusesMixesTheClusterCannotServe(t *testing.T) {
	one, err := newKeySpace(rangeMap(t, 1), 100, 0, nil)
	require.NoError(t, err)
	require.NoError(t, checkGen(one, 8, 0))
	require.ErrorContains(t, checkGen(one, 8, 20), "multi-group transactions need 2")
	two, err := newKeySpace(rangeMap(t, 2), 6, 0, nil)
	require.NoError(t, err)
	require.ErrorContains(t, checkGen(two, 8, 0), "fewer than the 8 distinct keys")
	require.ErrorContains(t, checkGen(two, 8, 101), "want a percentage")
}

// Loading transactions each stay in one group (the single-group fast
// path) and together insert every item once.
func TestLoadUnitsCoverEveryItemOnceWithinOneGroup(t *testing.T) {
	m := rangeMap(t, 3)
	ks, err := newKeySpace(m, 10_007, 0, nil)
	require.NoError(t, err)
	covered := make([]int, ks.items)
	units := loadUnits(ks, 500)
	for _, u := range units {
		require.LessOrEqual(t, u.hi-u.lo, 500)
		g := ks.groupIndex(u.lo)
		for it := u.lo; it < u.hi; it++ {
			covered[it]++
			require.Equal(t, g, ks.groupIndex(it))
		}
	}
	for it, n := range covered {
		require.Equal(t, 1, n, "item %d", it)
	}
	// Interleaved: the first units go to different groups.
	require.NotEqual(t, ks.groupIndex(units[0].lo), ks.groupIndex(units[1].lo))
}
