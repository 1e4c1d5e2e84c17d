package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/cmd/augustus/internal/bench"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func runBenchJSON(t *testing.T, args ...string) (bench.GroupResult, string) {
	t.Helper()
	res, out, stderr, code := runBenchResult(t, args...)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
	return res, out
}

// runBenchResult runs bench with --json and returns the result, the output
// and the exit code.
func runBenchResult(t *testing.T, args ...string) (bench.GroupResult, string, string, int) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, stderr := runMain(t, append(append([]string{"bench"}, args...), "--json", jsonPath, "--progress", "off")...)
	data, err := os.ReadFile(jsonPath)
	require.NoError(t, err, "stderr: %s", stderr)
	var res bench.GroupResult
	require.NoError(t, json.Unmarshal(data, &res))
	return res, out, stderr, code
}

func TestBenchNoopReportsThroughputLatencyAndReplicaCPU(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	res, out := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "8", "--size", "64", "--duration", "1s", "--warmup", "200ms")
	t.Logf("noop: %.0f calls/s, %.1f calls/envelope, p50 %.2f ms, p99 %.2f ms, %.3f replica CPU ms/call",
		res.CallsPerSecond, res.CallsPerEnvelope, res.LatencyMs.P50, res.LatencyMs.P99, res.ReplicaCPUMsPerCall)
	require.Positive(t, res.Calls)
	require.Zero(t, res.Errors)
	require.True(t, res.OK)
	require.False(t, res.Stalled)
	require.Empty(t, res.ReplicasMissing)
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

// --rate paces the callers: 8 callers that could make thousands of calls
// per second make at most the rate asked, and the report says so.
func TestBenchRatePacesTheCallers(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	res, out := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "8", "--size", "64", "--duration", "2s", "--warmup", "200ms", "--rate", "100")
	require.True(t, res.OK)
	require.Equal(t, 100.0, res.RateLimit)
	require.Positive(t, res.Calls)
	require.LessOrEqual(t, res.CallsPerSecond, 110.0, "paced to 100 calls/s")
	require.GreaterOrEqual(t, res.CallsPerSecond, 50.0, "8 callers keep up with 100 calls/s")
	require.Regexp(t, `offered load\s+│ 100 calls/s in all \(--rate, an open loop\)`, out)
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

func TestBenchRejectsBadFlagsBeforeTheRun(t *testing.T) {
	dir, _ := newTestCluster(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "tpcc"}, `--workload "tpcc"`},
		{[]string{"--clients", "0"}, "--clients 0"},
		{[]string{"--size", "-1"}, "--size -1"},
		{[]string{"--group", "7"}, "--group 7"},
		{[]string{"--call-timeout", "0s"}, "--call-timeout 0s: must be positive"},
		{[]string{"--call-timeout", "-5s"}, "--call-timeout -5s: must be positive"},
		{[]string{"--window", "-1"}, "--window -1: want 0"},
		{[]string{"--window", "1000"}, "--window 1000: the replicas accept at most client_window=16"},
		{[]string{"--inflight", "-2"}, "--inflight -2: want 0"},
		{[]string{"--pprof-base-port", "0"}, "--pprof-base-port 0: want a port"},
		{[]string{"--rate", "-3"}, "--rate -3: want 0 (unpaced) or a positive number"},
		{[]string{"--workload", "A", "--rate", "-3"}, "--rate -3: want 0 (unpaced) or a positive number"},
		{[]string{"--progress", "weird"}, `--progress "weird": want "auto", "bar", "lines" or "off"`},
		{[]string{"--json", filepath.Join(dir, "no", "such", "dir", "r.json")}, "--json: cannot write the result: open "},
		{[]string{"--json", dir}, "--json " + dir + ": is a directory"},
	} {
		// No replica runs: every case must fail before the run starts,
		// which would take the 10s default duration.
		start := time.Now()
		code, _, stderr := runMain(t, append([]string{"bench", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want, tc.args)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
		require.Less(t, time.Since(start), 5*time.Second, "refused before the run: %v", tc.args)
	}
}

// With two of four replicas killed (more than f=1), nothing completes:
// bench counts the calls left without a result as errors, says why, and
// exits non-zero; the CPU line says why two replicas are missing.
func TestBenchAgainstAGroupThatCannotAnswerFails(t *testing.T) {
	dir, _ := newTestCluster(t)
	out, _ := startClusterWith(t, startOptions{dir: dir, app: appNoop, logLevel: "warn", grace: 10 * time.Second, restart: restartNever})
	pids := startPids(t, out.String())
	for _, n := range []string{"g0r2", "g0r3"} {
		require.NoError(t, syscall.Kill(pids[n], syscall.SIGKILL))
	}
	waitFor(t, 10*time.Second, "start to report both exits", func() bool {
		return strings.Count(out.String(), "not restarted (--restart never)") == 2
	})
	res, stdout, stderr, code := runBenchResult(t, "--workload", "noop", "--dir", dir, "--clients", "4",
		"--duration", "1s", "--warmup", "0s", "--call-timeout", "2s")
	require.Equal(t, 1, code, "stdout: %s", stdout)
	require.False(t, res.OK)
	require.Zero(t, res.Calls)
	require.Positive(t, res.Errors)
	require.Equal(t, res.Errors, res.FailedCalls+res.TimedOutCalls+res.OutstandingCalls)
	require.Positive(t, res.TimedOutCalls+res.OutstandingCalls, "the callers' calls in flight at the end")
	require.True(t, res.Stalled)
	require.Contains(t, stderr, "augustus: bench failed: ")
	require.Contains(t, stderr, "calls did not complete (")
	require.Contains(t, stderr, "no call completed in the measured 1")
	require.Contains(t, stdout, "FAILED")
	require.Equal(t, 2, res.ReplicasScraped)
	for _, n := range []string{"g0r2", "g0r3"} {
		require.Contains(t, res.ReplicasMissing[n], "unreachable: connection refused", n)
		require.Contains(t, stdout, n+": metrics at ")
	}
}

// README's first recipe ran the noop workload against replicas running the
// log application: the replicas reject every call, and bench says so at
// once instead of measuring nothing for the whole duration.
func TestBenchAgainstTheWrongApplicationFailsAtOnce(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appLog)
	start := time.Now()
	code, _, stderr := runMain(t, "bench", "--workload", "noop", "--dir", dir, "--duration", "30s", "--progress", "off")
	require.Equal(t, 1, code)
	require.Less(t, time.Since(start), 20*time.Second, "at once, not after the 30s run")
	require.Contains(t, stderr, "augustus: the replicas reject the calls: client: call rejected by the replicas: ")
	require.Contains(t, stderr, "the noop workload needs replicas running --app noop (augustus start --dir "+dir+" --app noop)")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1-strings.Count(stderr, "bench: "), "one line of error: %q", stderr)
	t.Logf("stderr: %s", stderr)
}

