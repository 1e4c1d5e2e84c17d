package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func runBenchJSON(t *testing.T, args ...string) (benchResult, string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, stderr := runMain(t, append(append([]string{"bench"}, args...), "--json", jsonPath, "--progress", "off")...)
	require.Equal(t, 0, code, "stderr: %s", stderr)
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var res benchResult
	require.NoError(t, json.Unmarshal(data, &res))
	return res, out
}

func TestBenchNoopReportsThroughputLatencyAndReplicaCPU(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	res, out := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "8", "--size", "64", "--duration", "1s", "--warmup", "200ms")
	t.Logf("noop: %.0f calls/s, %.1f calls/envelope, p50 %.2f ms, p99 %.2f ms, %.3f replica CPU ms/call",
		res.CallsPerSecond, res.CallsPerEnvelope, res.LatencyMs.P50, res.LatencyMs.P99, res.ReplicaCPUMsPerCall)
	require.Positive(t, res.Calls)
	require.Zero(t, res.Errors)
	require.Positive(t, res.Envelopes)
	require.GreaterOrEqual(t, res.CallsPerEnvelope, 1.0)
	require.Equal(t, 4, res.ReplicasScraped)
	require.Positive(t, res.ReplicaCPUMsPerCall)
	require.LessOrEqual(t, res.LatencyMs.P50, res.LatencyMs.P99)
	require.LessOrEqual(t, res.LatencyMs.P99, res.LatencyMs.Max)
	for _, want := range []string{"calls/s", "latency p50 / p95 / p99", "replica CPU", "over 4 of 4 replicas"} {
		require.Contains(t, out, want)
	}
}

func TestBenchLogAppendsAndChecksEachResult(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appLog)
	res, _ := runBenchJSON(t, "--workload", "log", "--dir", dir, "--clients", "4", "--size", "16", "--duration", "1s", "--warmup", "0s")
	require.Positive(t, res.Calls)
	require.Zero(t, res.Errors, res.FirstError)
}

func TestBenchRefusesAClientKeyTheClusterDoesNotList(t *testing.T) {
	dir, _ := newTestCluster(t)
	priv, err := auth.GenerateKey()
	require.NoError(t, err)
	keyPath := filepath.Join(t.TempDir(), "stranger.key")
	require.NoError(t, auth.WritePrivateKeyFile(keyPath, priv))
	code, _, stderr := runMain(t, "bench", "--dir", dir, "--client-key", keyPath, "--duration", "1s")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "is not one of the clients in cluster.json")
}

func TestBenchRejectsBadFlags(t *testing.T) {
	dir, _ := newTestCluster(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "tpcc"}, `--workload "tpcc"`},
		{[]string{"--clients", "0"}, "--clients 0"},
		{[]string{"--size", "-1"}, "--size -1"},
		{[]string{"--group", "7"}, "--group 7"},
	} {
		code, _, stderr := runMain(t, append([]string{"bench", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want)
	}
}
