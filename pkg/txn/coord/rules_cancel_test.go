package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md K5 ("every blocking call takes a context and returns its error
// when it ends"), K3: a caller that goes away mid-flight gets ErrCanceled at
// once, and the transaction it sent still terminates everywhere — its
// votes are final and its locks must go — and is proven.
func TestCancelledCallerLeavesNothingPending(t *testing.T) {
	w := newWorld(t, 2, 40)
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	w.group(1).hold = true
	o := c.start(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")), Options{})
	w.runUntil("group 0 voted", time.Minute, func() bool { return len(w.callsBy(txn.CallTxn, c.id)) == 1 })
	c.core.Cancel(o.h)
	require.True(t, o.done)
	require.ErrorIs(t, o.err, ErrCanceled)
	require.Equal(t, 1.0, counter(t, m, "transactions", "multi_update", "canceled"))
	w.group(1).release()
	w.settle()
	id := rec.sent[0].id
	require.Equal(t, txn.Commit, rec.decided[id], "both groups voted commit: it commits")
	require.Len(t, w.callsFor(txn.CallOutcome, id), 2)
	require.Len(t, w.callsFor(txn.CallProof, id), 2)
	for _, g := range []bft.GroupID{0, 1} {
		r := c.record(g, 0)
		require.Equal(t, txn.StateTerminated, r.State)
		require.False(t, r.Unproven)
	}
	require.Equal(t, uint64(1), c.core.Stats().Watermark)
	// No lock stayed behind.
	res, err := c.do(txn.NewBuilder().Write(k0, []byte("a2")).Write(k1, []byte("b2")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
}

// A cancelled caller's transaction starts no retry: a cancel during the
// back-off after a conflict ends it there.
func TestCancelDuringBackoffStartsNoRetry(t *testing.T) {
	w := newWorld(t, 2, 41)
	rec := newRecorder(w)
	c := w.newClient(50, func(cfg *Config) {
		observe(rec, nil)(cfg)
		cfg.Tuning.RecoveryGrace = time.Hour
		cfg.Tuning.BackoffBase, cfg.Tuning.BackoffMax = time.Second, time.Second
	})
	byz := w.newRaw(60)
	byz.abandon(txn.NewBuilder().Insert(k0, []byte("x")).Insert(k1, []byte("y")), 0)
	o := c.start(txn.NewBuilder().Insert(k0, []byte("mine")), Options{})
	w.runUntil("first attempt aborted", time.Minute, func() bool { return len(rec.decided) == 1 })
	c.core.Cancel(o.h)
	require.ErrorIs(t, o.err, ErrCanceled)
	w.runFor(10 * time.Second)
	require.Len(t, rec.sent, 1)
	require.Equal(t, 0, c.core.Stats().Requests)
}

// A cancelled caller waiting for a nonce (W3) leaves the queue: it never
// sends anything.
func TestCancelWhileWaitingForANonce(t *testing.T) {
	w := newWorld(t, 2, 42, func(w *world) { w.limits.Window = 1 })
	rec := newRecorder(w)
	c := w.newClient(50, observe(rec, nil))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	w.group(1).hold = true
	first := c.start(txn.NewBuilder().Insert(k0, nil).Insert(k1, nil), Options{})
	second := c.start(txn.NewBuilder().Insert(k0b, nil), Options{})
	w.runFor(100 * time.Millisecond)
	require.Equal(t, 1, c.core.Stats().Waiting)
	c.core.Cancel(second.h)
	require.ErrorIs(t, second.err, ErrCanceled)
	require.Equal(t, 0, c.core.Stats().Waiting)
	w.group(1).release()
	w.settle()
	require.NoError(t, first.err)
	require.Len(t, rec.sent, 1)
	c.core.Cancel(first.h) // after completion: nothing happens
}
