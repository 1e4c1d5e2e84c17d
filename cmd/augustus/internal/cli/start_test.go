package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/internal/backoff"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

func TestStartRunsEveryReplicaAndStopsThemCleanly(t *testing.T) {
	dir, c := newTestCluster(t)
	out, stop := startCluster(t, dir, appNoop)
	for _, r := range c.Groups[0].Replicas {
		require.Contains(t, out.String(), r.PeerAddr)
		require.Contains(t, out.String(), r.ClientAddr)
		require.Contains(t, out.String(), "http://"+r.MetricsAddr+"/metrics")
		m, err := scrape(context.Background(), r.MetricsAddr)
		require.NoError(t, err)
		_, ok := m.value(metricCPU)
		require.True(t, ok, "%s serves %s", r.Name, metricCPU)
	}
	pids := startPids(t, out.String())
	require.Len(t, pids, 4)
	require.NoError(t, stop())
	require.Contains(t, out.String(), "All replicas stopped.")
	for name, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "replica %s (pid %d) still runs", name, pid)
	}
}

// A replica killed with SIGKILL is reported with its cause and restarted;
// the others keep running (a group of 3f+1 survives f failures).
func TestStartRestartsAKilledReplicaAndKeepsTheOthers(t *testing.T) {
	dir, _ := newTestCluster(t)
	out, stop := startClusterWith(t, startOptions{dir: dir, app: appLog, logLevel: "warn", grace: 10 * time.Second, stableAfter: time.Second})
	pids := startPids(t, out.String())
	time.Sleep(1200 * time.Millisecond) // past stableAfter: g0r2 started fine, then crashes
	require.NoError(t, syscall.Kill(pids["g0r2"], syscall.SIGKILL))
	waitFor(t, 30*time.Second, "the restart", func() bool {
		return strings.Contains(out.String(), "replica g0r2 restarted (pid")
	})
	text := out.String()
	require.Contains(t, text, "replica g0r2 (pid "+strconv.Itoa(pids["g0r2"])+") exited after")
	require.Contains(t, text, "signal: killed")
	require.Contains(t, text, "Group 0: 3 of 4 replicas running; it serves with up to f=1 down.")
	require.Regexp(t, `replica g0r2: restarting in [0-9.]+m?s \(--restart on-failure\)`, text)
	for name, pid := range pids {
		if name != "g0r2" {
			require.NoError(t, syscall.Kill(pid, 0), "replica %s (pid %d) still runs", name, pid)
		}
	}
	restarted := regexp.MustCompile(`replica g0r2 restarted \(pid (\d+)\)`).FindStringSubmatch(text)
	require.Len(t, restarted, 2)
	newPid, err := strconv.Atoi(restarted[1])
	require.NoError(t, err)
	require.NoError(t, stop())
	require.Contains(t, out.String(), "All replicas stopped.")
	for name, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "replica %s (pid %d) still runs", name, pid)
	}
	require.ErrorIs(t, syscall.Kill(newPid, 0), syscall.ESRCH, "the restarted g0r2 (pid %d) still runs", newPid)
}

// A replica whose key file is wrong fails at start-up every time: start
// restarts it a few times, then leaves it down and says why, while the
// other three serve.
func TestStartLeavesAReplicaWithAWrongKeyDownAndSaysWhy(t *testing.T) {
	dir, _ := newTestCluster(t)
	other, err := os.ReadFile(cluster.KeyPath(dir, "g0r2"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cluster.KeyPath(dir, "g0r3"), other, 0o600))
	out, stop := startClusterWith(t, startOptions{dir: dir, app: appNoop, logLevel: "warn", grace: 10 * time.Second,
		restartBackoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second}, maxStartFailures: 3})
	text := out.String()
	require.Contains(t, text, "replica g0r3 is left down: it failed at start-up 3 times in a row; last error: augustus: replica g0r3: ")
	require.Contains(t, text, "does not match the public key of g0r3")
	require.Contains(t, text, "3 of 4 replicas are up; g0r3 is down (left down after failing at start-up: ")
	require.Contains(t, text, "start-up failure 2 of 3 in a row")
	res, _ := runBenchJSON(t, "--workload", "noop", "--dir", dir, "--clients", "4", "--duration", "1s", "--warmup", "200ms")
	require.Positive(t, res.Calls, "the other three serve")
	require.Equal(t, 3, res.ReplicasScraped)
	require.Contains(t, res.ReplicasMissing["g0r3"], "unreachable")
	require.NoError(t, stop())
}

func TestStartRejectsBadOptions(t *testing.T) {
	dir, _ := newTestCluster(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grace", "-1s"}, "--grace -1s: must be positive"},
		{[]string{"--grace", "0s"}, "--grace 0s: must be positive"},
		{[]string{"--restart", "sometimes"}, `--restart "sometimes": want "on-failure", "always" or "never"`},
	} {
		code, _, stderr := runMain(t, append([]string{"start", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
	}
	_, err := os.Stat(filepath.Join(dir, "data"))
	require.True(t, os.IsNotExist(err), "no replica started")
}

func TestStartRejectsAMissingCluster(t *testing.T) {
	code, _, stderr := runMain(t, "start", "--dir", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no cluster.json in")
}

var pidRow = regexp.MustCompile(`(?m)^(g\d+r\d+)\s+(\d+)\s`)

// startPids reads the replica pids from start's table.
func startPids(t *testing.T, out string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, m := range pidRow.FindAllStringSubmatch(out, -1) {
		pid, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		pids[m[1]] = pid
	}
	return pids
}

// When no replica runs and none will be restarted, start says so and exits
// with status 1 rather than supervising nothing.
func TestStartExitsWhenEveryReplicaIsDownForGood(t *testing.T) {
	dir, _ := newTestCluster(t)
	out, stop := startClusterWith(t, startOptions{dir: dir, app: appNoop, logLevel: "warn", grace: 10 * time.Second, restart: restartNever})
	for _, pid := range startPids(t, out.String()) {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	waitFor(t, 30*time.Second, "start to give up", func() bool {
		return strings.Contains(out.String(), "Every replica is down and none will be restarted; stopping.")
	})
	err := stop()
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.code)
	require.Contains(t, out.String(), "Group 0: 0 of 4 replicas running: more than f=1 down")
}

// augustus start without --app runs the transaction engine: augustus txn
// commits a transaction across the two groups it starts.
func TestStartRunsTheTransactionEngineByDefault(t *testing.T) {
	for _, cmd := range []string{"start", "replica"} {
		code, help, _ := runMain(t, cmd, "--help")
		require.Equal(t, 0, code)
		require.Contains(t, help, `"log" or "noop" (default "txn")`, cmd)
	}
	dir := t.TempDir()
	code, _, stderr := runMain(t, "init", "--dir", dir, "--groups", "2", "--base-port", fmt.Sprint(freeBasePort(t, 24)))
	require.Equal(t, 0, code, stderr)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	root := NewRootCommand()
	root.SetArgs([]string{"start", "--dir", dir, "--log-level", "warn"})
	root.SetOut(&out)
	root.SetErr(&errb)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("start did not stop within 30s")
		}
	})
	waitFor(t, 60*time.Second, "the replicas to come up", func() bool {
		return strings.Contains(out.String(), "replicas are up")
	})
	code, txnOut, stderr := runMain(t, "txn", "--dir", dir, "insert a 1; insert été 2")
	require.Equal(t, 0, code, "stderr: %s\nstart's stderr:\n%s", stderr, errb.String())
	require.Contains(t, txnOut, "committed (multi-group update, groups 0, 1")
}
