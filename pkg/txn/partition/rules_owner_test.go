package partition

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

func smallWindow(t *testing.T, p uint64) *world {
	l := txn.DefaultLimits()
	l.Window = p
	return newWorldWith(t, 2, 3, l)
}

// at builds a transaction of c with an explicit nonce and watermark.
func (c *client) at(nonce, wm uint64, b *txn.Builder) *tx {
	c.w.t.Helper()
	gs := txn.InvolvedGroups(b.Ops(), c.w.pmap)
	var gvs []txn.GroupVersion
	for _, g := range gs {
		gvs = append(gvs, txn.GroupVersion{Group: g})
	}
	t, err := b.Build(txn.Header{Owner: c.id, Nonce: nonce, Watermark: wm}, gvs, c.w.limits)
	require.NoError(c.w.t, err)
	return c.w.wrap(t)
}

func (g *group) record(id txn.TxnID) *record {
	rec, err := g.engine().loadRecord(g.replicas[0].store, id)
	require.NoError(g.w.t, err)
	return rec
}

func (g *group) owner(c bft.ClientID) ownerState {
	s, err := g.engine().ownerState(g.replicas[0].store, c)
	require.NoError(g.w.t, err)
	return s
}

// txn.md E2: below the watermark, a transaction aborts as stale, unrecorded,
// the same on every re-delivery.
func TestRuleE2StaleNonceAbortsUnrecorded(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	requireVote(t, g.mustCall(c.id, c.at(3, 3, txn.NewBuilder().Insert(k("a"), []byte("1"))).call()), txn.Commit, txn.ReasonNone)
	old := c.at(1, 0, txn.NewBuilder().Insert(k("b"), []byte("1")))
	before := g.sums()[0]
	for range 2 {
		res := g.mustCall(c.id, old.call())
		requireVote(t, res, txn.Abort, txn.ReasonStaleNonce)
		require.Equal(t, uint64(3), res.Watermark)
	}
	require.Equal(t, before, g.sums()[0], "nothing recorded")
	require.Nil(t, g.record(old.id))
}

// txn.md E2: a second id under a recorded nonce aborts, unrecorded; the first
// keeps its record.
func TestRuleE2SecondIDUnderANonceAborts(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	a := c.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("1")))
	b := c.at(0, 0, txn.NewBuilder().Insert(k("b"), []byte("1")))
	requireVote(t, g.mustCall(c.id, a.call()), txn.Commit, txn.ReasonNone)
	requireVote(t, g.mustCall(c.id, b.call()), txn.Abort, txn.ReasonSecondID)
	requireVote(t, g.mustCall(c.id, b.call()), txn.Abort, txn.ReasonSecondID)
	require.Nil(t, g.record(b.id))
	requireVote(t, g.mustCall(c.id, a.call()), txn.Commit, txn.ReasonNone)
	_, ok := g.get(k("b"))
	require.False(t, ok)
}

