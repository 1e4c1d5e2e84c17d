package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

func TestGroupOrdersRequestsEndToEnd(t *testing.T) {
	g := newTestGroup(t, 1, nil)
	c := g.client(0)
	invokeAll(t, c, 200, 8, 30*time.Second)
	for i := range g.running {
		if g.executed(i) == 0 {
			t.Errorf("replica %d executed nothing", i)
		}
	}
}

// load runs workers that each invoke unique calls until stop is closed and
// returns the calls that were accepted (each must have executed once).
func load(t *testing.T, c *client.Client, workers int, stop <-chan struct{}) func() []string {
	var mu sync.Mutex
	var accepted []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				call := fmt.Sprintf("w%d-%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				res, err := c.Invoke(ctx, []byte(call))
				cancel()
				if err != nil {
					select {
					case <-stop:
						return
					default:
					}
					t.Errorf("invoke %s: %v", call, err)
					return
				}
				if n := binary.BigEndian.Uint64(res); n != 1 {
					t.Errorf("call %s executed %d times", call, n)
				}
				mu.Lock()
				accepted = append(accepted, call)
				mu.Unlock()
			}
		}(w)
	}
	return func() []string {
		wg.Wait()
		return accepted
	}
}

func countAppGroup(t *testing.T, configure func(*bft.Config)) *testGroup {
	return newTestGroupWith(t, 1, configure, func() Application { return countApp{} })
}

// A backup that crashes and restarts recovers from its store (P3) and
// catches up with the others (G3).
func TestBackupRestartCatchesUp(t *testing.T) {
	g := countAppGroup(t, nil)
	c := g.client(0)
	stop := make(chan struct{})
	wait := load(t, c, 4, stop)
	g.waitFor("progress", 20*time.Second, func() bool { return g.executed(0) >= 5 })
	g.stop(3)
	before := g.executed(0)
	g.waitFor("progress without r3", 20*time.Second, func() bool { return g.executed(0) >= before+10 })
	g.start(3)
	g.waitFor("r3 to catch up", 30*time.Second, func() bool { return g.executed(3) >= g.executed(0) })
	close(stop)
	t.Logf("accepted %d calls; r3 executed up to %d", len(wait()), g.executed(3))
}

// When the primary crashes the backups' timers expire, they change view
// (V1–V5) and the clients' retransmissions complete in the new view (C4).
func TestPrimaryCrashChangesView(t *testing.T) {
	g := countAppGroup(t, nil)
	c := g.client(0)
	stop := make(chan struct{})
	wait := load(t, c, 4, stop)
	g.waitFor("progress", 20*time.Second, func() bool { return g.executed(1) >= 5 })
	g.stop(0)
	before := g.executed(1)
	g.waitFor("a new view", 30*time.Second, func() bool { return g.view(1) > 0 && g.view(2) > 0 })
	g.waitFor("progress in the new view", 30*time.Second, func() bool { return g.executed(1) >= before+10 })
	close(stop)
	t.Logf("accepted %d calls; view %d", len(wait()), g.view(1))
}

// A replica kept down past two checkpoints finds the log it needs garbage
// collected and catches up by state transfer (G3).
func TestReplicaDownPastTwoCheckpointsCatchesUpByStateTransfer(t *testing.T) {
	g := countAppGroup(t, nil)
	c := g.client(0)
	g.stop(3)
	invokeAll(t, c, 60, 1, 60*time.Second) // 60 batches: K=8, L=16
	g.start(3)
	g.waitFor("r3 to catch up", 30*time.Second, func() bool { return g.executed(3) >= g.executed(0) })
	if n := testutil.ToFloat64(g.metrics[3].StateTransfers.WithLabelValues("installed")); n < 1 {
		t.Fatalf("r3 caught up without a state transfer (%v)", n)
	}
	invokeAll(t, c, 10, 1, 30*time.Second)
}

// A peer that serves corrupted state is detected by the digest check and
// the replica takes the state from another peer (G3).
func TestStateTransferSkipsPeerServingBadState(t *testing.T) {
	g := countAppGroup(t, nil)
	// r3 asks r0 first: make r0 serve corrupted chunks.
	g.running[0].r.corruptChunk = func(c *transportpb.StateChunk) {
		if len(c.Data) > 40 {
			c.Data[len(c.Data)-1] ^= 0xff
		}
	}
	c := g.client(0)
	g.stop(3)
	invokeAll(t, c, 60, 1, 60*time.Second)
	g.start(3)
	g.waitFor("r3 to catch up", 30*time.Second, func() bool { return g.executed(3) >= g.executed(1) })
	if n := testutil.ToFloat64(g.metrics[3].StateTransfers.WithLabelValues("failed")); n < 1 {
		t.Fatalf("no failed transfer recorded: r0's bad state was not tried or not detected")
	}
	if n := testutil.ToFloat64(g.metrics[3].StateTransfers.WithLabelValues("installed")); n < 1 {
		t.Fatalf("no state transfer installed")
	}
}

