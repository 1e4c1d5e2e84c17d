package cli

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
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
			for _, shape := range []txnShape{txnShapes[workloadA], txnShapes[workloadB], txnShapes[workloadC], txnShapes[workloadD]} {
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

// Table 3: A 4 reads + 4 writes of 4-byte values, B 2 + 2 of 1 KiB, C 8
// reads, D 4 reads; 4-byte keys. The guarded shape reads every item first,
// then writes each written item under a cmp on the value read.
func TestWorkloadShapesAreTable3(t *testing.T) {
	ks, err := newKeySpace(rangeMap(t, 2), 10_000, 0, nil)
	require.NoError(t, err)
	want := map[string][3]int{workloadA: {4, 4, 4}, workloadB: {2, 2, 1024}, workloadC: {8, 0, 4}, workloadD: {4, 0, 1024}}
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

// Tags (the bank's unique written values) never repeat, within a key and
// across keys, and carry the key's tag base.
func TestTagsAreUniqueAcrossKeys(t *testing.T) {
	ts := newTagSource()
	seen := map[int64]bool{}
	for i := range 3000 {
		kt := int64(1 + i%3)
		tag := ts.next(kt)
		require.False(t, seen[tag])
		seen[tag] = true
		require.Equal(t, kt, tag>>tagCounterBits)
	}
	// A later process with the same key starts at the wall clock's
	// microseconds, above every tag an earlier one handed out before then
	// (it hands out at most one per microsecond on average).
	before := time.Now().UnixMicro() & (1<<tagCounterBits - 1)
	tag := newTagSource().next(1)
	require.GreaterOrEqual(t, tag&(1<<tagCounterBits-1), before)
}

func TestBankValuesRoundTrip(t *testing.T) {
	bal, tag, err := decodeBankValue(encodeBankValue(-17, 1<<41+5))
	require.NoError(t, err)
	require.Equal(t, -17, bal)
	require.Equal(t, int64(1<<41+5), tag)
	_, _, err = decodeBankValue([]byte("12"))
	require.ErrorContains(t, err, "without a tag")
}

func TestFig5LossIsAgainstTheRunWithoutByzantineCallersAtTheSameMix(t *testing.T) {
	runs := []*txnRunResult{
		{MultiGroupPct: 20, ByzantinePct: 0, TxnPerSecond: 1000},
		{MultiGroupPct: 20, ByzantinePct: 10, TxnPerSecond: 950, Byzantine: &byzRunStats{Abandoned: 3}},
		{MultiGroupPct: 20, ByzantinePct: 30, TxnPerSecond: 800, Recoveries: map[string]float64{"committed": 4, "aborted": 1}},
		{MultiGroupPct: 60, ByzantinePct: 30, TxnPerSecond: 10}, // no base run at 60 %
	}
	rows := fig5Rows(runs)
	require.Len(t, rows, 3)
	require.InDelta(t, 0, rows[0].LossPct, 1e-9)
	require.InDelta(t, 5, rows[1].LossPct, 1e-9)
	require.Equal(t, int64(3), rows[1].Abandoned)
	require.InDelta(t, 20, rows[2].LossPct, 1e-9)
	require.InDelta(t, 5, rows[2].Recovered, 1e-9)
	require.Nil(t, fig5Rows(runs[:1]), "no table without Byzantine callers")
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

func TestFig5LossIsAgainstTheMeanOfTheRunsWithoutByzantineCallers(t *testing.T) {
	// "--byzantine 0,30,0": the baseline before and after the series.
	runs := []*txnRunResult{
		{MultiGroupPct: 20, ByzantinePct: 0, TxnPerSecond: 900},
		{MultiGroupPct: 20, ByzantinePct: 30, TxnPerSecond: 950},
		{MultiGroupPct: 20, ByzantinePct: 0, TxnPerSecond: 1100},
	}
	rows := fig5Rows(runs)
	require.Len(t, rows, 3)
	require.InDelta(t, 10, rows[0].LossPct, 1e-9)
	require.InDelta(t, 5, rows[1].LossPct, 1e-9)
	require.InDelta(t, -10, rows[2].LossPct, 1e-9)
}

// A repeated series: each run with Byzantine callers is measured against
// the baselines that bracket it, not against every baseline of the series,
// so a machine that slows down during the series shows no loss that is not
// there.
func TestFig5LossIsAgainstTheBaselinesThatBracketTheRun(t *testing.T) {
	run := func(byz int, tps float64) *txnRunResult {
		return &txnRunResult{MultiGroupPct: 20, ByzantinePct: byz, TxnPerSecond: tps}
	}
	// "--byzantine 0,30,0,30,0" on a machine that halves its speed.
	runs := []*txnRunResult{run(0, 1000), run(30, 950), run(0, 900), run(30, 475), run(0, 500)}
	rows := fig5Rows(runs)
	require.Len(t, rows, 5)
	require.InDelta(t, 0, rows[1].LossPct, 1e-9, "against (1000+900)/2")
	require.InDelta(t, 950, rows[1].BaselineTxnPerSecond, 1e-9)
	require.InDelta(t, 100*(1-475.0/700), rows[3].LossPct, 1e-9, "against (900+500)/2 = 700")
	require.InDelta(t, 700, rows[3].BaselineTxnPerSecond, 1e-9)
	// The baselines show their spread around their mean (800).
	require.InDelta(t, -25, rows[0].LossPct, 1e-9)
	require.InDelta(t, 37.5, rows[4].LossPct, 1e-9)
	// A series that ends on Byzantine callers takes the one baseline it has.
	rows = fig5Rows([]*txnRunResult{run(0, 1000), run(10, 900), run(30, 800)})
	require.InDelta(t, 10, rows[1].LossPct, 1e-9)
	require.InDelta(t, 20, rows[2].LossPct, 1e-9)
}

// The report counts the correct callers' waits for a nonce (W3) from the
// client library's own counter, so a typo in the metric's name cannot pass
// for "no waits".
func TestReportCountsTheClientsNonceWindowWaits(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := coord.NewMetrics(reg)
	before := clusterSnapshot{counters: gatherCounters(reg, txnClientCounters)}
	m.WindowWaits.Add(3)
	after := clusterSnapshot{counters: gatherCounters(reg, txnClientCounters)}
	res := &txnRunResult{}
	res.fillCPU(before, after)
	require.Equal(t, 3.0, res.WindowWaits)
	var out bytes.Buffer
	require.NoError(t, printTxnRun(&out, res))
	require.Regexp(t, `nonce window waits\s+│ 3\s`, out.String())
}

func TestRateIsMetWhenTheCallersFinishTheOfferedLoadCommittedOrAborted(t *testing.T) {
	// 40 txn/s offered over 2 s: met needs 76 finished transactions.
	judged := func(committed, aborted int64) *txnRunResult {
		res := &txnRunResult{RateLimit: 40, MeasuredSeconds: 2, Committed: committed, Aborted: aborted,
			LastCompletionSeconds: 1.9, StallWindowSeconds: 1}
		res.judge(benchOptions{})
		return res
	}
	// Conflict aborts are answers: a cluster that finished 78 of the 80
	// offered transactions kept up, whatever the conflicts made of them.
	require.True(t, judged(74, 4).RateMet, "aborts are answers: the cluster kept up")
	require.True(t, judged(76, 0).RateMet)
	require.False(t, judged(70, 4).RateMet, "74 of 80 finished: the cluster fell behind")
	require.False(t, judged(0, 0).RateMet)
	res := judged(74, 4)
	require.True(t, res.OK, res.Problems)
	require.Contains(t, fmtTxnRate(res), "--rate: met")
	// Unpaced runs are not judged against a rate.
	res = &txnRunResult{MeasuredSeconds: 2, Committed: 100, LastCompletionSeconds: 1.9, StallWindowSeconds: 1}
	res.judge(benchOptions{})
	require.False(t, res.RateMet)
	require.Equal(t, "50", fmtTxnRate(&txnRunResult{TxnPerSecond: 50}))
}
