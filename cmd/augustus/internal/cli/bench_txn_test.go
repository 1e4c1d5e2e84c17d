package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/cmd/augustus/internal/bench"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// newTxnTestCluster writes a cluster of groups groups (f=1) with clients
// client keys on free loopback ports and starts it with the transaction
// engine.
func newTxnTestCluster(t *testing.T, groups, clients int) string {
	t.Helper()
	dir := t.TempDir()
	base := freeBasePort(t, 12*groups)
	code, _, stderr := runMain(t, "init", "--dir", dir, "--groups", fmt.Sprint(groups), "--clients", fmt.Sprint(clients),
		"--base-port", fmt.Sprint(base))
	require.Equal(t, 0, code, stderr)
	startCluster(t, dir, appTxn)
	return dir
}

// runTxnBenchJSON runs bench with --json and returns the report, stdout,
// stderr and the exit code.
func runTxnBenchJSON(t *testing.T, args ...string) (bench.TxnReport, string, string, int) {
	t.Helper()
	return runTxnBenchJSONWithin(t, time.Minute, args...)
}

// runTxnBenchJSONWithin is runTxnBenchJSON with the deadline d.
func runTxnBenchJSONWithin(t *testing.T, d time.Duration, args ...string) (bench.TxnReport, string, string, int) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, stderr := runMainWithin(t, d, append(append([]string{"bench"}, args...), "--json", jsonPath, "--progress", "off")...)
	var rep bench.TxnReport
	if data, err := os.ReadFile(jsonPath); err == nil {
		require.NoError(t, json.Unmarshal(data, &rep))
	}
	return rep, out, stderr, code
}

