package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md K4 (paper §3.4, a.2): a transaction its owner abandoned after the
// votes stays pending; a client whose transaction conflicts with it gets
// f+1 abort replies naming it, waits the grace period, re-sends it
// byte-identical to the naming group (a copy answered from records, T3),
// relays it with that group's signed votes to the other group, and
// terminates it with a COMMIT certificate: the abandoned writes apply in
// both groups (X2), and the blocked transaction then commits.
func TestK4RecoversAnAbandonedTransaction(t *testing.T) {
	w := newWorld(t, 2, 10)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(newRecorder(w), m))
	byz := w.newRaw(60)
	u, uid := byz.abandon(txn.NewBuilder().Insert(k0, []byte("u0")).Insert(k1, []byte("u1")), 0)
	start := w.now
	res, err := c.do(txn.NewBuilder().Read(k0).Insert(k0b, []byte("mine")))
	require.NoError(t, err)
	require.Greater(t, res.Attempts, 1)
	require.Equal(t, []byte("u0"), res.Ops[0].Value, "the recovered write is visible")
	v, ok := w.group(1).userValue(k1)
	require.True(t, ok, "committed at the other group too")
	require.Equal(t, []byte("u1"), v)
	w.settle()
	require.Equal(t, 1.0, counter(t, m, "recoveries", "committed"))

	copies := w.callsFor(txn.CallTxn, uid)
	var mine []callRec
	for _, cr := range copies {
		if cr.client == c.id {
			mine = append(mine, cr)
		}
	}
	require.Len(t, mine, 2, "one copy to the naming group, one relay to the other")
	require.GreaterOrEqual(t, mine[0].at.Sub(start), 50*time.Millisecond, "the grace period passed first")
	first, err := txn.DecodeCall(mine[0].payload)
	require.NoError(t, err)
	require.Nil(t, first.Relay, "the naming group gets the transaction itself")
	require.Equal(t, bft.GroupID(0), mine[0].g)
	require.Equal(t, u.Encode(), first.Txn, "byte-identical (T2)")
	relay, err := txn.DecodeCall(mine[1].payload)
	require.NoError(t, err)
	require.NotNil(t, relay.Relay, "the other group gets a relay")
	require.Equal(t, bft.GroupID(1), mine[1].g)
	require.Equal(t, bft.GroupID(0), relay.Relay.Votes.Group)
	require.NoError(t, w.keys.VerifyVotes(uid, txn.Commit, &relay.Relay.Votes))
	outs := w.callsFor(txn.CallOutcome, uid)
	require.Len(t, outs, 2)
	require.Empty(t, w.callsFor(txn.CallProof, uid), "the proof is the owner's business (W2)")
}

// txn.md K4: a recovery finds an abort at one group (the relay is answered
// with its recorded vote) and terminates the transaction with that group's
// ABORT certificate: the pending group discards the abandoned writes.
func TestK4RecoveryAbortsWhatOneGroupAborted(t *testing.T) {
	w := newWorld(t, 2, 11)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(nil, m))
	byz := w.newRaw(60)
	// Group 1 aborts (k1 does not exist), group 0 holds the insert pending.
	_, uid := byz.abandon(txn.NewBuilder().Insert(k0, []byte("u0")).Write(k1, []byte("u1")), 0)
	res, err := c.do(txn.NewBuilder().Read(k0))
	require.NoError(t, err)
	require.False(t, res.Ops[0].Present, "the abandoned insert was discarded")
	require.Equal(t, 1.0, counter(t, m, "recoveries", "aborted"))
	outs := w.callsFor(txn.CallOutcome, uid)
	require.NotEmpty(t, outs)
	call, err := txn.DecodeCall(outs[0].payload)
	require.NoError(t, err)
	require.Equal(t, txn.Abort, call.Cert.Decision)
	require.Equal(t, bft.GroupID(1), call.Cert.Parts[0].Group)
}

// txn.md K4, E8: an abandoned multi-group read-only transaction holds read
// locks; a recoverer gets signed votes (re-delivery and relay are signed)
// and releases it with a COMMIT certificate — a bare release would be
// refused, as it is not the owner's.
func TestK4RecoversAnAbandonedReadOnlyTransaction(t *testing.T) {
	w := newWorld(t, 2, 12)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(nil, m))
	byz := w.newRaw(60)
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	w.settle()
	_, uid := byz.abandon(txn.NewBuilder().Read(k0).Read(k1), 0)
	res, err := c.do(txn.NewBuilder().Write(k1, []byte("b2")))
	require.NoError(t, err)
	require.Greater(t, res.Attempts, 1)
	require.Equal(t, 1.0, counter(t, m, "recoveries", "committed"))
	require.Empty(t, w.callsFor(txn.CallRelease, uid))
	outs := w.callsFor(txn.CallOutcome, uid)
	require.Len(t, outs, 2)
	call, err := txn.DecodeCall(outs[0].payload)
	require.NoError(t, err)
	require.Equal(t, txn.Commit, call.Cert.Decision)
}

