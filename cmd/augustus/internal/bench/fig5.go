package bench

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Fig5Row is one line of the Byzantine-client table: the correct callers'
// throughput at a share of Byzantine callers, and the loss against the
// runs without Byzantine callers at the same mix (fig5Rows says which).
type Fig5Row struct {
	MultiGroupPct  int     `json:"multi_group_pct"`
	ByzantinePct   int     `json:"byzantine_pct"`
	CorrectCallers int     `json:"correct_callers"`
	TxnPerSecond   float64 `json:"txn_per_second"`
	LossPct        float64 `json:"loss_pct"`
	MeanLatencyMs  float64 `json:"mean_latency_ms"`
	P99LatencyMs   float64 `json:"p99_latency_ms"`
	Recovered      float64 `json:"recovered"`
	Abandoned      int64   `json:"abandoned"`
	// BaselineTxnPerSecond is what LossPct is against (fig5Rows).
	BaselineTxnPerSecond float64 `json:"baseline_txn_per_second"`
}

// Fig5Baselines returns, per mix, the mean throughput of the runs without
// Byzantine callers: what a baseline run's spread is shown against.
func Fig5Baselines(runs []*TxnRun) map[int]float64 {
	sum, n := map[int]float64{}, map[int]int{}
	for _, r := range runs {
		if r.ByzantinePct == 0 {
			sum[r.MultiGroupPct] += r.TxnPerSecond
			n[r.MultiGroupPct]++
		}
	}
	base := make(map[int]float64, len(sum))
	for mix, s := range sum {
		base[mix] = s / float64(n[mix])
	}
	return base
}

// fig5Rows builds the table when some run had Byzantine callers and a run
// of the same mix had none. A run with Byzantine callers loses against the
// runs without them that bracket it in the series: the mean of the nearest
// one before and the nearest one after at its mix (one side alone at an
// end). "--byzantine 0,10,20,30,0" thus compares every run with the
// baselines before and after the series, and a repeated series
// ("0,30,0,30,0") compares each round with its own neighbours, so a drift of
// the machine or of the store (compactions after a load) over a long series
// does not pass for a loss or a gain. A run without Byzantine callers is
// shown against the mean of them all (the spread of the baselines).
func fig5Rows(runs []*TxnRun) []Fig5Row {
	base := Fig5Baselines(runs)
	var rows []Fig5Row
	byz := false
	for _, r := range runs {
		byz = byz || r.ByzantinePct > 0
	}
	if !byz {
		return nil
	}
	for i, r := range runs {
		b, ok := base[r.MultiGroupPct]
		if !ok {
			continue
		}
		if r.ByzantinePct > 0 {
			b = fig5Bracket(runs, i)
		}
		row := Fig5Row{MultiGroupPct: r.MultiGroupPct, ByzantinePct: r.ByzantinePct, CorrectCallers: r.CorrectCallers,
			TxnPerSecond: r.TxnPerSecond, MeanLatencyMs: r.LatencyMs.Mean, P99LatencyMs: r.LatencyMs.P99, BaselineTxnPerSecond: b}
		if b > 0 {
			row.LossPct = 100 * (1 - r.TxnPerSecond/b)
		}
		for _, v := range r.Recoveries {
			row.Recovered += v
		}
		if r.Byzantine != nil {
			row.Abandoned = r.Byzantine.Abandoned
		}
		rows = append(rows, row)
	}
	return rows
}

// fig5Bracket returns the mean throughput of the nearest runs without
// Byzantine callers before and after runs[i] at its mix (0 if none).
func fig5Bracket(runs []*TxnRun, i int) float64 {
	mix := runs[i].MultiGroupPct
	nearest := func(from, step int) (float64, bool) {
		for j := from; j >= 0 && j < len(runs); j += step {
			if r := runs[j]; r.ByzantinePct == 0 && r.MultiGroupPct == mix {
				return r.TxnPerSecond, true
			}
		}
		return 0, false
	}
	before, okB := nearest(i-1, -1)
	after, okA := nearest(i+1, 1)
	switch {
	case okB && okA:
		return (before + after) / 2
	case okB:
		return before
	case okA:
		return after
	}
	return 0
}

func printFig5(w io.Writer, rows []Fig5Row) {
	fmt.Fprintln(w, "Byzantine callers (Fig. 5): correct callers' throughput")
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("multi-group", "Byzantine", "correct", "txn/s", "against", "loss", "mean / p99 ms", "abandoned", "recovered")
	for _, r := range rows {
		_ = t.Append([]string{fmt.Sprintf("%d%%", r.MultiGroupPct), fmt.Sprintf("%d%%", r.ByzantinePct), fmt.Sprint(r.CorrectCallers),
			fmt.Sprintf("%.0f", r.TxnPerSecond), fmt.Sprintf("%.0f", r.BaselineTxnPerSecond), fmt.Sprintf("%.1f%%", r.LossPct),
			fmt.Sprintf("%.1f / %.1f", r.MeanLatencyMs, r.P99LatencyMs), fmt.Sprint(r.Abandoned), fmt.Sprintf("%.0f", r.Recovered)})
	}
	_ = t.Render()
}
