package replica

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// testGroup is one group of in-process replicas on loopback: real TLS,
// gRPC, pebble; short timeouts.
type testGroup struct {
	t         testing.TB
	dir       string
	cluster   *cluster.Cluster
	keys      []ed25519.PrivateKey
	running   []*runningReplica
	configure func(*bft.Config)
	app       func() Application
	// metrics survive restarts of a replica (one registry-free set each).
	metrics []*Metrics
}

type runningReplica struct {
	r      *Replica
	cancel context.CancelFunc
	done   chan error
}

func newTestGroup(t *testing.T, f int, configure func(*bft.Config)) *testGroup {
	return newTestGroupWith(t, f, configure, nil)
}

// newTestGroupB is a group with production timeouts, for benchmarks.
func newTestGroupB(b *testing.B) *testGroup {
	return newTestGroupWith(b, 1, func(c *bft.Config) {
		d := bft.DefaultConfig(c.ID, c.F)
		c.CheckpointInterval, c.LogWindow = d.CheckpointInterval, d.LogWindow
		c.RequestTimeout, c.ViewChangeTimeout, c.StatusInterval = d.RequestTimeout, d.ViewChangeTimeout, d.StatusInterval
	}, nil)
}

func newTestGroupWith(t testing.TB, f int, configure func(*bft.Config), app func() Application) *testGroup {
	t.Helper()
	dir := t.TempDir()
	c, err := cluster.Generate(cluster.GenerateOptions{Dir: dir, ClusterID: "test", Groups: 1, F: f, BasePort: 20000, Clients: 2})
	if err != nil {
		t.Fatal(err)
	}
	g := &testGroup{t: t, dir: dir, cluster: c, configure: configure, app: app}
	// Bind every address to a free loopback port.
	var reserved []net.Listener
	for i := range c.Groups[0].Replicas {
		rep := &c.Groups[0].Replicas[i]
		rep.PeerAddr, rep.ClientAddr, rep.MetricsAddr = freeAddr(t, &reserved), freeAddr(t, &reserved), ""
		k, err := cluster.LoadReplicaKey(dir, rep.Name)
		if err != nil {
			t.Fatal(err)
		}
		g.keys = append(g.keys, k)
	}
	for _, l := range reserved {
		_ = l.Close()
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	g.running = make([]*runningReplica, len(c.Groups[0].Replicas))
	g.metrics = make([]*Metrics, len(g.running))
	for i := range g.running {
		g.start(i)
	}
	return g
}

// freeAddr reserves a free loopback port. The listeners stay open in
// reserved until every address is chosen (the caller closes them), so the
// kernel cannot hand one port out twice.
func freeAddr(t testing.TB, reserved *[]net.Listener) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	*reserved = append(*reserved, l)
	return l.Addr().String()
}

func testCore(configure func(*bft.Config)) func(*bft.Config) {
	return func(c *bft.Config) {
		c.CheckpointInterval, c.LogWindow = 8, 16
		c.RequestTimeout, c.ViewChangeTimeout, c.StatusInterval = 100, 100, 10
		if configure != nil {
			configure(c)
		}
	}
}

func (g *testGroup) start(i int) {
	rep := g.cluster.Groups[0].Replicas[i]
	level := slog.LevelWarn
	if os.Getenv("REPLICA_DEBUG") != "" {
		level = slog.LevelDebug
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	}
	var app Application
	if g.app != nil {
		app = g.app()
	}
	r, err := New(Config{
		Cluster: g.cluster, Name: rep.Name, Key: g.keys[i], DataDir: filepath.Join(g.dir, "data", rep.Name),
		ConfigureCore: testCore(g.configure), App: app,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &runningReplica{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() { rr.done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-rr.done:
		g.t.Fatalf("replica %s did not start: %v", rep.Name, err)
	}
	g.running[i] = rr
	g.metrics[i] = r.metrics
	g.t.Cleanup(func() { g.stop(i) })
}

// executed reads replica i's last executed seq from its metrics (safe while
// it runs; the last value after it stopped).
func (g *testGroup) executed(i int) uint64 {
	return uint64(testutil.ToFloat64(g.metrics[i].LastExecuted))
}

func (g *testGroup) view(i int) uint64 { return uint64(testutil.ToFloat64(g.metrics[i].View)) }

// waitFor polls cond until it holds or the deadline passes.
func (g *testGroup) waitFor(what string, d time.Duration, cond func() bool) {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			g.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *testGroup) stop(i int) {
	rr := g.running[i]
	if rr == nil {
		return
	}
	g.running[i] = nil
	rr.cancel()
	if err := <-rr.done; err != nil {
		g.t.Errorf("replica %d: %v", i, err)
	}
}

func (g *testGroup) client(i int) *client.Client { return g.clientWith(i, nil) }

// clientWith is client with a configuration adjusted by configure.
func (g *testGroup) clientWith(i int, configure func(*client.Config)) *client.Client {
	g.t.Helper()
	k, err := cluster.LoadClientKey(g.dir, cluster.ClientName(i))
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := client.Config{Cluster: g.cluster, Group: 0, Key: k, Timeout: 500 * time.Millisecond}
	if configure != nil {
		configure(&cfg)
	}
	c, err := client.New(ctx, cfg)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { _ = c.Close() })
	return c
}

// invokeAll runs n calls from w goroutines and fails on any error.
func invokeAll(t *testing.T, c *client.Client, n, w int, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	per := n / w
	for i := 0; i < w; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < per; j++ {
				if _, err := c.Invoke(ctx, []byte(fmt.Sprintf("call %d.%d", i, j))); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("invoke: %v", err)
	}
}
