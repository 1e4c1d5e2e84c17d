package cli

import (
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/transport"
)

// metricName is augustus_<subsystem>_<name>_<unit>.
var metricName = regexp.MustCompile(`^augustus_(client|transport)_[a-z][a-z0-9_]*_(total|seconds|bytes|calls|messages|streams)$`)

// The metrics of the processes bench and the demo run in (the group client
// and its transport) follow the naming convention: counters end in _total,
// other metrics in their unit.
func TestClientAndTransportMetricNamesConform(t *testing.T) {
	reg := prometheus.NewRegistry()
	cm := client.NewMetrics(reg)
	cm.EnvelopeCalls.Observe(3)
	cm.EnvelopeLatency.Observe(0.01)
	cm.CallLatency.Observe(0.01)
	transport.NewMetrics(reg)
	fams, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
		require.Regexp(t, metricName, f.GetName())
		if f.GetType() == dto.MetricType_COUNTER {
			require.Regexp(t, `_total$`, f.GetName())
		} else {
			require.NotRegexp(t, `_total$`, f.GetName())
		}
	}
	require.True(t, names["augustus_client_envelope_size_calls"], "the histogram of calls per envelope")
}
