package coord

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md W3: a client sends nonce n only while n < its stated watermark +
// P: with P = 4 and a group that holds every request, four transactions go
// out and the rest wait; none ever meets E2's window abort.
func TestW3WindowBoundsTheUnfinishedNonces(t *testing.T) {
	w := newWorld(t, 2, 30, func(w *world) { w.limits.Window = 4 })
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	w.group(1).hold = true
	var os []*outcome
	for i := range 10 {
		os = append(os, c.start(txn.NewBuilder().Insert([]byte{'a', byte(i)}, nil).Insert([]byte{0x90, byte(i)}, nil), Options{}))
	}
	w.runFor(time.Second)
	require.Len(t, rec.sent, 4)
	st := c.core.Stats()
	require.Equal(t, 6, st.Waiting)
	require.Equal(t, 4, st.Unfinished)
	require.Equal(t, 6.0, counter(t, m, "window_waits"))
	w.group(1).release()
	w.settle()
	for _, o := range os {
		require.NoError(t, o.err)
	}
	require.Len(t, rec.sent, 10)
	for _, s := range rec.sent {
		require.Less(t, s.t.Nonce-s.t.Watermark, uint64(4), "nonce %d sent with watermark %d", s.t.Nonce, s.t.Watermark)
	}
	require.Empty(t, anomalies(m))
}

// txn.md W3, K3: a client that crashed after the votes and before the
// outcome restarts, learns from the groups (a query with no nonce) that it
// holds a pending transaction, finishes it — recorded votes come back
// unchanged and signed (E1) — and proves it; its next nonce follows.
func TestW3RestartFinishesAPendingTransaction(t *testing.T) {
	w := newWorld(t, 2, 31)
	rec := newRecorder(w)
	c := w.newClient(50, observe(rec, nil))
	c.start(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")), Options{})
	w.runUntil("sent", time.Minute, func() bool { return len(rec.sent) == 1 })
	id := rec.sent[0].id
	w.runUntil("both votes", time.Minute, func() bool { return len(w.callsFor(txn.CallTxn, id)) == 2 })
	w.cut[string(c.id)] = true
	c.crash()
	w.runFor(time.Second)
	delete(w.cut, string(c.id))
	require.Empty(t, w.callsFor(txn.CallOutcome, id), "it crashed before the outcome")
	for _, g := range []bft.GroupID{0, 1} {
		r := c.record(g, 0)
		require.NotNil(t, r)
		require.Equal(t, txn.StatePending, r.State)
	}
	c.boot()
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	st := c.core.Stats()
	require.Equal(t, uint64(1), st.NextNonce)
	require.Equal(t, uint64(0), st.Watermark, "the resumed transaction holds the watermark")
	w.settle()
	require.Len(t, w.callsFor(txn.CallProof, id), 2)
	for _, g := range []bft.GroupID{0, 1} {
		r := c.record(g, 0)
		require.Equal(t, txn.StateTerminated, r.State)
		require.Equal(t, txn.Commit, r.Outcome)
		require.False(t, r.Unproven)
	}
	v, _ := w.group(1).userValue(k1)
	require.Equal(t, []byte("b"), v)
	require.Equal(t, uint64(1), c.core.Stats().Watermark)
	res, err := c.do(txn.NewBuilder().Write(k0, []byte("a2")))
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Nonce)
	require.Equal(t, 1, res.Attempts)
}

// txn.md W3, W2: a client that crashed after the outcome and before the
// proof restarts and sends the proof: the commit-voted records it finds
// unproven become proven, so the groups may forget them.
func TestW3RestartProvesAnUnprovenTransaction(t *testing.T) {
	w := newWorld(t, 2, 32)
	rec := newRecorder(w)
	c := w.newClient(50, observe(rec, nil))
	c.start(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")), Options{})
	w.runUntil("sent", time.Minute, func() bool { return len(rec.sent) == 1 })
	id := rec.sent[0].id
	w.runUntil("both outcomes", time.Minute, func() bool { return len(w.callsFor(txn.CallOutcome, id)) == 2 })
	w.cut[string(c.id)] = true
	c.crash()
	w.runFor(time.Second)
	delete(w.cut, string(c.id))
	require.Empty(t, w.callsFor(txn.CallProof, id), "it crashed before the proof")
	for _, g := range []bft.GroupID{0, 1} {
		r := c.record(g, 0)
		require.True(t, r.Unproven)
		require.NotNil(t, r.Txn, "the query names what is left to do")
	}
	c.boot()
	w.settle()
	require.Len(t, w.callsFor(txn.CallProof, id), 2)
	for _, g := range []bft.GroupID{0, 1} {
		require.False(t, c.record(g, 0).Unproven)
	}
	// The next transaction raises the groups' watermark past it: the
	// records are forgotten (W2).
	_, err := c.do(txn.NewBuilder().Read(k0).Read(k1))
	require.NoError(t, err)
	w.settle()
	require.Nil(t, c.record(0, 0))
	require.Nil(t, c.record(1, 0))
}

// txn.md W3: "skips every nonce it may have had in flight": after a crash
// with transactions the groups executed but whose answers were lost, the
// restarted client starts above every nonce any group recorded, so none of
// its new transactions meets "second id".
func TestW3RestartSkipsEveryNonceTheGroupsSaw(t *testing.T) {
	w := newWorld(t, 2, 33)
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	for i := range 3 {
		c.start(txn.NewBuilder().Insert([]byte{'a', byte(i)}, []byte("v")), Options{})
	}
	c.start(txn.NewBuilder().Insert(k1, []byte("v")), Options{})
	w.runUntil("all executed", time.Minute, func() bool { return len(w.callsBy(txn.CallTxn, c.id)) == 4 })
	w.cut[string(c.id)] = true
	c.crash()
	w.runFor(time.Second)
	delete(w.cut, string(c.id))
	c.boot()
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	st := c.core.Stats()
	require.Equal(t, uint64(4), st.NextNonce)
	require.Equal(t, uint64(4), st.Watermark)
	for i := range 4 {
		res, err := c.do(txn.NewBuilder().Insert([]byte(fmt.Sprintf("b%d", i)), []byte("v")))
		require.NoError(t, err)
		require.Equal(t, 1, res.Attempts)
	}
	require.Empty(t, anomalies(m))
}
