package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md E1: a recorded transaction gets its recorded vote and results again,
// unchanged; nothing is re-executed — not for the owner, not for another
// client re-sending it byte-identically (T2, K4).
func TestRuleE1RedeliveryReturnsTheRecordedVoteUnchanged(t *testing.T) {
	w := newWorld(t, 2, 3)
	c, other := w.client(1), w.client(2)
	g := w.groups[0]
	seed(t, w, c, "a", "1")
	ins := c.build(txn.NewBuilder().Insert(k("b"), []byte("2")).Read(k("a")))
	first := g.mustCall(c.id, ins.call())
	requireVote(t, first, txn.Commit, txn.ReasonNone)
	again := g.mustCall(c.id, ins.call())
	requireVote(t, again, txn.Commit, txn.ReasonNone, "not re-executed: a second insert would fail")
	require.Equal(t, first.Reads, again.Reads)
	require.Equal(t, first, g.mustCall(other.id, ins.call()), "a copy from another client gets the record")

	// An abort is final too, even once its cause is gone.
	holder := pend(t, w, c, txn.NewBuilder().Write(k("a"), []byte("x")))
	loser := c.build(txn.NewBuilder().Write(k("a"), []byte("y")))
	requireConflictWith(t, g.mustCall(c.id, loser.call()), holder)
	c.finish(holder, w.abortCert(holder, 1))
	requireConflictWith(t, g.mustCall(c.id, loser.call()), holder)
	v, _ := g.get(k("a"))
	require.Equal(t, []byte("1"), v)
}

// txn.md E7: a single-group transaction's commit vote is its outcome: the
// updates apply in the same execution, the locks go at once, no signature.
func TestRuleE7SingleGroupFastPath(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")))
	raw := g.exec(host.Call{Client: c.id, Payload: x.call()})[0]
	require.Nil(t, g.engine().SignBytes(raw), "no signature")
	res, err := txn.DecodeResult(raw)
	require.NoError(t, err)
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	v, ok := g.get(k("a"))
	require.True(t, ok)
	require.Equal(t, []byte("1"), v)
	require.Zero(t, g.engine().locks.Len())
	require.Zero(t, g.engine().pending)
}

// txn.md E8: a multi-group read-only transaction votes unsigned and holds its
// read locks until the owner releases it; its recorded vote is signed on
// re-delivery and on a relay, so a recovering client can build a
// certificate.
func TestRuleE8ReadOnlyVotesUnsignedAndHoldsReadLocksUntilReleased(t *testing.T) {
	w := newWorld(t, 2, 2)
	c, other := w.client(1), w.client(2)
	seed(t, w, c, "a", "1")
	g := w.groups[0]
	x := c.build(txn.NewBuilder().Read(k("a")).Read(highKey))
	for gid, res := range c.sendAll(x) {
		requireVote(t, res, txn.Commit, txn.ReasonNone)
		require.False(t, res.Signed, "group %d: first delivery of a read-only vote is unsigned", gid)
	}
	requireConflictWith(t, single(w, other, txn.NewBuilder().Write(k("a"), []byte("2"))), x)
	require.True(t, g.mustCall(other.id, x.call()).Signed, "re-delivery is signed")
	require.True(t, g.mustCall(other.id, txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 1, txn.Commit)})).Signed, "a relay is signed")

	// A bare release by another client changes nothing.
	res := g.mustCall(other.id, txn.NewReleaseCall(x.enc, txn.Commit))
	require.Equal(t, txn.ResultRefusal, res.Kind)
	require.Equal(t, txn.RefuseNotOwner, res.Code)
	requireConflictWith(t, single(w, other, txn.NewBuilder().Write(k("a"), []byte("2"))), x)

	res = g.mustCall(c.id, txn.NewReleaseCall(x.enc, txn.Commit))
	require.Equal(t, txn.ResultAck, res.Kind)
	require.Equal(t, txn.Commit, res.Decision)
	require.Nil(t, g.engine().SignBytes(res.Encode()), "a release needs no signed acknowledgement")
	requireVote(t, single(w, other, txn.NewBuilder().Write(k("a"), []byte("2"))), txn.Commit, txn.ReasonNone)
	require.Equal(t, txn.ResultAck, g.mustCall(c.id, txn.NewReleaseCall(x.enc, txn.Commit)).Kind, "released again: nothing changes")
}

