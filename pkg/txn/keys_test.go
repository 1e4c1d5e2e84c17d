package txn

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

type testCluster struct {
	keys   *Keys
	privs  map[bft.GroupID][]ed25519.PrivateKey
	admin  ed25519.PrivateKey
	domain *Domain
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	tc := &testCluster{privs: map[bft.GroupID][]ed25519.PrivateKey{}}
	pubs := map[bft.GroupID][]ed25519.PublicKey{}
	seed := byte(1)
	for _, g := range []bft.GroupID{0, 1} {
		for range 4 {
			priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
			seed++
			tc.privs[g] = append(tc.privs[g], priv)
			pubs[g] = append(pubs[g], priv.Public().(ed25519.PublicKey))
		}
	}
	tc.admin = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{99}, 32))
	var err error
	tc.keys, err = NewKeys("kc", pubs, []ed25519.PublicKey{tc.admin.Public().(ed25519.PublicKey)})
	require.NoError(t, err)
	tc.domain = tc.keys.Domain()
	return tc
}

func (tc *testCluster) votes(id TxnID, g bft.GroupID, dec Decision, replicas ...bft.ReplicaID) GroupSigs {
	gs := GroupSigs{Group: g}
	for _, r := range replicas {
		var s ReplicaSig
		s.Replica = r
		s.Sig = ed25519.Sign(tc.privs[g][r], tc.domain.VoteBytes(id, g, dec))
		gs.Sigs = append(gs.Sigs, s)
	}
	return gs
}

func (tc *testCluster) acks(id TxnID, g bft.GroupID, dec Decision, replicas ...bft.ReplicaID) GroupSigs {
	gs := GroupSigs{Group: g}
	for _, r := range replicas {
		var s ReplicaSig
		s.Replica = r
		s.Sig = ed25519.Sign(tc.privs[g][r], tc.domain.AckBytes(id, g, dec))
		gs.Sigs = append(gs.Sigs, s)
	}
	return gs
}

func twoGroupTxn() *Txn {
	return &Txn{
		Ops:    []Op{{Kind: OpWrite, Key: []byte("a"), Value: []byte("1")}, {Kind: OpWrite, Key: []byte("z"), Value: []byte("2")}},
		Groups: []GroupVersion{{Group: 0}, {Group: 1}},
		Owner:  bft.ClientID(bytes.Repeat([]byte{5}, 32)), Nonce: 1,
	}
}

// txn.md E10: what a certificate must hold, and the Byzantine certificates
// of txn.md's list (forged, short, wrong-group, cross-transaction).
func TestVerifyCertificateAcceptsOnlyWellFormedCertificates(t *testing.T) {
	tc := newTestCluster(t)
	tx := twoGroupTxn()
	id := tx.ID("kc")
	other := tx
	other = &Txn{Ops: tx.Ops, Groups: tx.Groups, Owner: tx.Owner, Nonce: 2}
	otherID := other.ID("kc")

	commit := Certificate{Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), tc.votes(id, 1, Commit, 2, 3)}}
	require.NoError(t, tc.keys.VerifyCertificate(tx, id, &commit, 0, false))
	abort := Certificate{Decision: Abort, Parts: []GroupSigs{tc.votes(id, 1, Abort, 0, 3)}}
	require.NoError(t, tc.keys.VerifyCertificate(tx, id, &abort, 0, false))

	bad := map[string]Certificate{
		"short (f sigs)":    {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), tc.votes(id, 1, Commit, 2)}},
		"too many sigs":     {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1, 2), tc.votes(id, 1, Commit, 2, 3)}},
		"one group missing": {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1)}},
		"duplicate replica": {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 1, 1), tc.votes(id, 1, Commit, 2, 3)}},
		"unknown replica":   {Decision: Abort, Parts: []GroupSigs{tc.votes(id, 1, Abort, 0, 3)}},
		"cross-transaction": {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), tc.votes(otherID, 1, Commit, 2, 3)}},
		"wrong vote":        {Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), tc.votes(id, 1, Abort, 2, 3)}},
		"two abort parts":   {Decision: Abort, Parts: []GroupSigs{tc.votes(id, 0, Abort, 0, 1), tc.votes(id, 1, Abort, 2, 3)}},
	}
	// Group 1's votes relabelled as group 0's: signatures bind the group.
	wrongGroup := tc.votes(id, 1, Abort, 0, 1)
	wrongGroup.Group = 0
	bad["wrong group"] = Certificate{Decision: Abort, Parts: []GroupSigs{wrongGroup}}
	// An ack is not a vote (E9: distinct tags).
	bad["acks as votes"] = Certificate{Decision: Abort, Parts: []GroupSigs{tc.acks(id, 1, Abort, 0, 1)}}
	unknown := bad["unknown replica"]
	unknown.Parts[0].Sigs[1].Replica = 7
	bad["unknown replica"] = unknown
	outsider := Certificate{Decision: Abort, Parts: []GroupSigs{tc.votes(id, 1, Abort, 0, 1)}}
	outsider.Parts[0].Group = 2
	bad["group not involved"] = outsider
	for name, c := range bad {
		err := tc.keys.VerifyCertificate(tx, id, &c, 0, false)
		require.Error(t, err, name)
	}

	// A replica of group 0 skips its own part (compared with its record).
	own := Certificate{Decision: Commit, Parts: []GroupSigs{{Group: 0, Sigs: []ReplicaSig{{Replica: 0}, {Replica: 1}}}, tc.votes(id, 1, Commit, 2, 3)}}
	require.NoError(t, tc.keys.VerifyCertificate(tx, id, &own, 0, true))
	require.Error(t, tc.keys.VerifyCertificate(tx, id, &own, 1, true), "only the receiver's own part is skipped")
	ownShort := Certificate{Decision: Commit, Parts: []GroupSigs{{Group: 0, Sigs: []ReplicaSig{{Replica: 0}}}, tc.votes(id, 1, Commit, 2, 3)}}
	require.Error(t, tc.keys.VerifyCertificate(tx, id, &ownShort, 0, true), "the own part still needs f+1 distinct members")
}