// txn.md E2: at or beyond w+P a transaction aborts and raises the abort mark
// b, so the nonce aborts forever after — also once the window has moved past
// it (else a later commit vote could meet an ABORT certificate made from this
// abort).
func TestRuleE2BeyondWindowRaisesTheAbortMark(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	far := c.at(5, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	res := g.mustCall(c.id, far.call())
	requireVote(t, res, txn.Abort, txn.ReasonBeyondWindow)
	require.True(t, res.Signed, "a multi-group update's abort is signed: it can make an ABORT certificate")
	require.Equal(t, ownerState{hasMark: true, mark: 5}, g.owner(c.id))
	// The window moves to [3, 7): nonce 5 is inside it now, and still
	// aborts, as does every unrecorded nonce up to b; nonce 6 is free.
	requireVote(t, g.mustCall(c.id, c.at(6, 3, txn.NewBuilder().Insert(k("b"), []byte("1"))).call()), txn.Commit, txn.ReasonNone)
	requireVote(t, g.mustCall(c.id, far.call()), txn.Abort, txn.ReasonBeyondWindow)
	for _, n := range []uint64{3, 4} {
		requireVote(t, g.mustCall(c.id, c.at(n, 3, txn.NewBuilder().Insert(k("c"), []byte("1"))).call()), txn.Abort, txn.ReasonBeyondWindow, "unrecorded nonce ≤ b", n)
	}
}

// txn.md W1: the group raises its copy of the watermark from an
// owner-authenticated transaction, before the window check, and never lowers
// it.
func TestRuleW1WatermarkRisesFromOwnerTransactionsAndNeverLowers(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	// Nonce 10 with watermark 8: outside [0, 4) before the raise, inside
	// [8, 12) after it.
	res := g.mustCall(c.id, c.at(10, 8, txn.NewBuilder().Insert(k("a"), []byte("1"))).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Equal(t, uint64(8), res.Watermark)
	res = g.mustCall(c.id, c.at(11, 2, txn.NewBuilder().Insert(k("b"), []byte("1"))).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Equal(t, uint64(8), res.Watermark, "never lowered")
	// A copy from another client does not touch the owner's watermark.
	other := w.client(2)
	res = g.mustCall(other.id, c.at(12, 12, txn.NewBuilder().Insert(k("c"), []byte("1"))).call())
	require.Equal(t, txn.RefuseNoRecord, res.Code)
	require.Equal(t, uint64(8), g.owner(c.id).w)
}

// txn.md W1, W2: a lying watermark never passes a pending transaction, nor a
// commit-voted multi-group update without its termination proof; so the
// pending transaction is never aborted or released by it, and still commits.
func TestRuleW1LyingWatermarkNeverPassesAPendingTransaction(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	p := c.at(1, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(p)
	res := g.mustCall(c.id, c.at(3, 3, txn.NewBuilder().Insert(k("b"), []byte("1"))).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Equal(t, uint64(1), res.Watermark, "stopped at the pending nonce")
	require.NotNil(t, g.record(p.id))
	c.finish(p, w.commitCert(p))
	v, ok := g.get(k("a"))
	require.True(t, ok, "the pending update still commits")
	require.Equal(t, []byte("1"), v)
	// Terminated but unproven: still blocks.
	res = g.mustCall(c.id, c.at(4, 4, txn.NewBuilder().Insert(k("c"), []byte("1"))).call())
	require.Equal(t, uint64(1), res.Watermark, "a commit-voted update waits for its proof")
	res = g.mustCall(c.id, txn.NewProofCall(p.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(p.id, 1, txn.Commit)}))
	require.Equal(t, txn.ResultProofAck, res.Kind)
	res = g.mustCall(c.id, c.at(5, 5, txn.NewBuilder().Insert(k("d"), []byte("1"))).call())
	require.Equal(t, uint64(5), res.Watermark)
	require.Nil(t, g.record(p.id), "deleted once the watermark passed it with its proof")
}

// txn.md W2: records are deleted once the watermark passes them; a deleted
// record re-derives as the same abort (stale) for its owner, and a copy from
// anyone else is refused for lack of a record.
func TestRuleW2PassedRecordsAreDeletedAndReDeriveAsStale(t *testing.T) {
	w := smallWindow(t, 4)
	c, other := w.client(1), w.client(2)
	g := w.groups[0]
	a := c.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("1")))
	requireVote(t, g.mustCall(c.id, a.call()), txn.Commit, txn.ReasonNone)
	ro := c.at(1, 0, txn.NewBuilder().Read(k("a")).Read(highKey)) // multi-group read-only: no proof needed
	c.sendAll(ro)
	g.mustCall(c.id, txn.NewReleaseCall(ro.enc, txn.Commit))
	requireVote(t, g.mustCall(c.id, c.at(2, 2, txn.NewBuilder().Insert(k("b"), []byte("1"))).call()), txn.Commit, txn.ReasonNone)
	require.Nil(t, g.record(a.id))
	require.Nil(t, g.record(ro.id))
	requireVote(t, g.mustCall(c.id, a.call()), txn.Abort, txn.ReasonStaleNonce)
	require.Equal(t, txn.RefuseNoRecord, g.mustCall(other.id, a.call()).Code)
}

// txn.md W2: an owner that never sends its termination proofs only stalls
// itself: its unproven commit votes fill its window of P.
func TestRuleW2UnprovenRecordsCountAgainstTheWindow(t *testing.T) {
	w := smallWindow(t, 2)
	c := w.client(1)
	g := w.groups[0]
	for n := range uint64(2) {
		x := c.at(n, n, txn.NewBuilder().Insert(k(string(rune('a'+n))), []byte("1")).Insert(append(highKey, byte(n)), []byte("2")))
		c.sendAll(x)
		c.finish(x, w.commitCert(x))
	}
	res := g.mustCall(c.id, c.at(2, 2, txn.NewBuilder().Insert(k("z"), []byte("1"))).call())
	requireVote(t, res, txn.Abort, txn.ReasonBeyondWindow)
	require.Zero(t, res.Watermark)
}

// txn.md W2, E11: a termination proof marks the record with a small key of
// its own instead of rewriting it, and the record holds no certificate: the
// record's bytes are the same before and after the proof, the mark makes the
// watermark pass it (and survives a restart), and the mark goes with the
// record.
func TestRuleW2ProofMarksTheRecordWithoutRewritingIt(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	var x *tx
	inspected := func() bool {
		infos, err := Inspect(g.replicas[0].store)
		require.NoError(t, err)
		for _, info := range infos {
			if info.ID == x.id {
				return info.Proven
			}
		}
		t.Fatalf("Inspect lists no record %s", x.id)
		return false
	}
	raw := func(key []byte) ([]byte, bool) {
		v, err := g.replicas[0].store.Get(storage.TxnRecords, key)
		if err != nil {
			require.ErrorIs(t, err, storage.ErrNotFound)
			return nil, false
		}
		return bytes.Clone(v), true
	}
	x = c.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(x)
	cert := w.commitCert(x)
	c.finish(x, cert)
	terminated, ok := raw(recordKey(x.id))
	require.True(t, ok)
	require.NotContains(t, string(terminated), string(cert.Parts[0].Sigs[0].Sig), "the record keeps no certificate")
	_, marked := raw(provenKey(x.id))
	require.False(t, marked)
	require.True(t, g.record(x.id).blocksWatermark())
	require.False(t, inspected())

	res := g.mustCall(c.id, txn.NewProofCall(x.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(x.id, 1, txn.Commit)}))
	require.Equal(t, txn.ResultProofAck, res.Kind)
	after, _ := raw(recordKey(x.id))
	require.Equal(t, terminated, after, "the proof does not rewrite the record")
	_, marked = raw(provenKey(x.id))
	require.True(t, marked)
	require.True(t, g.record(x.id).proven)
	require.True(t, inspected(), "Inspect reads the mark")

	g.replicas[0].restart(t, w, g.id)
	require.True(t, g.record(x.id).proven, "the mark is in the store")
	res = g.mustCall(c.id, c.at(1, 1, txn.NewBuilder().Insert(k("b"), []byte("1"))).call())
	require.Equal(t, uint64(1), res.Watermark)
	_, ok = raw(recordKey(x.id))
	require.False(t, ok)
	_, marked = raw(provenKey(x.id))
	require.False(t, marked, "the mark is deleted with the record")
}

// txn.md W2: a termination proof is refused while the transaction is
// pending here, or for another outcome than the recorded one.
func TestRuleW2ProofNeedsTheRecordedOutcome(t *testing.T) {
	w := smallWindow(t, 4)
	c := w.client(1)
	g := w.groups[0]
	x := c.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(x)
	res := g.mustCall(c.id, txn.NewProofCall(x.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(x.id, 1, txn.Commit)}))
	require.Equal(t, txn.RefusePending, res.Code)
	c.finish(x, w.commitCert(x))
	res = g.mustCall(c.id, txn.NewProofCall(x.enc, nil, txn.Abort, []txn.GroupSigs{w.acks(x.id, 1, txn.Abort)}))
	require.Equal(t, txn.RefuseOutcomeMismatch, res.Code)
	require.False(t, g.record(x.id).proven)
}

