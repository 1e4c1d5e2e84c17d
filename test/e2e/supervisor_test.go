package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// startProc is `augustus start` running as a process, supervising the
// replicas of a testCluster's directory.
type startProc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan error
	stopped        bool
}

// superviseCluster runs `augustus start` on tc's directory with extra
// flags, waits until it reports the replicas up (all, or some with the
// others down), and stops it when the test ends.
func superviseCluster(t *testing.T, tc *testCluster, extra ...string) *startProc {
	t.Helper()
	sp := &startProc{t: t, done: make(chan error, 1)}
	args := append([]string{"start", "--dir", tc.dir, "--log-level", "warn"}, extra...)
	sp.cmd = exec.Command(binary, args...)
	sp.cmd.Stdout, sp.cmd.Stderr = &sp.stdout, &sp.stderr
	if err := sp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { sp.done <- sp.cmd.Wait() }()
	t.Cleanup(func() {
		if !sp.stopped {
			_ = sp.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-sp.done:
			case <-time.After(30 * time.Second):
				_ = sp.cmd.Process.Kill()
				<-sp.done
			}
		}
		if t.Failed() {
			t.Logf("---- augustus start stdout ----\n%s", sp.stdout.String())
			t.Logf("---- augustus start stderr (last 60 lines) ----\n%s", lastLines(sp.stderr.String(), 60))
		}
	})
	waitFor(t, 90*time.Second, "augustus start to report the replicas up", func() bool {
		select {
		case err := <-sp.done:
			sp.stopped = true
			t.Fatalf("augustus start exited early (%v):\n%s", err, sp.stdout.String())
		default:
		}
		return strings.Contains(sp.stdout.String(), "replicas are up")
	})
	return sp
}

// pids reads the replica pids from start's table.
func (sp *startProc) pids() map[string]int {
	pids := map[string]int{}
	for _, m := range pidRow.FindAllStringSubmatch(sp.stdout.String(), -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
	}
	return pids
}

