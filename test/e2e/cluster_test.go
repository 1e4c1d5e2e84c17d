package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// testCluster is one group of four `augustus replica` processes on
// loopback, with the log application.
type testCluster struct {
	t     *testing.T
	dir   string
	c     *cluster.Cluster
	names []string // by index

	mu    sync.Mutex
	procs map[string]*proc
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

type clusterOptions struct {
	// checkpointInterval and logWindow are K and L (0: the defaults).
	checkpointInterval, logWindow uint64
	// groups (default 1) and clients (default 2) as augustus init takes
	// them.
	groups, clients int
}

// newCluster writes a cluster with `augustus init` and moves every address
// to a free loopback port.
func newCluster(t *testing.T, o clusterOptions) *testCluster {
	t.Helper()
	dir := t.TempDir()
	groups, clients := max(o.groups, 1), o.clients
	if clients == 0 {
		clients = 2
	}
	args := []string{"init", "--dir", dir, "--groups", fmt.Sprint(groups), "--f", "1", "--clients", fmt.Sprint(clients), "--base-port", "1"}
	if o.checkpointInterval > 0 {
		args = append(args, "--checkpoint-interval", fmt.Sprint(o.checkpointInterval), "--log-window", fmt.Sprint(o.logWindow))
	}
	if out, err := runAugustus(t, 30*time.Second, args...); err != nil {
		t.Fatalf("augustus init: %v\n%s", err, out)
	}
	path := filepath.Join(dir, cluster.FileName)
	c, err := cluster.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	addrs := freeAddrs(t, 3*len(c.Groups)*len(c.Groups[0].Replicas))
	k := 0
	for g := range c.Groups {
		for i := range c.Groups[g].Replicas {
			r := &c.Groups[g].Replicas[i]
			r.PeerAddr, r.ClientAddr, r.MetricsAddr = addrs[k], addrs[k+1], addrs[k+2]
			k += 3
		}
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{t: t, dir: dir, c: c, procs: map[string]*proc{}}
	for _, g := range c.Groups {
		for _, r := range g.ReplicasByIndex() {
			tc.names = append(tc.names, r.Name)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.cleanup)
	return tc
}

// freeAddrs returns n distinct loopback addresses that were free a moment
// ago. The ports come from below the kernel's ephemeral range: a port taken
// from ":0" can be handed to some outgoing connection as its source port
// while its replica is down, and the restarted replica could not bind it.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	low, high := portRange()
	var lis []net.Listener
	defer func() {
		for _, l := range lis {
			_ = l.Close()
		}
	}()
	var addrs []string
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 100*n {
			t.Fatalf("found only %d free ports in %d..%d", len(addrs), low, high)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(high-low)))
		if err != nil {
			continue
		}
		lis = append(lis, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// portRange is where test ports come from: from 10000 up to the start of
// the ephemeral range (net.ipv4.ip_local_port_range).
func portRange() (low, high int) {
	low, high = 10000, 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(data), &lo, &hi); err == nil && lo > low+1000 {
			high = lo
		}
	}
	return low, high
}

func (tc *testCluster) replica(name string) *cluster.Replica {
	_, r, err := tc.c.Replica(name)
	if err != nil {
		tc.t.Fatal(err)
	}
	return r
}

func (tc *testCluster) logPath(name string) string {
	return filepath.Join(tc.dir, "logs", name+".log")
}

// startAll starts every replica and waits until they serve metrics.
func (tc *testCluster) startAll() {
	tc.t.Helper()
	for _, n := range tc.names {
		tc.start(n)
	}
	for _, n := range tc.names {
		tc.waitUp(n)
	}
}

// start runs `augustus replica` for name with the log application; its
// output is appended to logs/<name>.log.
func (tc *testCluster) start(name string, extra ...string) {
	tc.t.Helper()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if p := tc.procs[name]; p != nil && !p.exited() {
		tc.t.Fatalf("replica %s already runs", name)
	}
	f, err := os.OpenFile(tc.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		tc.t.Fatal(err)
	}
	args := append([]string{"replica", "--dir", tc.dir, "--id", name, "--app", "log", "--log-level", "info"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		tc.t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	tc.procs[name] = p
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to name and waits for it to die.
func (tc *testCluster) kill(name string) {
	tc.t.Helper()
	tc.mu.Lock()
	p := tc.procs[name]
	tc.mu.Unlock()
	if p == nil || p.exited() {
		tc.t.Fatalf("replica %s does not run", name)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// killAll sends SIGKILL to every replica at once, then waits for them.
func (tc *testCluster) killAll() {
	tc.t.Helper()
	tc.mu.Lock()
	var ps []*proc
	for _, p := range tc.procs {
		if !p.exited() {
			ps = append(ps, p)
		}
	}
	tc.mu.Unlock()
	for _, p := range ps {
		_ = p.cmd.Process.Kill()
	}
	for _, p := range ps {
		<-p.done
	}
}

// cleanup stops what still runs (SIGTERM, then SIGKILL) and shows the
// replica logs of a failed test.
func (tc *testCluster) cleanup() {
	tc.mu.Lock()
	ps := tc.procs
	tc.mu.Unlock()
	for _, p := range ps {
		if !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(15 * time.Second)
	for name, p := range ps {
		select {
		case <-p.done:
		case <-deadline:
			tc.t.Errorf("replica %s did not stop on SIGTERM within 15s; killing it", name)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	if tc.t.Failed() {
		for _, n := range tc.names {
			data, _ := os.ReadFile(tc.logPath(n))
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			tc.t.Logf("---- last lines of %s ----\n%s", n, strings.Join(lines, "\n"))
		}
	}
}

// waitUp waits until name serves its metrics.
func (tc *testCluster) waitUp(name string) {
	tc.t.Helper()
	waitFor(tc.t, 30*time.Second, name+" to serve metrics", func() bool {
		_, err := tc.scrape(name)
		return err == nil
	})
}

// metrics is one scrape of a replica's /metrics.
type metrics map[string]*dto.MetricFamily

var scrapeClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (tc *testCluster) scrape(name string) (metrics, error) {
	resp, err := scrapeClient.Get("http://" + tc.replica(name).MetricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	return metrics(fams), err
}

// value returns the counter or gauge name whose labels include the pairs.
func (m metrics) value(name string, labels ...string) float64 {
	fam := m[name]
	if fam == nil {
		return 0
	}
next:
	for _, s := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range s.GetLabel() {
				found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
			}
			if !found {
				continue next
			}
		}
		if s.Counter != nil {
			return s.Counter.GetValue()
		}
		return s.Gauge.GetValue()
	}
	return 0
}

// metric scrapes one value from a replica; a failed scrape is -1.
func (tc *testCluster) metric(name, metric string, labels ...string) float64 {
	m, err := tc.scrape(name)
	if err != nil {
		return -1
	}
	return m.value(metric, labels...)
}

// client opens a group client with the key of the named client.
func (tc *testCluster) client(keyName string) *client.Client {
	tc.t.Helper()
	key, err := cluster.LoadClientKey(tc.dir, keyName)
	if err != nil {
		tc.t.Fatal(err)
	}
	return tc.clientWithKey(key)
}

func (tc *testCluster) clientWithKey(key []byte) *client.Client {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.New(ctx, client.Config{
		Cluster: tc.c, Group: bft.GroupID(tc.c.Groups[0].ID), Key: key, Timeout: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// logContains reports whether a replica's log holds s.
func (tc *testCluster) logContains(name, s string) bool {
	data, err := os.ReadFile(tc.logPath(name))
	return err == nil && bytes.Contains(data, []byte(s))
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronization
	}
}
