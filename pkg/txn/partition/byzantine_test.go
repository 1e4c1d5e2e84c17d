package partition

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// The Byzantine clients of txn.md's list, each stopped by the engine. (Forged
// owners: TestRuleT3ForgedOwnerIsRefusedAndTouchesNothing; several ids under
// one nonce: TestRuleE2SecondIDUnderANonceAborts; nonces beyond the window:
// TestRuleE2BeyondWindowRaisesTheAbortMark; lying watermarks:
// TestRuleW1LyingWatermarkNeverPassesAPendingTransaction and
// TestRuleW1WatermarkRisesFromOwnerTransactionsAndNeverLowers; bare
// releases of others' read-only transactions:
// TestRuleE8ReadOnlyVotesUnsignedAndHoldsReadLocksUntilReleased; metadata
// writes without the admin key:
// TestRuleM1M5MetadataTransactionsInvolveEveryGroupAndNeedAnAdmin.)

// Non-matching operations to different groups under one nonce are two
// transactions with two ids; neither can ever commit: the other group
// answers the relay of each with a second-id abort, whose ABORT certificate
// terminates it where it is pending (paper §3.4 a.1, E2).
func TestByzantineNonMatchingOperationsUnderOneNonceNeverCommit(t *testing.T) {
	w := newWorld(t, 2, 3)
	liar, rescuer := w.client(1), w.client(2)
	gvs := []txn.GroupVersion{{Group: 0}, {Group: 1}}
	t1 := liar.buildAt(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")), gvs)
	liar.nonce--
	t2 := liar.buildAt(txn.NewBuilder().Insert(k("a"), []byte("2")).Insert(highKey, []byte("2")), gvs)
	require.Equal(t, t1.t.Nonce, t2.t.Nonce)
	requireVote(t, w.groups[0].mustCall(liar.id, t1.call()), txn.Commit, txn.ReasonNone)
	requireVote(t, w.groups[1].mustCall(liar.id, t2.call()), txn.Commit, txn.ReasonNone)

	// A rescuer relays t1 to group 1 with group 0's signed votes.
	res := w.groups[1].mustCall(rescuer.id, txn.NewRelayCall(t1.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(t1.id, 0, txn.Commit)}))
	requireVote(t, res, txn.Abort, txn.ReasonSecondID)
	require.True(t, res.Signed)
	res = w.groups[0].mustCall(rescuer.id, txn.NewRelayCall(t2.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(t2.id, 1, txn.Commit)}))
	requireVote(t, res, txn.Abort, txn.ReasonSecondID)
	// Group 1's abort votes on t1 terminate it at group 0, and vice versa.
	require.Equal(t, txn.Abort, w.groups[0].mustCall(rescuer.id, txn.NewOutcomeCall(t1.enc, nil, w.abortCert(t1, 1))).Decision)
	require.Equal(t, txn.Abort, w.groups[1].mustCall(rescuer.id, txn.NewOutcomeCall(t2.enc, nil, w.abortCert(t2, 0))).Decision)
	_, ok := w.groups[0].get(k("a"))
	require.False(t, ok)
	_, ok = w.groups[1].get(highKey)
	require.False(t, ok)
	// A COMMIT certificate for t1 would need group 1's commit votes: group 1
	// refuses the claim.
	require.Equal(t, txn.RefuseVoteMismatch, w.groups[1].mustCall(rescuer.id, txn.NewOutcomeCall(t1.enc, nil, w.commitCert(t1))).Code)
}

// A client that abandons its transaction after the votes (or withholds the
// certificate from some groups) blocks others only until one of them
// recovers it (K4): the conflict names it with its encoding, its group
// returns its recorded votes signed to anyone re-sending it (E1), the
// other groups do the same, and the certificate terminates it everywhere.
func TestByzantineAbandonedTransactionIsRecoveredByAnyClient(t *testing.T) {
	w := newWorld(t, 2, 3)
	quitter, other := w.client(1), w.client(2)
	u := quitter.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("2")))
	quitter.sendAll(u)
	// The quitter withholds the certificate from group 0 only.
	w.groups[1].mustCall(quitter.id, txn.NewOutcomeCall(u.enc, nil, w.commitCert(u)))

	res := single(w, other, txn.NewBuilder().Read(k("a")))
	requireConflictWith(t, res, u)
	named := res.Named[0]
	// Recovery: re-send byte-identically, collect the signed votes.
	for _, gv := range u.t.Groups {
		res := w.groups[gv.Group].mustCall(other.id, txn.NewTxnCall(named.Txn, named.Admin))
		requireVote(t, res, txn.Commit, txn.ReasonNone)
		require.True(t, res.Signed, "group %d", gv.Group)
	}
	require.Equal(t, txn.Commit, w.groups[0].mustCall(other.id, txn.NewOutcomeCall(u.enc, nil, w.commitCert(u))).Decision)
	v, ok := w.groups[0].get(k("a"))
	require.True(t, ok)
	require.Equal(t, []byte("1"), v)
	requireVote(t, single(w, other, txn.NewBuilder().Read(k("a"))), txn.Commit, txn.ReasonNone)
}