// txn.md E8: anyone may terminate a read-only transaction with a COMMIT
// certificate (f+1 signed votes of every group) or an ABORT certificate of
// one group.
func TestRuleE8CertificateReleasesAnotherClientsReadOnlyTransaction(t *testing.T) {
	w := newWorld(t, 2, 2)
	c, other := w.client(1), w.client(2)
	seed(t, w, c, "a", "1")
	x := c.build(txn.NewBuilder().Read(k("a")).Read(highKey))
	c.sendAll(x)
	res := w.groups[0].mustCall(other.id, txn.NewOutcomeCall(x.enc, nil, w.commitCert(x)))
	require.Equal(t, txn.ResultAck, res.Kind)
	requireVote(t, single(w, other, txn.NewBuilder().Write(k("a"), []byte("2"))), txn.Commit, txn.ReasonNone)

	y := c.build(txn.NewBuilder().Read(k("a")).Read(highKey))
	c.sendAll(y)
	// Group 1's abort votes (a Byzantine group 1 aside, they exist only if
	// group 1 voted abort; the signatures are what Validate checks).
	res = w.groups[0].mustCall(other.id, txn.NewOutcomeCall(y.enc, nil, w.abortCert(y, 1)))
	require.Equal(t, txn.ResultAck, res.Kind)
	require.Equal(t, txn.Abort, res.Decision)
	require.Zero(t, w.groups[0].engine().locks.Len())
}

// txn.md E8: a valid release of a transaction not yet delivered records it
// as aborted (inside the window), so its later delivery takes no locks.
func TestRuleE8ReleaseBeforeDeliveryRecordsAnAbort(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Read(k("a")).Read(highKey))
	g := w.groups[0]
	res := g.mustCall(c.id, txn.NewReleaseCall(x.enc, txn.Abort))
	require.Equal(t, txn.ResultAck, res.Kind)
	require.Equal(t, txn.Abort, res.Decision)
	requireVote(t, g.mustCall(c.id, x.call()), txn.Abort, txn.ReasonTerminatedEarly)
	require.Zero(t, g.engine().locks.Len())
}

// txn.md E9: every vote on a multi-group update — commit or abort — is
// signed over (vote tag, cluster, id, group, vote); acknowledgements use
// another tag.
func TestRuleE9MultiGroupUpdateVotesAreSigned(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	raw := g.exec(host.Call{Client: c.id, Payload: x.call()})[0]
	require.Equal(t, w.dom.VoteBytes(x.id, 0, txn.Commit), g.engine().SignBytes(raw))
	y := c.build(txn.NewBuilder().Write(k("zz"), []byte("1")).Insert(highKey, []byte("2")))
	raw = g.exec(host.Call{Client: c.id, Payload: y.call()})[0]
	require.Equal(t, w.dom.VoteBytes(y.id, 0, txn.Abort), g.engine().SignBytes(raw), "abort votes are signed too")
	ack := g.exec(host.Call{Client: c.id, Payload: txn.NewOutcomeCall(x.enc, nil, w.abortCert(x, 1))})[0]
	require.Equal(t, w.dom.AckBytes(x.id, 0, txn.Abort), g.engine().SignBytes(ack))
	require.NotEqual(t, w.dom.VoteBytes(x.id, 0, txn.Abort), g.engine().SignBytes(ack))
}

// txn.md E10: a COMMIT certificate applies a pending transaction's updates
// and an ABORT certificate discards them; both release the locks; a
// certificate for a terminated transaction changes nothing.
func TestRuleE10CertificatesApplyOrDiscardPendingUpdates(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(x)
	for g, a := range c.finish(x, w.commitCert(x)) {
		require.Equal(t, txn.ResultAck, a.Kind, "group %d", g)
		require.True(t, a.Signed)
		require.Equal(t, txn.Commit, a.Decision)
	}
	v, _ := w.groups[0].get(k("a"))
	require.Equal(t, []byte("1"), v)
	v, _ = w.groups[1].get(highKey)
	require.Equal(t, []byte("2"), v)
	// Replayed: changes nothing, acknowledged with the recorded outcome.
	replay := w.groups[0].mustCall(c.id, txn.NewOutcomeCall(x.enc, nil, w.abortCert(x, 1)))
	require.Equal(t, txn.Commit, replay.Decision, "%s", replay)

	// Group 1 votes abort (its key is absent), group 0 commit: group 1's
	// ABORT certificate discards group 0's buffered write.
	y := c.build(txn.NewBuilder().Write(k("a"), []byte("3")).Delete([]byte{0x91}))
	votes := c.sendAll(y)
	requireVote(t, votes[0], txn.Commit, txn.ReasonNone)
	requireVote(t, votes[1], txn.Abort, txn.ReasonNotFound)
	for _, a := range c.finish(y, w.abortCert(y, 1)) {
		require.Equal(t, txn.ResultAck, a.Kind, "%s", a)
		require.Equal(t, txn.Abort, a.Decision)
	}
	v, _ = w.groups[0].get(k("a"))
	require.Equal(t, []byte("1"), v)
	_, ok := w.groups[1].get(highKey)
	require.True(t, ok)
	for _, g := range w.groups {
		require.Zero(t, g.engine().locks.Len())
	}
}

