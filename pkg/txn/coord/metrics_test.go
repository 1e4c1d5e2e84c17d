package coord

import (
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// The client library's metrics follow augustus_<subsystem>_<name>_<unit>
// (DESIGN.md §7, §9): counters end in _total, the others in their unit.
func TestMetricNamesConform(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.transaction(txn.KindSingle, "committed", 0.01)
	m.attempt(txn.KindSingle)
	m.retry("conflict")
	m.recovery("committed")
	m.terminated(txn.KindMultiUpdate, 0.01)
	m.anomaly("wrong_result")
	fams, err := reg.Gather()
	require.NoError(t, err)
	name := regexp.MustCompile(`^augustus_txn_client_[a-z][a-z0-9_]*_(total|seconds|transactions)$`)
	seen := map[string]bool{}
	for _, f := range fams {
		seen[f.GetName()] = true
		require.Regexp(t, name, f.GetName())
		if f.GetType() == dto.MetricType_COUNTER {
			require.Regexp(t, `_total$`, f.GetName())
		} else {
			require.NotRegexp(t, `_total$`, f.GetName())
		}
	}
	for _, n := range []string{"augustus_txn_client_transactions_total", "augustus_txn_client_retries_total",
		"augustus_txn_client_recoveries_total", "augustus_txn_client_latency_seconds"} {
		require.True(t, seen[n], n)
	}
	var nilMetrics *Metrics // a core without metrics counts nothing, and does not fail
	nilMetrics.transaction(txn.KindSingle, "committed", 1)
	nilMetrics.anomaly("x")
}