// stop sends SIGTERM and checks that start stops every replica and exits 0.
func (sp *startProc) stop() {
	sp.t.Helper()
	if err := sp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		sp.t.Fatal(err)
	}
	select {
	case err := <-sp.done:
		sp.stopped = true
		if err != nil {
			sp.t.Fatalf("start exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		sp.t.Fatal("start did not exit within 30s of SIGTERM")
	}
	if !strings.Contains(sp.stdout.String(), "All replicas stopped.") {
		sp.t.Fatalf("start did not report a clean stop:\n%s", sp.stdout.String())
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// benchOutcome is what the tests read of bench's JSON.
type benchOutcome struct {
	Calls            int64             `json:"calls"`
	Errors           int64             `json:"errors"`
	FailedCalls      int64             `json:"failed_calls"`
	TimedOutCalls    int64             `json:"timed_out_calls"`
	OutstandingCalls int64             `json:"outstanding_calls"`
	CallsPerSecond   float64           `json:"calls_per_second"`
	OK               bool              `json:"ok"`
	Stalled          bool              `json:"stalled"`
	Problems         []string          `json:"problems"`
	ReplicasScraped  int               `json:"replicas_scraped"`
	ReplicasMissing  map[string]string `json:"replicas_missing"`
	LatencyMs        struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"latency_ms"`
}

// runBench runs `augustus bench` with --json and returns its result, its
// output and its exit error.
func runBench(t *testing.T, timeout time.Duration, args ...string) (benchOutcome, string, error) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	out, err := runAugustus(t, timeout, append(append([]string{"bench"}, args...), "--json", jsonPath, "--progress", "lines")...)
	var res benchOutcome
	data, rerr := os.ReadFile(jsonPath)
	if rerr != nil {
		t.Fatalf("bench wrote no JSON (%v; exit %v):\n%s", rerr, err, out)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return res, out, err
}

// primaryOf returns the replica the survivors see as primary now.
func (tc *testCluster) primaryOf() string {
	v := tc.maxMetric(mView, tc.names...)
	return tc.names[int(v)%len(tc.names)]
}

// Under `augustus start`, kill -9 of the primary while `augustus bench`
// runs: calls keep completing (bench exits 0 with no error), start restarts
// the killed replica, and it catches up: its executed sequence number
// reaches the others'. The short form measures 6s, the long one 20s.
func TestE2EStartKeepsServingWhenThePrimaryIsKilledUnderBench(t *testing.T) {
	measure := 20 * time.Second
	if testing.Short() {
		measure = 6 * time.Second
	}
	tc := newCluster(t, clusterOptions{})
	sp := superviseCluster(t, tc, "--app", "noop")
	pids := sp.pids()
	if len(pids) != 4 {
		t.Fatalf("start printed %d replica rows:\n%s", len(pids), sp.stdout.String())
	}

	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	bench := exec.Command(binary, "bench", "--workload", "noop", "--dir", tc.dir, "--clients", "16",
		"--duration", measure.String(), "--warmup", "1s", "--call-timeout", "30s", "--json", jsonPath, "--progress", "lines")
	var benchOut lockedBuffer
	bench.Stdout, bench.Stderr = &benchOut, &benchOut
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	benchDone := make(chan error, 1)
	benchExited := make(chan struct{})
	go func() {
		benchDone <- bench.Wait()
		close(benchExited)
	}()
	t.Cleanup(func() {
		_ = bench.Process.Kill()
		<-benchExited
	})

	// Kill the primary early in the measured interval (after the 1s
	// warm-up).
	const killAfter = 2500 * time.Millisecond
	time.Sleep(killAfter)
	primary := tc.primaryOf()
	var others []string
	for _, n := range tc.names {
		if n != primary {
			others = append(others, n)
		}
	}
	if err := syscall.Kill(pids[primary], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, 30*time.Second, "start to restart the killed primary", func() bool {
		return strings.Contains(sp.stdout.String(), "replica "+primary+" restarted (pid")
	})
	restartedAfter := time.Since(killed)
	if !strings.Contains(sp.stdout.String(), fmt.Sprintf("replica %s (pid %d) exited after", primary, pids[primary])) ||
		!strings.Contains(sp.stdout.String(), "signal: killed") {
		t.Fatalf("start did not report the exit and its cause:\n%s", sp.stdout.String())
	}

	var benchErr error
	select {
	case benchErr = <-benchDone:
	case <-time.After(measure + 60*time.Second):
		t.Fatalf("bench did not finish:\n%s", benchOut.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatalf("bench wrote no JSON (%v):\n%s", benchErr, benchOut.String())
	}
	var res benchOutcome
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if benchErr != nil || !res.OK || res.Calls == 0 || res.Errors != 0 {
		t.Fatalf("bench across the kill: exit %v, result %+v\n%s", benchErr, res, benchOut.String())
	}

	// The restarted replica catches up with the others.
	target := tc.maxMetric(mExecuted, others...)
	waitFor(t, 60*time.Second, "the restarted replica to reach the others' executed sequence number", func() bool {
		return tc.metric(primary, mExecuted) >= target
	})
	t.Logf("measured %s: %d calls (%.0f calls/s, p99 %.1f ms, max %.1f ms), 0 errors; primary %s killed %s into the run, restarted by start %s later; "+
		"survivors in view %.0f; %s reached seq %.0f (the others' last executed)",
		measure, res.Calls, res.CallsPerSecond, res.LatencyMs.P99, res.LatencyMs.Max, primary, killAfter-time.Second,
		restartedAfter.Round(time.Millisecond), tc.minMetric(mView, others...), primary, target)
	sp.stop()
	if m := restartedPid.FindStringSubmatch(sp.stdout.String()); m != nil {
		pids[primary+" (restarted)"], _ = strconv.Atoi(m[1])
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("replica %s (pid %d) still runs after start exited", name, pid)
		}
	}
}

var restartedPid = regexp.MustCompile(`replica g\d+r\d+ restarted \(pid (\d+)\)`)

// One replica's key file is wrong: it fails at start-up every time, start
// restarts it a few times and then leaves it down saying which replica and
// why, while the other three serve bench's calls.
func TestE2EStartWithAWrongKeyFileServesWithTheOtherThree(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	bad := tc.names[3]
	other, err := os.ReadFile(cluster.KeyPath(tc.dir, tc.names[2]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cluster.KeyPath(tc.dir, bad), other, 0o600); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	sp := superviseCluster(t, tc, "--app", "noop")
	up := time.Since(started)
	out := sp.stdout.String()
	for _, want := range []string{
		"replica " + bad + " is left down: it failed at start-up 5 times in a row; last error: augustus: replica " + bad + ": ",
		"does not match the public key of " + bad,
		"3 of 4 replicas are up; " + bad + " is down (left down after failing at start-up: ",
		"Group 0: 3 of 4 replicas running; it serves with up to f=1 down.",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("start's output lacks %q:\n%s", want, out)
		}
	}
	res, benchOut, err := runBench(t, 90*time.Second, "--workload", "noop", "--dir", tc.dir, "--clients", "8",
		"--duration", "2s", "--warmup", "500ms")
	if err != nil || !res.OK || res.Calls == 0 {
		t.Fatalf("bench with three replicas: exit %v, %+v\n%s", err, res, benchOut)
	}
	if res.ReplicasScraped != 3 || !strings.Contains(res.ReplicasMissing[bad], "unreachable") {
		t.Fatalf("bench's CPU figures: %d replicas, missing %v", res.ReplicasScraped, res.ReplicasMissing)
	}
	t.Logf("start gave up on %s after %s; the other three served %d calls (%.0f calls/s); bench left out %s: %s",
		bad, up.Round(100*time.Millisecond), res.Calls, res.CallsPerSecond, bad, res.ReplicasMissing[bad])
	sp.stop()
}

// A bench against a group with two of four replicas killed (more than f)
// exits non-zero and says why: the calls without a result, and that none
// completed.
func TestE2EBenchWithTwoOfFourReplicasDownFailsAndSaysWhy(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	sp := superviseCluster(t, tc, "--app", "noop", "--restart", "never")
	pids := sp.pids()
	for _, n := range tc.names[2:] {
		if err := syscall.Kill(pids[n], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "start to report both exits", func() bool {
		return strings.Count(sp.stdout.String(), "not restarted (--restart never)") == 2
	})
	if !strings.Contains(sp.stdout.String(), "Group 0: 2 of 4 replicas running: more than f=1 down, so it cannot order calls") {
		t.Fatalf("start does not say the group cannot order calls:\n%s", sp.stdout.String())
	}
	res, out, err := runBench(t, 60*time.Second, "--workload", "noop", "--dir", tc.dir, "--clients", "4",
		"--duration", "2s", "--warmup", "0s", "--call-timeout", "3s")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("bench exited with %v, want status 1:\n%s", err, out)
	}
	for _, want := range []string{"augustus: bench failed: ", "calls did not complete (", "no call completed in the measured 2"} {
		if !strings.Contains(out, want) {
			t.Fatalf("bench's output lacks %q:\n%s", want, out)
		}
	}
	if res.OK || res.Calls != 0 || res.Errors == 0 || !res.Stalled || res.Errors != res.FailedCalls+res.TimedOutCalls+res.OutstandingCalls {
		t.Fatalf("bench's JSON: %+v", res)
	}
	t.Logf("bench with 2 of 4 down: exit 1; errors %d (%d failed, %d timed out, %d outstanding); problems: %s",
		res.Errors, res.FailedCalls, res.TimedOutCalls, res.OutstandingCalls, strings.Join(res.Problems, "; "))
}