// txn.md W2: a termination proof is f+1 acks of every other group.
func TestVerifyProofNeedsAcksOfEveryOtherGroup(t *testing.T) {
	tc := newTestCluster(t)
	tx := twoGroupTxn()
	id := tx.ID("kc")
	require.NoError(t, tc.keys.VerifyProof(tx, id, Commit, []GroupSigs{tc.acks(id, 1, Commit, 0, 1)}, 0))
	require.Error(t, tc.keys.VerifyProof(tx, id, Abort, []GroupSigs{tc.acks(id, 1, Commit, 0, 1)}, 0), "wrong outcome")
	require.Error(t, tc.keys.VerifyProof(tx, id, Commit, []GroupSigs{tc.votes(id, 1, Commit, 0, 1)}, 0), "votes are not acks")
	require.Error(t, tc.keys.VerifyProof(tx, id, Commit, nil, 0), "missing group")
	require.Error(t, tc.keys.VerifyProof(tx, id, Commit, []GroupSigs{tc.acks(id, 0, Commit, 0, 1), tc.acks(id, 1, Commit, 0, 1)}, 0), "own group's acks")
}

// txn.md M5: only listed admin keys sign metadata transactions.
func TestVerifyAdminAcceptsOnlyListedAdmins(t *testing.T) {
	tc := newTestCluster(t)
	id := twoGroupTxn().ID("kc")
	require.NoError(t, tc.keys.VerifyAdmin(id, SignAdmin(tc.domain, id, tc.admin)))
	stranger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{42}, 32))
	require.ErrorIs(t, tc.keys.VerifyAdmin(id, SignAdmin(tc.domain, id, stranger)), ErrSignature)
	other := TxnID{1}
	require.ErrorIs(t, tc.keys.VerifyAdmin(other, SignAdmin(tc.domain, id, tc.admin)), ErrSignature)
	otherCluster := NewDomain("elsewhere")
	require.ErrorIs(t, tc.keys.VerifyAdmin(id, SignAdmin(otherCluster, id, tc.admin)), ErrSignature)
}

// txn.md E9: votes and acks are signed under distinct tags; SignBytes reads
// them from a result's header and asks for no signature on anything else.
func TestSignBytesSeparatesVotesAcksAndUnsignedResults(t *testing.T) {
	d := NewDomain("kc")
	id := TxnID{7}
	vote := (&Result{Kind: ResultVote, Signed: true, ID: id, Group: 3, Decision: Commit}).Encode()
	ack := (&Result{Kind: ResultAck, Signed: true, ID: id, Group: 3, Decision: Commit}).Encode()
	require.Equal(t, d.VoteBytes(id, 3, Commit), d.SignBytes(vote))
	require.Equal(t, d.AckBytes(id, 3, Commit), d.SignBytes(ack))
	require.NotEqual(t, d.SignBytes(vote), d.SignBytes(ack))
	require.NotEqual(t, d.SignBytes(vote), NewDomain("kd").SignBytes(vote))
	require.Equal(t, d.SignBytes(vote), SignBytes("kc", vote))
	unsigned := (&Result{Kind: ResultVote, ID: id, Group: 3, Decision: Commit}).Encode()
	require.Nil(t, d.SignBytes(unsigned))
	require.Nil(t, d.SignBytes((&Result{Kind: ResultRefusal, Code: RefuseNoRecord}).Encode()))
	require.Nil(t, d.SignBytes([]byte{'V', 1}))
}