// One cluster of 2 groups × 4 replica processes for the bench's
// transaction workloads: a load and a measured run of A at two mixes, the
// Byzantine callers, the bank with its history and check, and a second
// bench process whose history merges with the first's.
func TestBenchTxnAgainstTwoGroups(t *testing.T) {
	dir := newTxnTestCluster(t, 2, 6)

	t.Run("--profile covers every replica of every group and says why one is missing", func(t *testing.T) {
		// The cluster's replicas serve no pprof, so every profile is
		// "none: ..." with the reason; one entry per replica of both groups.
		rep, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--app", "txn", "--load", "--items", "200",
			"--multi-group", "0", "--clients", "2", "--duration", "1s", "--warmup", "100ms",
			"--profile", t.TempDir(), "--pprof-base-port", fmt.Sprint(freeBasePort(t, 8)))
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.Len(t, rep.Runs, 1)
		require.Len(t, rep.Runs[0].Profiles, 8)
		for _, name := range []string{"g0r0", "g0r3", "g1r0", "g1r3"} {
			require.Contains(t, rep.Runs[0].Profiles[name], "none:")
			require.Contains(t, rep.Runs[0].Profiles[name], "augustus start --pprof")
		}
		require.Contains(t, out, "profile g1r2")
	})

	t.Run("workload A loads, measures both mixes and counts every replica's CPU", func(t *testing.T) {
		rep, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--app", "txn", "--load", "--items", "2000",
			"--multi-group", "0,50", "--clients", "8", "--duration", "1s", "--warmup", "200ms")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.True(t, rep.OK, rep.Problems)
		require.NotNil(t, rep.Load)
		require.Equal(t, int64(2000), rep.Load.Inserted+rep.Load.Existing)
		// The load's compactions were watched on all 8 replicas and ended
		// before the first measured interval (2s with none running).
		require.Equal(t, "settled", rep.Load.Settle)
		require.GreaterOrEqual(t, rep.Load.SettleSeconds, 1.5)
		require.Contains(t, stderr, "the replicas' compactions after the load: settled")
		require.Len(t, rep.Runs, 2)
		single, mixed := rep.Runs[0], rep.Runs[1]
		require.Positive(t, single.Committed)
		require.Equal(t, single.Committed, single.CommittedSingle, "0%: no multi-group transaction")
		require.Positive(t, mixed.CommittedMulti)
		require.Positive(t, mixed.CommittedSingle)
		for _, r := range rep.Runs {
			require.Zero(t, r.Errors, r.FirstError)
			require.Zero(t, r.AbsentReads)
			require.Equal(t, 8, r.Replicas)
			require.Equal(t, 8, r.ReplicasScraped, r.ReplicasMissing)
			require.Len(t, r.GroupCPUSeconds, 2)
			require.Positive(t, r.CPUMsPerTxn)
			require.Positive(t, r.CallBytesSingle)
			require.LessOrEqual(t, r.LatencyMs.P50, r.LatencyMs.P99)
			require.GreaterOrEqual(t, r.Attempts, float64(r.Committed))
			require.NotEmpty(t, r.LoadAvgBefore)
		}
		for _, want := range []string{"txn/s", "latency p50 / p95 / p99", "cluster CPU", "over 8 of 8 replicas", "50% multi-group"} {
			require.Contains(t, out, want)
		}
		// The guarded shape over the loaded items.
		rep, out, stderr, code = runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--shape", "guarded", "--items", "2000",
			"--multi-group", "50", "--clients", "4", "--duration", "1s", "--warmup", "0s")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.Positive(t, rep.Runs[0].Committed)
	})

	t.Run("--rate offers an open loop and says whether the cluster kept up", func(t *testing.T) {
		// 8 callers that could commit hundreds of transactions per second
		// are offered 40 per second in all, each started on its schedule.
		rep, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--items", "2000",
			"--multi-group", "50", "--clients", "8", "--duration", "3s", "--warmup", "200ms", "--rate", "40")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		r := rep.Runs[0]
		require.Equal(t, 40.0, r.RateLimit)
		require.LessOrEqual(t, r.TxnPerSecond, 44.0, "offered 40 txn/s")
		// The schedule does not wait for the cluster: 120 starts fall due in
		// the 3 s, whatever the transactions' latency on a busy machine.
		require.InDelta(t, 120, r.Scheduled, 2)
		// Every start that fell due is accounted for: it finished in the
		// interval, was missed (all 8 callers busy: a start is never made
		// late), or ended after the interval; at most one per caller that
		// fell due in the warm-up finishes in the interval too.
		accounted := r.Committed + r.Aborted + r.FailedCalls + r.TimedOutCalls + r.OutstandingCalls + r.DrainedCalls + r.Missed
		require.GreaterOrEqual(t, accounted, r.Scheduled-1)
		require.LessOrEqual(t, accounted, r.Scheduled+8)
		// Met means the cluster finished 95 % of the offered rate,
		// committed or aborted. (On an idle machine it does: about 120
		// finish; with the load of other work at 15 on 2 cores, 8 callers
		// were all busy 4 times in 120 and 111 finished: not met, and said
		// so.)
		finished := float64(r.Committed+r.Aborted) / r.MeasuredSeconds
		require.Equal(t, finished >= 38, r.RateMet, "finished %.1f txn/s", finished)
		if r.RateMet {
			require.Contains(t, out, "offered 40 txn/s in all by --rate: met")
		} else {
			require.Contains(t, out, "offered 40 txn/s in all by --rate: NOT met")
		}
		// One caller cannot offer 100000 transactions per second: the
		// report says the offered load was not met, and the run is still a
		// measurement, not a failure.
		rep, out, stderr, code = runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--items", "2000",
			"--multi-group", "0", "--clients", "1", "--duration", "1s", "--warmup", "0s", "--rate", "100000")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.True(t, rep.OK, rep.Problems)
		require.False(t, rep.Runs[0].RateMet)
		require.Contains(t, out, "offered 100000 txn/s in all by --rate: NOT met")
	})

	t.Run("an unloaded database is reported, not measured as if loaded", func(t *testing.T) {
		rep, _, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "C", "--items", "3000", "--clients", "2",
			"--duration", "500ms", "--warmup", "0s")
		require.Equal(t, 1, code)
		require.False(t, rep.OK)
		require.Contains(t, stderr, "reads found no item: the database is not loaded")
		_, _, stderr, code = runTxnBenchJSON(t, "--dir", dir, "--workload", "B", "--items", "3000", "--clients", "2",
			"--duration", "500ms", "--warmup", "0s")
		require.Equal(t, 1, code)
		require.Contains(t, stderr, "transactions wrote items that do not exist: the database is not loaded")
	})

	t.Run("Byzantine callers abandon transactions that correct callers recover", func(t *testing.T) {
		// Few items, so that abandoned transactions meet correct ones soon.
		rep, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "A", "--items", "64", "--load",
			"--multi-group", "20", "--byzantine", "0,40", "--clients", "5", "--duration", "2s", "--warmup", "200ms",
			"--byz-poll", "20ms", "--recovery-grace", "20ms")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.Len(t, rep.Runs, 2)
		byz := rep.Runs[1]
		require.Equal(t, 2, byz.ByzantineCallers)
		require.Equal(t, 3, byz.CorrectCallers)
		require.NotNil(t, byz.Byzantine)
		require.Positive(t, byz.Byzantine.Abandoned)
		require.Positive(t, byz.Byzantine.CommitVoted)
		require.Positive(t, byz.Recoveries["committed"]+byz.Recoveries["aborted"], "correct callers recovered abandoned transactions (K4): %v", byz.Recoveries)
		require.Zero(t, byz.Byzantine.LeftUnfinished, "the clean-up finished every abandoned transaction")
		require.Len(t, rep.Fig5, 2)
		require.Contains(t, out, "Byzantine callers (Fig. 5)")
	})

	t.Run("bank: history file round trip, check, and a second process's history merges", func(t *testing.T) {
		h1 := filepath.Join(t.TempDir(), "h1.txt")
		rep, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "bank", "--load", "--items", "16",
			"--multi-group", "50", "--byzantine", "0,25", "--clients", "4", "--duration", "1s", "--warmup", "0s",
			"--history", h1, "--check", "--byz-poll", "20ms", "--recovery-grace", "20ms", "--byz-pending", "2")
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.NotNil(t, rep.Bank)
		require.True(t, rep.Bank.TotalOK)
		require.Equal(t, 16*bench.BankInitial, rep.Bank.Total)
		require.True(t, rep.Bank.Checked)
		require.Empty(t, rep.Bank.Anomalies)
		require.Positive(t, rep.Bank.CheckedTxns)
		require.Contains(t, out, "Elle check (strict serializability)")
		require.Positive(t, rep.Runs[1].Byzantine.Abandoned, "a Byzantine transfer was abandoned")

		// Round trip: the file parses to the ops written, and encodes back
		// to the same lines.
		h, err := history.ReadFile(h1)
		require.NoError(t, err)
		require.Len(t, h, rep.Bank.HistoryOps)
		data, err := os.ReadFile(h1)
		require.NoError(t, err)
		var body []string
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				body = append(body, line)
			}
		}
		require.Equal(t, strings.Join(body, "\n")+"\n", h.String())
		for _, op := range h {
			require.GreaterOrEqual(t, op.Process, 0)
			require.LessOrEqual(t, op.Process, 4+16)
		}

		// A second process: its own client key and process ids, no load.
		h2 := filepath.Join(t.TempDir(), "h2.txt")
		rep2, out, stderr, code := runTxnBenchJSON(t, "--dir", dir, "--workload", "bank", "--items", "16",
			"--client-key", filepath.Join(dir, "keys", "client5.key"), "--process-base", "100",
			"--multi-group", "50", "--clients", "3", "--duration", "1s", "--warmup", "0s", "--history", h2)
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.True(t, rep2.Bank.TotalOK)
		h2ops, err := history.ReadFile(h2)
		require.NoError(t, err)
		for _, op := range h2ops {
			require.GreaterOrEqual(t, op.Process, 100)
		}
		code, out, stderr = runMain(t, "bench", "--dir", dir, "--check-history", h1, "--check-history", h2)
		require.Equal(t, 0, code, "stderr: %s\nstdout: %s", stderr, out)
		require.Contains(t, out, "no anomaly")
		require.Contains(t, out, "from 2 file(s)")

		// A broken history fails the check: a committed read of a value
		// only an aborted transfer wrote (G1a).
		broken := breakHistory(t, h)
		bad := filepath.Join(t.TempDir(), "bad.txt")
		require.NoError(t, history.WriteFile(bad, broken, "a committed read of an aborted write"))
		code, out, stderr = runMain(t, "bench", "--dir", dir, "--check-history", bad)
		require.Equal(t, 1, code, "stdout: %s", out)
		require.Contains(t, stderr, "the history has ")
		require.Contains(t, out, "G1a")
	})
}