func TestBenchLogAgainstTheNoopApplicationFailsAtOnce(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	start := time.Now()
	code, _, stderr := runMain(t, "bench", "--workload", "log", "--dir", dir, "--duration", "30s", "--progress", "off")
	require.Equal(t, 1, code)
	require.Less(t, time.Since(start), 20*time.Second, "at once, not after the 30s run")
	require.Contains(t, stderr, "augustus: the replicas answer with results of another application: the result is not a log length: ")
	require.Contains(t, stderr, "the log workload needs replicas running --app log")
}

// --replica-cpu reports the group's CPU per PBFT batch and each replica's;
// the report names the durability mode, here "none" (init --sync none).
func TestBenchReportsReplicaCPUPerBatchAndTheSyncMode(t *testing.T) {
	dir, _ := newTestCluster(t, "--sync", "none")
	startCluster(t, dir, appNoop)
	res, out := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "8", "--duration", "1s", "--warmup", "200ms", "--replica-cpu")
	require.Equal(t, "none", res.Sync)
	require.Positive(t, res.Batches)
	require.InDelta(t, res.Batches/res.MeasuredSecs, res.BatchesPerSecond, 1e-9)
	require.Positive(t, res.ReplicaCPUMsPerBatch)
	require.Len(t, res.ReplicaCPUMsPerBatchByReplica, 4)
	var sum float64
	for _, v := range res.ReplicaCPUMsPerBatchByReplica {
		sum += v
	}
	require.InDelta(t, res.ReplicaCPUMsPerBatch, sum, 1e-6)
	for _, want := range []string{"sync none", "ms/batch", "batches/s", "g0r0", "% of a core"} {
		require.Contains(t, out, want)
	}
}

// --profile pulls a CPU profile from each replica of the group, served by
// start --pprof on the ports from --pprof-base-port.
func TestBenchProfilePullsACPUProfileFromEachReplica(t *testing.T) {
	dir, _ := newTestCluster(t)
	base := freeBasePort(t, 4)
	startClusterWith(t, startOptions{dir: dir, app: appNoop, logLevel: "warn", grace: 10 * time.Second, pprof: true, pprofBase: base})
	profDir := filepath.Join(t.TempDir(), "prof")
	res, out := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "4", "--duration", "1s", "--warmup", "200ms",
		"--profile", profDir, "--pprof-base-port", fmt.Sprint(base))
	require.Len(t, res.Profiles, 4)
	for name, path := range res.Profiles {
		require.Equal(t, filepath.Join(profDir, name+".pprof"), path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, len(data) > 2 && data[0] == 0x1f && data[1] == 0x8b, "a gzipped pprof profile")
	}
	require.Contains(t, out, "profile g0r1")
}

// Without replicas serving pprof, --profile says why there is no profile
// and the run still succeeds.
func TestBenchProfileWithoutPprofSaysWhy(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	res, _ := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "2", "--duration", "1s", "--warmup", "100ms",
		"--profile", t.TempDir(), "--pprof-base-port", fmt.Sprint(freeBasePort(t, 4)))
	require.Len(t, res.Profiles, 4)
	for _, p := range res.Profiles {
		require.Contains(t, p, "none:")
		require.Contains(t, p, "augustus start --pprof")
	}
}
