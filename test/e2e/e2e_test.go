package e2e

import (
	"math"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/replica"
)

// Metric names the tests read.
const (
	mView           = "augustus_bft_view"
	mExecuted       = "augustus_bft_last_executed_seq"
	mStable         = "augustus_bft_stable_checkpoint_seq"
	mStateTransfers = "augustus_bft_state_transfers_total"
	mRejected       = "augustus_bft_rejected_messages_total"
)

// maxMetric returns the largest value of metric over the named replicas.
func (tc *testCluster) maxMetric(metric string, names ...string) float64 {
	m := math.Inf(-1)
	for _, n := range names {
		m = max(m, tc.metric(n, metric))
	}
	return m
}

// minMetric returns the smallest value of metric over the named replicas.
func (tc *testCluster) minMetric(metric string, names ...string) float64 {
	m := math.Inf(1)
	for _, n := range names {
		m = min(m, tc.metric(n, metric))
	}
	return m
}

func TestE2ERequestsComplete(t *testing.T) {
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	cl := tc.client("client0")
	start := time.Now()
	l := startLoad(cl, "req", 8)
	l.waitAccepted(t, 400, 60*time.Second, "4 replicas")
	l.stop()
	elapsed := time.Since(start)
	n := l.accepted.Load()
	entries := l.checkExactlyOnce(t, cl)
	t.Logf("%d calls accepted in %s (%.0f calls/s, 8 sequential callers, one client); %d log entries read back",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), entries)

	// Every replica executed every batch.
	target := tc.maxMetric(mExecuted, tc.names...)
	waitFor(t, 30*time.Second, "every replica to reach the same executed sequence number", func() bool {
		return tc.minMetric(mExecuted, tc.names...) >= target
	})
	t.Logf("every replica executed through seq %.0f", target)
}

func TestE2EKillPrimary(t *testing.T) {
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	cl := tc.client("client0")
	l := startLoad(cl, "kp", 8)
	l.waitAccepted(t, 100, 60*time.Second, "before the kill")

	primary, survivors := tc.names[0], tc.names[1:] // the primary of view 0
	atKill := l.accepted.Load()
	killed := time.Now()
	tc.kill(primary)

	waitFor(t, 60*time.Second, "a view change on every survivor", func() bool {
		return tc.minMetric(mView, survivors...) > 0
	})
	viewChanged := time.Since(killed)
	l.waitAccepted(t, atKill+200, 60*time.Second, "after the primary died")
	resumed := time.Since(killed)
	l.stop()
	t.Logf("primary %s killed after %d accepted calls; survivors in view ≥ %.0f after %s; 200 more calls accepted %s after the kill",
		primary, atKill, tc.minMetric(mView, survivors...), viewChanged.Round(time.Millisecond), resumed.Round(time.Millisecond))
	entries := l.checkExactlyOnce(t, cl)
	t.Logf("%d calls accepted in all, %d log entries, each accepted token exactly once", l.accepted.Load(), entries)
}

func TestE2EBackupRestartCatchesUp(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	cl := tc.client("client0")
	l := startLoad(cl, "br", 8)
	l.waitAccepted(t, 100, 60*time.Second, "before the kill")

	backup := tc.names[3]
	tc.kill(backup)
	behind := l.accepted.Load()
	l.waitAccepted(t, behind+300, 60*time.Second, "while the backup is down")
	restarted := time.Now()
	tc.start(backup)
	tc.waitUp(backup)
	l.waitAccepted(t, l.accepted.Load()+100, 60*time.Second, "after the restart")
	l.stop()

	others := tc.names[:3]
	target := tc.maxMetric(mExecuted, others...)
	waitFor(t, 60*time.Second, "the restarted backup to catch up", func() bool {
		return tc.metric(backup, mExecuted) >= target
	})
	t.Logf("backup %s was down for %d accepted calls; after restart it reached seq %.0f (the others' last executed) %s after it was started",
		backup, l.accepted.Load()-behind, target, time.Since(restarted).Round(time.Millisecond))
	l.checkExactlyOnce(t, cl)
}

func TestE2EKillAllAndRestartExecutesAcceptedCallsExactlyOnce(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	cl := tc.client("client0")
	l := startLoad(cl, "ka", 16)
	l.waitAccepted(t, 300, 60*time.Second, "before the crash")
	tc.killAll() // calls are in flight: some will never be answered
	l.stop()
	accepted := l.accepted.Load()
	_ = cl.Close()

	restarted := time.Now()
	tc.startAll()
	cl2 := tc.client("client0")
	if _, err := invoke(cl2, replica.LogLen("w0"), 60*time.Second); err != nil {
		t.Fatalf("the group does not answer after the restart: %v", err)
	}
	answered := time.Since(restarted)
	entries := l.checkExactlyOnce(t, cl2)
	t.Logf("all 4 replicas killed with %d calls accepted; the group answered %s after the restart; %d log entries, every accepted call exactly once (%d in flight at the crash are indeterminate)",
		accepted, answered.Round(time.Millisecond), entries, entries-int(accepted))

	l2 := startLoad(cl2, "ka2", 8)
	l2.waitAccepted(t, 100, 60*time.Second, "new calls after the restart")
	l2.stop()
	l2.checkExactlyOnce(t, cl2, l)
}

func TestE2EStateTransferAfterCheckpointsPassed(t *testing.T) {
	skipInShort(t)
	const k, logWindow = 8, 16
	tc := newCluster(t, clusterOptions{checkpointInterval: k, logWindow: logWindow})
	tc.startAll()
	cl := tc.client("client0")
	l := startLoad(cl, "st", 4)
	l.waitAccepted(t, 20, 60*time.Second, "before the kill")

	lagging := tc.names[3]
	executed := tc.metric(lagging, mExecuted)
	tc.kill(lagging)
	others := tc.names[:3]
	// Past two checkpoints and the whole log window: what the lagging
	// replica needs next is garbage-collected everywhere.
	need := executed + 2*k + logWindow
	waitFor(t, 120*time.Second, "the others' stable checkpoint to pass the lagging replica by two checkpoints and L", func() bool {
		return tc.minMetric(mStable, others...) >= need
	})
	stable := tc.minMetric(mStable, others...)
	l.stop()
	target := tc.maxMetric(mExecuted, others...)

	restarted := time.Now()
	tc.start(lagging)
	tc.waitUp(lagging)
	waitFor(t, 60*time.Second, "a state transfer to install on the lagging replica", func() bool {
		return tc.metric(lagging, mStateTransfers, "outcome", "installed") >= 1
	})
	installed := time.Since(restarted)
	waitFor(t, 60*time.Second, "the lagging replica to catch up", func() bool {
		return tc.metric(lagging, mExecuted) >= target
	})
	t.Logf("K=%d L=%d: %s stopped at seq %.0f; the others' stable checkpoint reached %.0f; after restart a state transfer installed in %s (%.0f bytes) and it reached seq %.0f in %s",
		k, logWindow, lagging, executed, stable, installed.Round(time.Millisecond),
		tc.metric(lagging, "augustus_bft_state_transfer_bytes_total"), target, time.Since(restarted).Round(time.Millisecond))
	l.checkExactlyOnce(t, cl)
}