// breakHistory returns a copy of h in which the first committed read of a
// key written by a failed transfer returns that failed write's value.
func breakHistory(t *testing.T, h history.History) history.History {
	t.Helper()
	h = h.Clone()
	failed := map[string]int64{}
	for _, op := range h {
		if op.Outcome != history.Fail {
			continue
		}
		for _, m := range op.Txn {
			if m.Kind == history.KindWrite {
				failed[m.Key] = m.Value
			}
		}
	}
	for i := range h {
		if h[i].Outcome != history.OK {
			continue
		}
		for j, m := range h[i].Txn {
			if v, ok := failed[m.Key]; ok && m.Kind == history.KindRead && m.Result == history.ResultValue {
				h[i].Txn[j].Value = v
				return h
			}
		}
	}
	t.Fatalf("the history has no failed transfer to read from (%d ops)", len(h))
	return nil
}

func TestBenchTxnRejectsBadFlagsBeforeTheRun(t *testing.T) {
	dir, _ := newTestCluster(t) // one group, one client key; not started
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "A", "--multi-group", "120"}, `--multi-group "120": want percentages`},
		{[]string{"--workload", "A", "--multi-group", "20"}, "multi-group transactions need 2"},
		{[]string{"--workload", "A", "--byzantine", "x"}, `--byzantine "x"`},
		{[]string{"--workload", "A", "--app", "noop"}, `--app "noop": the A workload runs on the transaction engine`},
		{[]string{"--workload", "A", "--shape", "odd"}, `--shape "odd"`},
		{[]string{"--workload", "A", "--history", "h.txt"}, "use --workload bank"},
		{[]string{"--workload", "bank", "--check"}, "--check needs --load in the same run"},
		{[]string{"--workload", "bank", "--items", "5000"}, "the bank needs 2..1024 accounts"},
		{[]string{"--workload", "A", "--duration", "0s"}, "0 only with --load"},
		{[]string{"--workload", "C", "--items", "4"}, "fewer than the 8 distinct keys"},
		{[]string{"--workload", "A", "--load", "--settle-timeout", "-1s"}, "--settle-timeout -1s: must not be negative"},
	} {
		start := time.Now()
		code, _, stderr := runMain(t, append([]string{"bench", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want, tc.args)
		require.Less(t, time.Since(start), 5*time.Second, "refused before the run: %v", tc.args)
	}
}