// txn.md W3: every reply carries the group's watermark for the owner, and a
// query with no nonce tells a restarted client its watermark, abort mark and
// the transactions it must finish, with their encodings.
func TestRuleW3QueryReportsWatermarkMarkAndUnfinishedRecords(t *testing.T) {
	w := smallWindow(t, 8)
	c := w.client(1)
	g := w.groups[0]
	done := c.at(2, 2, txn.NewBuilder().Insert(k("a"), []byte("1")))
	g.mustCall(c.id, done.call())
	pending := c.at(3, 2, txn.NewBuilder().Insert(k("b"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(pending)
	far := c.at(20, 2, txn.NewBuilder().Insert(k("c"), []byte("1")))
	g.mustCall(c.id, far.call())

	res := g.mustCall(c.id, txn.NewQueryCall(0))
	require.Equal(t, txn.ResultQuery, res.Kind)
	q := res.Query
	require.Equal(t, bft.GroupID(0), q.Group)
	require.Equal(t, uint64(2), q.Watermark)
	require.True(t, q.HasMark)
	require.Equal(t, uint64(20), q.Mark)
	require.Len(t, q.Records, 2)
	require.Equal(t, uint64(2), q.Records[0].Nonce)
	require.Equal(t, txn.StateTerminated, q.Records[0].State)
	require.Nil(t, q.Records[0].Txn)
	require.Equal(t, txn.StatePending, q.Records[1].State)
	require.Equal(t, pending.enc, q.Records[1].Txn.Txn)

	// Another client's query sees its own (empty) state only.
	res = g.mustCall(w.client(2).id, txn.NewQueryCall(0))
	require.Empty(t, res.Query.Records)
	require.Zero(t, res.Query.Watermark)

	// Votes, acks and refusals carry the owner's watermark.
	ack := c.finish(pending, w.commitCert(pending))[0]
	require.Equal(t, uint64(2), ack.Watermark)
	require.Equal(t, uint64(2), g.mustCall(w.client(2).id, c.at(7, 7, txn.NewBuilder().Read(k("a"))).call()).Watermark)
}

// txn.md T3: a transaction counts as its owner's only in the owner's
// envelope or as a relay with f+1 signed votes of one involved group. A copy
// forged in another client's name is refused and touches nothing: the
// owner's own transaction under that nonce still commits.
func TestRuleT3ForgedOwnerIsRefusedAndTouchesNothing(t *testing.T) {
	w := smallWindow(t, 4)
	victim, forger := w.client(1), w.client(2)
	g := w.groups[0]
	forged := victim.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("forged")))
	before := g.sums()[0]
	res := g.mustCall(forger.id, forged.call())
	require.Equal(t, txn.ResultRefusal, res.Kind)
	require.Equal(t, txn.RefuseNoRecord, res.Code)
	require.Equal(t, before, g.sums()[0])
	requireVote(t, g.mustCall(victim.id, victim.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("mine"))).call()), txn.Commit, txn.ReasonNone)
}

// txn.md T3, K4: a relay with f+1 signed votes of another involved group is
// owner-authenticated: it is executed, recorded and raises the watermark.
func TestRuleT3RelayWithSignedVotesIsOwnerAuthenticated(t *testing.T) {
	w := smallWindow(t, 4)
	owner, rescuer := w.client(1), w.client(2)
	x := owner.at(2, 2, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	requireVote(t, w.groups[1].mustCall(owner.id, x.call()), txn.Commit, txn.ReasonNone)
	// The owner abandons x; group 0 never saw it. A rescuer relays it.
	relay := txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 1, txn.Commit)})
	res := w.groups[0].mustCall(rescuer.id, relay)
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.True(t, res.Signed)
	require.Equal(t, uint64(2), res.Watermark)
	require.NotNil(t, w.groups[0].record(x.id))
	for _, a := range rescuer.finish(x, w.commitCert(x)) {
		require.Equal(t, txn.Commit, a.Decision)
	}
}