// Abandoned data transactions that block a queued metadata transaction are
// named by the "queued" reply and recovered; the queue then drains.
func TestByzantineAbandonedBlockersOfAQueuedMetadataTransactionAreRecovered(t *testing.T) {
	w := newWorld(t, 2, 2)
	quitter, admin := w.client(1), w.client(2)
	u := pend(t, w, quitter, txn.NewBuilder().Insert(k("a"), []byte("1")))
	m := metaTxn(w, admin, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta())
	res := w.groups[0].mustCall(admin.id, m.call())
	require.Equal(t, txn.ResultQueued, res.Kind)
	require.Equal(t, u.enc, res.Named[0].Txn)
	// The admin's client recovers u: the signed votes exist (E1).
	for _, gv := range u.t.Groups {
		require.True(t, w.groups[gv.Group].mustCall(admin.id, u.call()).Signed)
	}
	admin.finish(u, w.commitCert(u))
	requireVote(t, w.groups[0].mustCall(admin.id, m.call()), txn.Commit, txn.ReasonNone)
}

// Replays of old transactions and certificates after their records were
// deleted re-derive as aborts and never execute again (W2, E2, E10) — not
// even as a relay with genuine old signatures.
func TestByzantineReplaysAfterRecordsAreDeletedNeverReExecute(t *testing.T) {
	w := smallWindow(t, 4)
	owner, replayer := w.client(1), w.client(2)
	old := owner.at(0, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")))
	owner.sendAll(old)
	owner.finish(old, w.commitCert(old))
	for _, gv := range old.t.Groups {
		other := bft.GroupID(1 - gv.Group)
		w.groups[gv.Group].mustCall(owner.id, txn.NewProofCall(old.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(old.id, other, txn.Commit)}))
	}
	// The owner deletes k(a), and its watermark passes the old transaction.
	del := owner.at(1, 1, txn.NewBuilder().Delete(k("a")))
	requireVote(t, w.groups[0].mustCall(owner.id, del.call()), txn.Commit, txn.ReasonNone)
	require.Nil(t, w.groups[0].record(old.id))
	g := w.groups[0]
	before := g.sums()[0]

	require.Equal(t, txn.RefuseNoRecord, g.mustCall(replayer.id, old.call()).Code, "copy")
	res := g.mustCall(replayer.id, txn.NewRelayCall(old.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(old.id, 1, txn.Commit)}))
	requireVote(t, res, txn.Abort, txn.ReasonStaleNonce, "relay with genuine old votes")
	require.Equal(t, txn.RefuseVoteMismatch, g.mustCall(replayer.id, txn.NewOutcomeCall(old.enc, nil, w.commitCert(old))).Code, "old COMMIT certificate")
	res = g.mustCall(replayer.id, txn.NewOutcomeCall(old.enc, nil, w.abortCert(old, 1)))
	require.Equal(t, txn.Abort, res.Decision, "an ABORT certificate of another group, acknowledged without recording")
	require.Equal(t, before, g.sums()[0], "nothing changed")
	_, ok := g.get(k("a"))
	require.False(t, ok)
}

// Relays and calls to a group outside the declared set are refused in
// Validate (T4), as are relays carrying votes of a group not involved.
func TestByzantineRelaysOutsideTheDeclaredGroupsAreRefused(t *testing.T) {
	w := newWorld(t, 3, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Insert([]byte{0x10}, []byte("1")).Insert([]byte{0x60}, []byte("1")))
	require.Equal(t, []bft.GroupID{0, 1}, x.t.GroupIDs())
	relay := txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 0, txn.Commit)})
	_, err := w.groups[2].call(c.id, relay)
	require.ErrorIs(t, err, txn.ErrNotInvolved)
	_, err = w.groups[2].call(c.id, x.call())
	require.ErrorIs(t, err, txn.ErrNotInvolved)
	outsider := txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 2, txn.Commit)})
	_, err = w.groups[0].call(c.id, outsider)
	require.ErrorIs(t, err, txn.ErrInvalid)
}