// Every replica crashes under load and restarts: every call a client saw
// accepted executed exactly once (the count app returns 1 only on the first
// execution, and a re-executed call would return 2 when called again), and
// the group serves new requests.
func TestWholeGroupRestartKeepsEveryAcceptedCallExactlyOnce(t *testing.T) {
	g := countAppGroup(t, nil)
	c := g.client(0)
	stop := make(chan struct{})
	wait := load(t, c, 4, stop)
	g.waitFor("progress", 20*time.Second, func() bool { return g.executed(0) >= 20 })
	for i := range g.running {
		g.stop(i)
	}
	close(stop)
	_ = c.Close() // calls in flight end now; they were not accepted
	accepted := wait()
	for i := range g.running {
		g.start(i)
	}
	c2 := g.client(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	for i, call := range accepted {
		// Executing it again must count 2: it executed exactly once before.
		res, err := c2.Invoke(ctx, []byte(call))
		if i == 0 {
			t.Logf("first call after the restart took %s (views %d %d %d %d)", time.Since(start), g.view(0), g.view(1), g.view(2), g.view(3))
		}
		if err != nil {
			t.Fatalf("after restart: %v", err)
		}
		if n := binary.BigEndian.Uint64(res); n != 2 {
			t.Fatalf("call %s: count %d after re-invoking, want 2 (executed %d times before)", call, n, n-1)
		}
	}
	t.Logf("%d accepted calls verified after restarting every replica", len(accepted))
}

// DESIGN.md §3.2: a call the application's Validate rejects gets an error
// reply, never silence: it is ordered and executes as a rejection of that
// call alone, and the client fails it with the reason (f+1 matching replies)
// long before its retransmission timeout; the group goes on serving valid
// calls.
func TestInvalidCallGetsRejectionNotSilence(t *testing.T) {
	g := countAppGroup(t, nil)
	const timeout = 5 * time.Second
	c := g.clientWith(0, func(cfg *client.Config) { cfg.Timeout = timeout })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Invoke(ctx, nil) // countApp refuses empty calls
	var rej *client.RejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, "empty call") {
		t.Fatalf("got %v, want a rejection naming the empty call", err)
	}
	if !rej.Call {
		t.Fatalf("got a rejection of the whole envelope (%v), want one of the call", err)
	}
	if d := time.Since(start); d >= timeout {
		t.Fatalf("rejection took %v: the client waited for its %v timeout", d, timeout)
	}
	if _, err := c.Invoke(ctx, []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// Issue 13: a state transfer whose stream breaks continues from another
// peer after the last chunk received (resume token) instead of starting
// over, and installs the certified state (G3).
func TestStateTransferResumesAfterABrokenStream(t *testing.T) {
	defer func(old uint32) { transferChunkBytes = old }(transferChunkBytes)
	transferChunkBytes = 128 // many chunks
	g := countAppGroup(t, nil)
	for i := 0; i < 3; i++ {
		g.running[i].r.breakStateAfter = 2
	}
	c := g.client(0)
	g.stop(3)
	invokeAll(t, c, 60, 1, 60*time.Second)
	g.start(3)
	g.waitFor("r3 to catch up", 30*time.Second, func() bool { return g.executed(3) >= g.executed(1) })
	if n := testutil.ToFloat64(g.metrics[3].StateTransferResumes); n < 1 {
		t.Fatalf("no resumed stream recorded")
	}
	if n := testutil.ToFloat64(g.metrics[3].StateTransfers.WithLabelValues("installed")); n < 1 {
		t.Fatalf("no state transfer installed")
	}
}

// Issue 13: the replica exports the store's metrics (augustus_storage_*)
// on its registry, beside augustus_bft_* and augustus_transport_*.
func TestReplicaRegistersStorageMetrics(t *testing.T) {
	g := countAppGroup(t, nil)
	reg := prometheus.NewRegistry()
	rep := g.cluster.Groups[0].Replicas[0]
	r, err := New(Config{Cluster: g.cluster, Name: rep.Name, Key: g.keys[0], DataDir: t.TempDir(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer r.engine.Close()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]bool{}
	for _, f := range families {
		for _, p := range []string{"augustus_storage_", "augustus_bft_", "augustus_transport_"} {
			if strings.HasPrefix(f.GetName(), p) {
				prefixes[p] = true
			}
		}
	}
	if !prefixes["augustus_storage_"] || !prefixes["augustus_bft_"] || !prefixes["augustus_transport_"] {
		t.Fatalf("metric families by prefix: %v", prefixes)
	}
}