// txn.md K4: "a refused: no record answer means the blocker is gone" — the
// owner finished it and its watermark passed it before the grace period
// ended; the recoverer stops.
func TestK4NoRecordMeansTheBlockerIsGone(t *testing.T) {
	w := newWorld(t, 2, 13)
	m := NewMetrics(nil)
	c := w.newClient(50, func(cfg *Config) {
		observe(nil, m)(cfg)
		cfg.Tuning.RecoveryGrace = 500 * time.Millisecond
	})
	slow := w.newRaw(60) // a slow owner, finishing by hand
	u, enc, uid := slow.build(txn.NewBuilder().Insert(k0, []byte("u0")).Insert(k1, []byte("u1")), 0, 0)
	r0 := slow.raw(0, txn.NewTxnCall(enc, nil))
	r1 := slow.raw(1, txn.NewTxnCall(enc, nil))
	o := c.start(txn.NewBuilder().Read(k0), Options{})
	w.runUntil("the conflict", time.Minute, func() bool { return len(w.callsBy(txn.CallTxn, c.id)) >= 1 })
	w.runFor(20 * time.Millisecond)
	// The owner terminates u, proves it, and raises its watermark past it.
	cert := txn.Certificate{Decision: txn.Commit, Parts: []txn.GroupSigs{slow.sigsOf(0, r0), slow.sigsOf(1, r1)}}
	a0 := slow.raw(0, txn.NewOutcomeCall(enc, nil, cert))
	a1 := slow.raw(1, txn.NewOutcomeCall(enc, nil, cert))
	require.Equal(t, txn.ResultProofAck, slow.rawResult(0, txn.NewProofCall(enc, nil, txn.Commit, []txn.GroupSigs{slow.sigsOf(1, a1)})).Kind)
	require.Equal(t, txn.ResultProofAck, slow.rawResult(1, txn.NewProofCall(enc, nil, txn.Commit, []txn.GroupSigs{slow.sigsOf(0, a0)})).Kind)
	_, enc2, _ := slow.build(txn.NewBuilder().Read(k0b), 1, 1)
	require.Equal(t, txn.ResultVote, slow.rawResult(0, txn.NewTxnCall(enc2, nil)).Kind)
	require.Nil(t, slow.record(0, u.Nonce), "group 0 forgot u")
	w.runUntil("outcome", time.Minute, func() bool { return o.done })
	require.NoError(t, o.err)
	w.settle()
	require.Equal(t, 1.0, counter(t, m, "recoveries", "gone"))
	require.Empty(t, w.callsFor(txn.CallOutcome, uid)[2:], "the recoverer terminated nothing")
}

// txn.md K4: many clients may recover one transaction at once; they all
// reach the same outcome (E10) and all their transactions commit.
func TestK4ConcurrentRecoverersAgree(t *testing.T) {
	w := newWorld(t, 2, 14)
	m := NewMetrics(nil)
	var cs []*wclient
	for i := range 4 {
		cs = append(cs, w.newClient(byte(50+i), observe(nil, m)))
	}
	byz := w.newRaw(60)
	_, uid := byz.abandon(txn.NewBuilder().Insert(k0, []byte("u0")).Insert(k1, []byte("u1")), 0)
	var os []*outcome
	for i, c := range cs {
		os = append(os, c.start(txn.NewBuilder().Read(k0).Insert([]byte{'b', byte(i)}, []byte("v")), Options{}))
	}
	w.runUntil("all outcomes", time.Minute, func() bool {
		for _, o := range os {
			if !o.done {
				return false
			}
		}
		return true
	})
	for _, o := range os {
		require.NoError(t, o.err)
		require.Equal(t, []byte("u0"), o.res.Ops[0].Value)
	}
	w.settle()
	require.Equal(t, 0.0, counter(t, m, "recoveries", "aborted"))
	require.GreaterOrEqual(t, counter(t, m, "recoveries", "committed"), 1.0)
	for _, o := range w.callsFor(txn.CallOutcome, uid) {
		call, err := txn.DecodeCall(o.payload)
		require.NoError(t, err)
		require.Equal(t, txn.Commit, call.Cert.Decision)
	}
	require.Empty(t, anomalies(m))
}

// txn.md K4: the owner's own pending transactions are never recovered by
// itself (its run terminates them; a recovery would only race it).
func TestK4OwnTransactionsAreNotRecovered(t *testing.T) {
	w := newWorld(t, 2, 15)
	m := NewMetrics(nil)
	c := w.newClient(50, func(cfg *Config) {
		observe(nil, m)(cfg)
		cfg.Tuning.ReportAtDecision = true // its next transaction meets its own locks
	})
	var os []*outcome
	for range 6 {
		os = append(os, c.start(txn.NewBuilder().Read(k0).Read(k1).Insert(k0b, nil).Delete(k0b), Options{}))
	}
	w.settle()
	for _, o := range os {
		require.True(t, o.done)
	}
	require.Equal(t, 0.0, counter(t, m, "recoveries", "committed")+counter(t, m, "recoveries", "aborted")+counter(t, m, "recoveries", "gone"))
}
