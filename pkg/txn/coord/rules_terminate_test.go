package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md K3, W2: a multi-group update is terminated with its certificate at
// every involved group and proven (f+1 signed acknowledgements of the other
// groups) to every group that voted commit; the watermark passes it only
// after every group confirmed the proof, so no later transaction of the
// client reaches a group before the proof does.
func TestK3OutcomeAcknowledgedAndProvenBeforeWatermarkAdvances(t *testing.T) {
	w := newWorld(t, 2, 1)
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	w.settle()
	require.Len(t, rec.sent, 1)
	x := rec.sent[0]
	// The outcome went to both groups; the proof to both (both voted
	// commit); each proof carried the other group's acknowledgements.
	require.Len(t, w.callsFor(txn.CallOutcome, x.id), 2)
	proofs := w.callsFor(txn.CallProof, x.id)
	require.Len(t, proofs, 2)
	for _, p := range proofs {
		call, err := txn.DecodeCall(p.payload)
		require.NoError(t, err)
		require.NoError(t, w.keys.VerifyProof(x.t, x.id, txn.Commit, call.Acks, p.g))
	}
	for _, g := range []bft.GroupID{0, 1} {
		r := c.record(g, x.t.Nonce)
		require.NotNil(t, r)
		require.False(t, r.Unproven, "group %d still waits for the proof", g)
	}
	require.Equal(t, uint64(1), c.core.Stats().Watermark)

	// Hold group 1: the next transaction decides (both groups voted) but its
	// outcome cannot be acknowledged at group 1, so the watermark stays at
	// its nonce, and a transaction started meanwhile states that watermark.
	_, err = c.do(txn.NewBuilder().Write(k0, []byte("a2")).Write(k1, []byte("b2")))
	require.NoError(t, err)
	w.settle()
	w.group(1).hold = true
	o := c.start(txn.NewBuilder().Write(k0, []byte("a3")).Write(k1, []byte("b3")), Options{})
	w.runUntil("votes of group 0", time.Minute, func() bool { return len(w.callsBy(txn.CallTxn, c.id)) >= 3 })
	w.runFor(200 * time.Millisecond)
	require.False(t, o.done, "group 1 has not voted")
	require.Equal(t, uint64(2), c.core.Stats().Watermark)
	w.group(1).release()
	w.runUntil("outcome", time.Minute, func() bool { return o.done })
	require.NoError(t, o.err)
	// Decided, but the proof is not confirmed yet: the watermark waits.
	require.Equal(t, uint64(2), c.core.Stats().Watermark)
	third := rec.sent[2]
	w.group(1).hold = true
	w.runFor(200 * time.Millisecond)
	require.Equal(t, uint64(2), c.core.Stats().Watermark, "group 1 has not acknowledged the outcome")
	next := c.start(txn.NewBuilder().Read(k0), Options{})
	w.runUntil("read", time.Minute, func() bool { return next.done })
	require.Equal(t, uint64(2), rec.sent[3].t.Watermark, "a transaction sent while the third is unproven states its nonce")
	w.group(1).release()
	w.settle()
	_, finished := rec.finished[third.id]
	require.True(t, finished)
	require.Equal(t, uint64(4), c.core.Stats().Watermark)
	require.Empty(t, anomalies(m))
}