// txn.md E9, E10: a replica signs the votes and acknowledgements of one
// executed batch as one signature tree (pkg/bft/auth, sigtree.go). A
// certificate or proof built from tree signatures verifies — alone and in a
// SigBatch, which checks each replica's root once — and a tree signature
// proves only its own leaf: the same tree's signature of another
// transaction's vote, of the other vote, or of an acknowledgement does not
// pass for this vote.
func TestTreeSignedVotesProveOnlyTheirOwnLeaf(t *testing.T) {
	tc := newTestCluster(t)
	tx := twoGroupTxn()
	id := tx.ID("kc")
	other := &Txn{Ops: tx.Ops, Groups: tx.Groups, Owner: tx.Owner, Nonce: 2}
	otherID := other.ID("kc")
	// What replicas 2 and 3 of group 1 signed in one batch: leaf 0 is this
	// transaction's commit vote, then another's vote, an abort vote, acks.
	msgs := [][]byte{
		tc.domain.VoteBytes(id, 1, Commit),
		tc.domain.VoteBytes(otherID, 1, Commit),
		tc.domain.VoteBytes(id, 1, Abort),
		tc.domain.AckBytes(id, 1, Commit),
		tc.domain.AckBytes(otherID, 1, Commit),
	}
	trees := map[bft.ReplicaID][][]byte{}
	for _, r := range []bft.ReplicaID{2, 3} {
		trees[r] = auth.SignTree(func(m []byte) []byte { return ed25519.Sign(tc.privs[1][r], m) }, msgs)
	}
	part := func(leaf int) GroupSigs {
		return GroupSigs{Group: 1, Sigs: []ReplicaSig{{Replica: 2, Sig: trees[2][leaf]}, {Replica: 3, Sig: trees[3][leaf]}}}
	}
	commit := Certificate{Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), part(0)}}
	require.NoError(t, tc.keys.VerifyCertificate(tx, id, &commit, 0, false))
	require.NoError(t, tc.keys.VerifyProof(tx, id, Commit, []GroupSigs{part(3)}, 0))

	// In a SigBatch (of new verifiers, whose caches are empty): the
	// certificates of both transactions and the proof need one check per
	// replica root.
	sb := NewSigBatch()
	d := newTestCluster(t).keys.Deferring(sb)
	require.NoError(t, d.VerifyCertificate(tx, id, &commit, 0, true))
	otherCommit := Certificate{Decision: Commit, Parts: []GroupSigs{tc.votes(otherID, 0, Commit, 0, 1), part(1)}}
	require.NoError(t, d.VerifyCertificate(other, otherID, &otherCommit, 0, true))
	require.NoError(t, d.VerifyProof(tx, id, Commit, []GroupSigs{part(3)}, 0))
	require.True(t, sb.Verify())
	require.Equal(t, 6, sb.Adds())
	require.Equal(t, 2, sb.batches[1].Len(), "one root per replica")

	for name, leaf := range map[string]int{"another transaction's vote": 1, "the abort vote": 2, "an acknowledgement": 3} {
		c := Certificate{Decision: Commit, Parts: []GroupSigs{tc.votes(id, 0, Commit, 0, 1), part(leaf)}}
		require.ErrorIs(t, tc.keys.VerifyCertificate(tx, id, &c, 0, false), ErrSignature, name)
		sb := NewSigBatch()
		require.NoError(t, tc.keys.Deferring(sb).VerifyCertificate(tx, id, &c, 0, false), name)
		require.False(t, sb.Verify(), name)
	}
	require.ErrorIs(t, tc.keys.VerifyProof(tx, id, Commit, []GroupSigs{part(0)}, 0), ErrSignature, "a vote's leaf as an ack")

	// A certificate of tree signatures survives its encoding.
	enc := NewOutcomeCall(tx.Encode(), nil, commit)
	call, err := DecodeCall(enc)
	require.NoError(t, err)
	require.Equal(t, commit, *call.Cert)
}
