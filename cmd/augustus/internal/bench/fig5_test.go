package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFig5LossIsAgainstTheRunWithoutByzantineCallersAtTheSameMix(t *testing.T) {
	runs := []*TxnRun{
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

func TestFig5LossIsAgainstTheMeanOfTheRunsWithoutByzantineCallers(t *testing.T) {
	// "--byzantine 0,30,0": the baseline before and after the series.
	runs := []*TxnRun{
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
	run := func(byz int, tps float64) *TxnRun {
		return &TxnRun{MultiGroupPct: 20, ByzantinePct: byz, TxnPerSecond: tps}
	}
	// "--byzantine 0,30,0,30,0" on a machine that halves its speed.
	runs := []*TxnRun{run(0, 1000), run(30, 950), run(0, 900), run(30, 475), run(0, 500)}
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
	rows = fig5Rows([]*TxnRun{run(0, 1000), run(10, 900), run(30, 800)})
	require.InDelta(t, 10, rows[1].LossPct, 1e-9)
	require.InDelta(t, 20, rows[2].LossPct, 1e-9)
}
