package bench

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Table 3: A 4 reads + 4 writes of 4-byte values, B 2 + 2 of 1 KiB, C 8
// reads, D 4 reads; 4-byte keys. The guarded shape reads every item first,
// then writes each written item under a cmp on the value read.
func TestWorkloadShapesAreTable3(t *testing.T) {
	ks, err := newKeySpace(rangeMap(t, 2), 10_000, 0, nil)
	require.NoError(t, err)
	want := map[string][3]int{"A": {4, 4, 4}, "B": {2, 2, 1024}, "C": {8, 0, 4}, "D": {4, 0, 1024}}
	for name, w := range want {
		sh := txnShapes[name]
		require.Equal(t, w, [3]int{sh.reads, sh.writes, sh.valueSize}, name)
		gen := &txnGen{ks: ks, reads: sh.reads, writes: sh.writes, multiPct: 50, rng: rand.New(rand.NewPCG(1, 1))}
		gt := gen.next()
		ops := paperOps(ks, gt, sh.valueSize, 42)
		kinds := map[txn.OpKind]int{}
		for _, op := range ops {
			kinds[op.Kind]++
			require.Len(t, op.Key, 4)
			if op.Kind == txn.OpWrite {
				require.Len(t, op.Value, sh.valueSize)
			}
		}
		require.Equal(t, withoutZero(map[txn.OpKind]int{txn.OpRead: sh.reads, txn.OpWrite: sh.writes}), kinds, name)

		reads := guardedReadOps(ks, gt)
		require.Len(t, reads, sh.reads+sh.writes)
		vals := make([][]byte, sh.writes)
		present := make([]bool, sh.writes)
		for j := range vals {
			vals[j], present[j] = []byte{byte(j)}, j%2 == 0
		}
		upd := guardedWriteOps(ks, gt, vals, present, sh.valueSize, 42)
		require.Len(t, upd, 2*sh.writes)
		for j, it := range gt.writes {
			cmp, wr := upd[j], upd[sh.writes+j]
			require.Equal(t, txn.OpCmp, cmp.Kind)
			require.Equal(t, ks.key(it), cmp.Key)
			require.Equal(t, !present[j], cmp.Absent)
			if present[j] {
				require.Equal(t, vals[j], cmp.Value)
			}
			require.Equal(t, txn.OpWrite, wr.Kind)
			require.Equal(t, ks.key(it), wr.Key)
		}
	}
}

func withoutZero(m map[txn.OpKind]int) map[txn.OpKind]int {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	return m
}

// The workloads with 1 KiB values (B, D) and those with 4-byte values (A,
// C) use disjoint keys in one cluster, whatever their --items.
func TestLargeAndSmallValueWorkloadsNeverShareAKey(t *testing.T) {
	m := rangeMap(t, 2)
	for _, n := range [][2]int{{1000, 1000}, {1000, 500}, {3000, 1000}, {7, 3}, {3, 7}, {2000, 3000}, {30_000, 10_000}} {
		small, err := newKeySpace(m, n[0], 0, nil)
		require.NoError(t, err)
		large, err := newKeySpace(m, n[1], 1, nil)
		require.NoError(t, err)
		keys := map[string]bool{}
		for i := range small.items {
			keys[string(small.key(i))] = true
		}
		for i := range large.items {
			require.False(t, keys[string(large.key(i))], "item %d of %d", i, n[1])
			require.Equal(t, m.KeyGroup(large.key(i)), large.groups[large.groupIndex(i)])
		}
	}
}