// Forged, short, wrong-group and cross-transaction certificates and relays
// are refused in Validate (T4, E10); a replayed valid certificate changes
// nothing.
func TestByzantineBadCertificatesAreRefused(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")))
	y := c.build(txn.NewBuilder().Insert(k("b"), []byte("1")).Insert(highKey, []byte("2")))
	c.sendAll(x)
	g := w.groups[0]
	forged := w.abortCert(x, 1)
	forged.Parts[0].Sigs[1].Sig[0] ^= 1
	short := w.abortCert(x, 1)
	short.Parts[0].Sigs = short.Parts[0].Sigs[:1]
	wrongGroup := w.abortCert(x, 1)
	wrongGroup.Parts[0] = w.votes(x.id, 0, txn.Abort)
	wrongGroup.Parts[0].Group = 1
	cross := w.abortCert(y, 1)
	dupReplica := w.abortCert(x, 1)
	dupReplica.Parts[0].Sigs[1] = dupReplica.Parts[0].Sigs[0]
	for name, cert := range map[string]txn.Certificate{
		"forged": forged, "short": short, "wrong group": wrongGroup, "cross-transaction": cross, "duplicate replica": dupReplica,
	} {
		_, err := g.call(c.id, txn.NewOutcomeCall(x.enc, nil, cert))
		require.Error(t, err, name)
	}
	_, err := g.call(c.id, txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(y.id, 1, txn.Commit)}))
	require.ErrorIs(t, err, txn.ErrSignature, "cross-transaction relay")
	require.Equal(t, 1, g.engine().locks.Len(), "x still pending")

	c.finish(x, w.commitCert(x))
	before := g.sums()[0]
	require.Equal(t, txn.Commit, g.mustCall(w.client(3).id, txn.NewOutcomeCall(x.enc, nil, w.commitCert(x))).Decision, "replayed")
	require.Equal(t, before, g.sums()[0])
}

// Floods of pending transactions stop at P per owner (E2, W2), and
// oversized transactions are refused with clear errors (T4).
func TestByzantineFloodsOfPendingTransactionsStopAtTheWindow(t *testing.T) {
	w := smallWindow(t, 3)
	flooder := w.client(1)
	for n := range uint64(3) {
		pend(t, w, flooder, txn.NewBuilder().Insert(k(string(rune('a'+n))), []byte("1")))
	}
	x := flooder.build(txn.NewBuilder().Insert(k("z"), []byte("1")).Read(highKey))
	requireVote(t, w.groups[0].mustCall(flooder.id, x.call()), txn.Abort, txn.ReasonBeyondWindow)
	require.Equal(t, 3, w.groups[0].engine().locks.Len())
	// Others are not affected.
	requireVote(t, single(w, w.client(2), txn.NewBuilder().Insert(k("y"), []byte("1"))), txn.Commit, txn.ReasonNone)

	b := txn.NewBuilder()
	for i := range w.limits.MaxOps {
		b.Read(append(k("r"), byte(i), byte(i>>8)))
	}
	b.Read(k("last"))
	tx := &txn.Txn{Ops: b.Ops(), Groups: []txn.GroupVersion{{Group: 0}}, Owner: flooder.id, Nonce: 9, Watermark: 0}
	_, err := w.groups[0].call(flooder.id, txn.NewTxnCall(tx.Encode(), nil))
	require.ErrorIs(t, err, txn.ErrTooLarge)
	require.ErrorContains(t, err, "operations")
	big := &txn.Txn{Ops: []txn.Op{{Kind: txn.OpInsert, Key: k("v"), Value: bytes.Repeat([]byte{1}, w.limits.MaxValueBytes+1)}},
		Groups: []txn.GroupVersion{{Group: 0}}, Owner: flooder.id, Nonce: 9}
	_, err = w.groups[0].call(flooder.id, txn.NewTxnCall(big.Encode(), nil))
	require.ErrorIs(t, err, txn.ErrTooLarge)
}

// A lying watermark at a group that never saw a transaction (pending
// elsewhere) makes the transaction stale there forever: it can never commit,
// and its stale abort votes terminate it where it is pending (W1, W2, E2).
// With a pending transaction at the group itself the watermark stops below it
// (TestRuleW1LyingWatermarkNeverPassesAPendingTransaction).
func TestByzantineLyingWatermarkWithoutPendingTransactionOnlyAbortsIt(t *testing.T) {
	w := smallWindow(t, 4)
	liar, rescuer := w.client(1), w.client(2)
	u := liar.at(1, 0, txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")))
	requireVote(t, w.groups[0].mustCall(liar.id, u.call()), txn.Commit, txn.ReasonNone)
	// At group 1, which never saw u, the liar states that nonce 1 is done.
	res := w.groups[1].mustCall(liar.id, liar.at(3, 3, txn.NewBuilder().Insert([]byte{0x95}, []byte("x"))).call())
	require.Equal(t, uint64(3), res.Watermark)
	// Recovery: group 1 answers the relay with a signed stale abort.
	res = w.groups[1].mustCall(rescuer.id, txn.NewRelayCall(u.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(u.id, 0, txn.Commit)}))
	requireVote(t, res, txn.Abort, txn.ReasonStaleNonce)
	require.True(t, res.Signed)
	require.Equal(t, txn.Abort, w.groups[0].mustCall(rescuer.id, txn.NewOutcomeCall(u.enc, nil, w.abortCert(u, 1))).Decision)
	_, ok := w.groups[0].get(k("a"))
	require.False(t, ok)
	require.Zero(t, w.groups[0].engine().locks.Len())
}