// txn.md K3, W2, E10: an abort decided by one group's signed abort votes is
// sent with that ABORT certificate to every group; the group that voted
// commit discards its buffered updates and releases its locks, and — having
// voted commit — gets the proof.
func TestK3AbortTerminatesEveryGroupAndProvesTheCommitVoter(t *testing.T) {
	w := newWorld(t, 2, 2)
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	// Group 0 votes commit, group 1 aborts (its comparison fails).
	res, err := c.do(txn.NewBuilder().Write(k0, []byte("new")).Cmp(k1, []byte("not b")))
	require.ErrorIs(t, err, txn.ErrCompareFailed)
	require.Equal(t, bft.GroupID(1), res.Abort.Group)
	require.Equal(t, 1, res.Abort.Op)
	w.settle()
	x := rec.sent[1]
	outs := w.callsFor(txn.CallOutcome, x.id)
	require.Len(t, outs, 2)
	call, err := txn.DecodeCall(outs[0].payload)
	require.NoError(t, err)
	require.Equal(t, txn.Abort, call.Cert.Decision)
	require.Len(t, call.Cert.Parts, 1, "an ABORT certificate is one group's")
	require.Equal(t, bft.GroupID(1), call.Cert.Parts[0].Group)
	require.NoError(t, w.keys.VerifyCertificate(x.t, x.id, call.Cert, 0, false))
	proofs := w.callsFor(txn.CallProof, x.id)
	require.Len(t, proofs, 1, "only group 0 voted commit")
	require.Equal(t, bft.GroupID(0), proofs[0].g)
	v, _ := w.group(0).userValue(k0)
	require.Equal(t, []byte("a"), v, "the buffered write was discarded")
	// The locks are gone: a write of k0 commits at once.
	res, err = c.do(txn.NewBuilder().Write(k0, []byte("c")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Empty(t, anomalies(m))
}

// txn.md E10 (client side): a COMMIT certificate carries exactly f+1 signed
// commit votes of every declared group, which verify.
func TestE10CommitCertificateHasFPlusOneSignedVotesOfEveryGroup(t *testing.T) {
	w := newWorld(t, 2, 3)
	rec := newRecorder(w)
	c := w.newClient(50, observe(rec, nil))
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	w.settle()
	x := rec.sent[0]
	for _, o := range w.callsFor(txn.CallOutcome, x.id) {
		call, err := txn.DecodeCall(o.payload)
		require.NoError(t, err)
		require.Equal(t, txn.Commit, call.Cert.Decision)
		require.Len(t, call.Cert.Parts, 2)
		for _, p := range call.Cert.Parts {
			require.Len(t, p.Sigs, 2, "exactly f+1")
		}
		require.NoError(t, w.keys.VerifyCertificate(x.t, x.id, call.Cert, 0, false))
	}
}

// txn.md K2, E10: the signatures the group client returns are trimmed to
// exactly f+1 distinct replicas in increasing order (Validate refuses more),
// and fewer than f+1 usable ones make no certificate part.
func TestK2CertificatePartTakesExactlyFPlusOneDistinctSignatures(t *testing.T) {
	w := newWorld(t, 2, 4)
	c := w.newClient(50, nil)
	sig := func(r bft.ReplicaID, b byte) client.Signed {
		s := make([]byte, txn.SignatureSize)
		s[0] = b
		return client.Signed{Replica: r, Signature: s}
	}
	gs := c.core.groupSigs(0, []client.Signed{sig(3, 3), sig(1, 1), sig(1, 9), sig(0, 0), sig(2, 2)})
	require.NotNil(t, gs)
	require.Len(t, gs.Sigs, 2, "exactly f+1")
	require.Equal(t, []bft.ReplicaID{0, 1}, []bft.ReplicaID{gs.Sigs[0].Replica, gs.Sigs[1].Replica})
	require.Equal(t, byte(1), gs.Sigs[1].Sig[0])
	require.Nil(t, c.core.groupSigs(0, []client.Signed{sig(1, 1), sig(1, 2)}), "one replica twice is not f+1")
	require.Nil(t, c.core.groupSigs(0, []client.Signed{sig(1, 1), {Replica: 2, Signature: []byte{1}}}), "a short signature")
}

// txn.md E8 (client side): the owner terminates a multi-group read-only
// transaction with its own release, without signed votes or a certificate;
// the read locks go with it.
func TestE8ReadOnlyMultiGroupIsReleasedByItsOwner(t *testing.T) {
	w := newWorld(t, 2, 5)
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	res, err := c.do(txn.NewBuilder().Read(k0).Read(k1))
	require.NoError(t, err)
	require.Equal(t, txn.KindMultiRead, res.Kind)
	require.Equal(t, []byte("a"), res.Ops[0].Value)
	require.Equal(t, []byte("b"), res.Ops[1].Value)
	w.settle()
	x := rec.sent[1]
	rel := w.callsFor(txn.CallRelease, x.id)
	require.Len(t, rel, 2)
	for _, r := range rel {
		call, err := txn.DecodeCall(r.payload)
		require.NoError(t, err)
		require.Equal(t, txn.Commit, call.Decision)
		require.Equal(t, c.id, r.client, "the owner's own release")
	}
	require.Empty(t, w.callsFor(txn.CallOutcome, x.id))
	require.Empty(t, w.callsFor(txn.CallProof, x.id))
	// The read locks are gone at both groups.
	res, err = c.do(txn.NewBuilder().Write(k0, []byte("a2")).Write(k1, []byte("b2")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Empty(t, anomalies(m))
}

// txn.md E8: a read-only transaction one group aborts is released with the
// abort everywhere, so the group that voted commit drops its read locks.
func TestE8ReadOnlyAbortIsReleasedEverywhere(t *testing.T) {
	w := newWorld(t, 2, 6)
	rec := newRecorder(w)
	c := w.newClient(50, func(cfg *Config) {
		observe(rec, nil)(cfg)
		cfg.Tuning.RecoveryGrace = time.Hour // leave the blocker alone
		cfg.Tuning.MaxRetries = -1
	})
	byz := w.newRaw(60)
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	// A pending update of another owner holds k1 at group 1.
	byz.abandon(txn.NewBuilder().Write(k1, []byte("x")).Write(k0b, []byte("y")), 0)
	_, err = c.doWith(txn.NewBuilder().Read(k0).Read(k1), Options{MaxRetries: -1})
	require.ErrorIs(t, err, txn.ErrConflict)
	w.settleOwn()
	x := rec.sent[len(rec.sent)-1]
	rel := w.callsFor(txn.CallRelease, x.id)
	require.Len(t, rel, 2)
	call, err := txn.DecodeCall(rel[0].payload)
	require.NoError(t, err)
	require.Equal(t, txn.Abort, call.Decision)
	// Group 0's read lock on k0 is gone.
	res, err := c.do(txn.NewBuilder().Write(k0, []byte("a2")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
}
