package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer collects a process's output for polling.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var pidRow = regexp.MustCompile(`(?m)^(g\d+r\d+)\s+(\d+)\s`)

func TestE2EStartServesBenchAndStopsOnSIGTERM(t *testing.T) {
	tc := newCluster(t, clusterOptions{})
	var stdout, stderr lockedBuffer
	start := exec.Command(binary, "start", "--dir", tc.dir, "--app", "noop", "--log-level", "warn")
	start.Stdout, start.Stderr = &stdout, &stderr
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- start.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = start.Process.Kill()
			<-done
		}
	})
	waitFor(t, 60*time.Second, "augustus start to report the replicas up", func() bool {
		return strings.Contains(stdout.String(), "All 4 replicas are up")
	})
	pids := map[string]int{}
	for _, m := range pidRow.FindAllStringSubmatch(stdout.String(), -1) {
		pids[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(pids) != 4 {
		t.Fatalf("start printed %d replica rows:\n%s", len(pids), stdout.String())
	}

	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	out, err := runAugustus(t, 60*time.Second, "bench", "--workload", "noop", "--dir", tc.dir, "--clients", "16",
		"--duration", "2s", "--warmup", "500ms", "--size", "0", "--json", jsonPath, "--progress", "off")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var res struct {
		Calls               int64   `json:"calls"`
		Errors              int64   `json:"errors"`
		CallsPerSecond      float64 `json:"calls_per_second"`
		CallsPerEnvelope    float64 `json:"calls_per_envelope"`
		ReplicasScraped     int     `json:"replicas_scraped"`
		ReplicaCPUMsPerCall float64 `json:"replica_cpu_ms_per_call"`
		LatencyMs           struct {
			P50, P99 float64
		} `json:"latency_ms"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Calls == 0 || res.Errors != 0 || res.ReplicasScraped != 4 || res.ReplicaCPUMsPerCall <= 0 {
		t.Fatalf("bench result %+v\n%s", res, out)
	}
	t.Logf("bench noop, 16 callers, 0 B: %.0f calls/s, %.1f calls/envelope, p50 %.2f ms, p99 %.2f ms, %.3f replica CPU ms/call",
		res.CallsPerSecond, res.CallsPerEnvelope, res.LatencyMs.P50, res.LatencyMs.P99, res.ReplicaCPUMsPerCall)

	if err := start.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Fatalf("start exited with %v after SIGTERM:\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("start did not exit within 30s of SIGTERM")
	}
	if !strings.Contains(stdout.String(), "All replicas stopped.") {
		t.Fatalf("start did not report a clean stop:\n%s", stdout.String())
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("replica %s (pid %d) still runs after start exited", name, pid)
		}
	}
}
