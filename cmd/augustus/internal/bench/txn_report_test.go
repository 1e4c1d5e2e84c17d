package bench

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// The report counts the correct callers' waits for a nonce (W3) from the
// client library's own counter, so a typo in the metric's name cannot pass
// for "no waits".
func TestReportCountsTheClientsNonceWindowWaits(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := coord.NewMetrics(reg)
	before := snapshot{counters: gatherCounters(reg, txnClientCounters)}
	m.WindowWaits.Add(3)
	after := snapshot{counters: gatherCounters(reg, txnClientCounters)}
	res := &TxnRun{}
	res.fillCPU(before, after)
	require.Equal(t, 3.0, res.WindowWaits)
	var out bytes.Buffer
	require.NoError(t, printTxnRun(&out, res))
	require.Regexp(t, `nonce window waits\s+│ 3\s`, out.String())
}

func TestRateIsMetWhenTheCallersFinishTheOfferedLoadCommittedOrAborted(t *testing.T) {
	// 40 txn/s offered over 2 s: met needs 76 finished transactions.
	judged := func(committed, aborted int64) *TxnRun {
		res := &TxnRun{RateLimit: 40, MeasuredSeconds: 2, Committed: committed, Aborted: aborted,
			LastCompletionSeconds: 1.9, StallWindowSeconds: 1}
		res.judge(&Options{})
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
	res = &TxnRun{MeasuredSeconds: 2, Committed: 100, LastCompletionSeconds: 1.9, StallWindowSeconds: 1}
	res.judge(&Options{})
	require.False(t, res.RateMet)
	require.Equal(t, "50", fmtTxnRate(&TxnRun{TxnPerSecond: 50}))
}
