package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// execEnv makes the test binary act as the augustus binary: the replicas
// that start and demo launch (os.Executable, i.e. this binary) run Main.
const execEnv = "AUGUSTUS_CLI_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	if err := os.Setenv(execEnv, "1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runMain runs the command line with a deadline of a minute and returns its
// exit code, stdout and stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runMainWithin(t, time.Minute, args...)
}

// runMainWithin is runMain with the deadline d.
func runMainWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(args, &out, &errb) }()
	select {
	case code := <-done:
		return code, out.String(), errb.String()
	case <-time.After(d):
		t.Fatalf("augustus %s did not finish within %s; stderr:\n%s", strings.Join(args, " "), d, errb.String())
		return 0, "", ""
	}
}

// freeBasePort returns a base port such that the n ports from it are free
// on 127.0.0.1 now. The ports are below the kernel's ephemeral range, so no
// outgoing connection takes one while a replica that owns it restarts.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	low, high := 10000, 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(data), &lo, &hi); err == nil && lo > low+1000 {
			high = lo
		}
	}
	for range 200 {
		base := low + rand.IntN(high-low-n)
		free := true
		for p := base; p < base+n && free; p++ {
			lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				break
			}
			_ = lis.Close()
		}
		if free {
			return base
		}
	}
	t.Fatalf("no run of %d free ports found in %d..%d", n, low, high)
	return 0
}

// newTestCluster writes a one-group cluster (f=1) on free loopback ports.
func newTestCluster(t *testing.T, extra ...string) (string, *cluster.Cluster) {
	t.Helper()
	dir := t.TempDir()
	base := freeBasePort(t, 12)
	args := append([]string{"init", "--dir", dir, "--groups", "1", "--base-port", fmt.Sprint(base)}, extra...)
	if code, _, stderr := runMain(t, args...); code != 0 {
		t.Fatalf("init failed: %s", stderr)
	}
	c, err := cluster.Load(dir + "/" + cluster.FileName)
	if err != nil {
		t.Fatal(err)
	}
	return dir, c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronization
	}
}

// startCluster runs `start` in-process until the test ends.
func startCluster(t *testing.T, dir, app string) (*syncBuffer, func() error) {
	t.Helper()
	return startClusterWith(t, startOptions{dir: dir, app: app, logLevel: "warn", grace: 10 * time.Second})
}

// startClusterWith runs `start` with o until the test ends, and waits for
// its report that the replicas are up.
func startClusterWith(t *testing.T, o startOptions) (*syncBuffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	var result error
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		result = runStart(ctx, &out, &errb, o)
	}()
	stop := func() error {
		cancel()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			t.Errorf("start did not stop within 30s")
		}
		return result
	}
	t.Cleanup(func() { _ = stop() })
	waitFor(t, 60*time.Second, "the replicas to come up", func() bool {
		select {
		case <-finished:
			t.Fatalf("start ended early: %v\nstdout:\n%s\nstderr:\n%s", result, out.String(), errb.String())
		default:
		}
		return strings.Contains(out.String(), "replicas are up")
	})
	return &out, stop
}