// txn.md E10: this group's part of a certificate must claim the vote it
// recorded; with no record, only an abort that E2 gives now is
// acknowledged (and changes nothing); any other own-group claim is refused.
func TestRuleE10OwnGroupPartMustMatchTheRecordedVote(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(x)
	g := w.groups[0]
	// Group 0 voted commit: an "abort certificate" of group 0 is a lie.
	res := g.mustCall(c.id, txn.NewOutcomeCall(x.enc, nil, w.abortCert(x, 0)))
	require.Equal(t, txn.ResultRefusal, res.Kind)
	require.Equal(t, txn.RefuseVoteMismatch, res.Code)
	require.Equal(t, 1, g.engine().locks.Len(), "still pending")

	// No record and a fresh nonce: a claimed abort of group 0 is refused,
	// and nothing is recorded.
	y := c.build(txn.NewBuilder().Insert(k("b"), []byte("1")).Insert(highKey, []byte("3")))
	res = g.mustCall(c.id, txn.NewOutcomeCall(y.enc, nil, w.abortCert(y, 0)))
	require.Equal(t, txn.RefuseVoteMismatch, res.Code)
	requireVote(t, g.mustCall(c.id, y.call()), txn.Commit, txn.ReasonNone)

	// No record, but a second id under the nonce: E2 aborts it now, so the
	// claimed abort is acknowledged, and changes nothing.
	dup := c.w.wrap(&txn.Txn{Ops: y.t.Ops[:1], Groups: y.t.Groups, Owner: c.id, Nonce: y.t.Nonce, Watermark: y.t.Watermark})
	res = g.mustCall(c.id, txn.NewOutcomeCall(dup.enc, nil, w.abortCert(dup, 0)))
	require.Equal(t, txn.ResultAck, res.Kind)
	require.Equal(t, txn.Abort, res.Decision)
	// A COMMIT claim without a record is refused.
	z := c.build(txn.NewBuilder().Insert(k("c"), []byte("1")).Insert(highKey, []byte("4")))
	require.Equal(t, txn.RefuseVoteMismatch, g.mustCall(c.id, txn.NewOutcomeCall(z.enc, nil, w.commitCert(z))).Code)
}

// txn.md E10: an ABORT certificate of another group for a transaction not yet
// delivered records its abort (inside the window), so the later delivery
// gets the abort at once; beyond the window it raises the abort mark.
func TestRuleE10AbortCertificateBeforeDeliveryRecordsTheAbort(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	res := g.mustCall(w.client(9).id, txn.NewOutcomeCall(x.enc, nil, w.abortCert(x, 1)))
	require.Equal(t, txn.ResultAck, res.Kind)
	require.Equal(t, txn.Abort, res.Decision)
	requireVote(t, g.mustCall(c.id, x.call()), txn.Abort, txn.ReasonTerminatedEarly)
	_, ok := g.get(k("a"))
	require.False(t, ok)

	// Beyond the window: nothing recorded, but the abort mark makes the
	// nonce abort forever after (E2).
	far := c.w.wrap(&txn.Txn{Ops: x.t.Ops, Groups: x.t.Groups, Owner: c.id, Nonce: w.limits.Window + 5})
	g.mustCall(c.id, txn.NewOutcomeCall(far.enc, nil, w.abortCert(far, 1)))
	s, err := g.engine().ownerState(g.replicas[0].store, c.id)
	require.NoError(t, err)
	require.True(t, s.hasMark)
	require.Equal(t, w.limits.Window+5, s.mark)
}

// txn.md E10: a valid ABORT certificate of another group dequeues a queued
// metadata transaction and records its abort.
func TestRuleE10AbortCertificateDequeuesAQueuedMetadataTransaction(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	pend(t, w, c, txn.NewBuilder().Insert(k("a"), []byte("1")).CmpAbsent(k("x")))
	m := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta())
	res := w.groups[0].mustCall(c.id, m.call())
	require.Equal(t, txn.ResultQueued, res.Kind)
	res = w.groups[0].mustCall(c.id, txn.NewOutcomeCall(m.enc, m.admin, w.abortCert(m, 1)))
	require.Equal(t, txn.Abort, res.Decision)
	require.Nil(t, w.groups[0].engine().queued)
	requireVote(t, w.groups[0].mustCall(c.id, m.call()), txn.Abort, txn.ReasonTerminatedEarly)
}

// metaTxn builds a metadata transaction over every group at version v.
func metaTxn(w *world, c *client, v uint64, b *txn.Builder) *tx {
	return c.buildAt(b, w.allGroups(v))
}

var _ = bft.GroupID(0)
