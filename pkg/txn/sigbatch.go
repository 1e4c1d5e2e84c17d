package txn

import (
	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// SigBatch collects the replica signature checks of several verifications
// — the certificates, relays and termination proofs of the calls one
// envelope carries — and checks them together: Ed25519 batch verification
// (auth.Batch, ZIP-215) costs about half as much per signature as checking
// each alone once a batch holds a few dozen, and a multi-group update makes
// every replica of every group check 2(f+1) signatures of other groups per
// transaction (E10, W2), the largest part of its CPU
// (docs/benchmarks/txn.md).
//
// Use: v := keys.Deferring(sb) runs every check of a verification but the
// signatures', which it records in sb and reports as passed; sb.Verify then
// checks them all. If Verify fails, at least one recorded signature is
// invalid, and the caller verifies again with keys itself to learn which
// verification fails and why. The verdicts are the same either way (batch
// verification accepts exactly when every signature passes alone). Not safe
// for concurrent use.
type SigBatch struct {
	batches map[bft.GroupID]*auth.Batch
	// others are the checks of verifiers that cannot batch (the
	// simulator's): performed one by one in Verify.
	others []sigCheck
	// adds counts the checks handed to the batch (also those it skipped as
	// already verified).
	adds int
}

type sigCheck struct {
	v        ReplicaVerifier
	r        bft.ReplicaID
	msg, sig []byte
}

// batchingVerifier is a ReplicaVerifier that can collect checks in a batch
// (*auth.Verifier).
type batchingVerifier interface {
	NewBatch() *auth.Batch
}

// NewSigBatch returns an empty batch.
func NewSigBatch() *SigBatch { return &SigBatch{} }

// Deferring returns a view of k whose replica signature checks go to sb
// (the admin signatures of metadata transactions are still checked at once:
// they are rare).
func (k *Keys) Deferring(sb *SigBatch) *Keys {
	d := *k
	d.sink = sb
	return &d
}

// add records one check; it fails at once only for a replica the group does
// not have.
func (sb *SigBatch) add(g bft.GroupID, v ReplicaVerifier, r bft.ReplicaID, msg, sig []byte) error {
	sb.adds++
	bv, ok := v.(batchingVerifier)
	if !ok {
		sb.others = append(sb.others, sigCheck{v: v, r: r, msg: msg, sig: sig})
		return nil
	}
	b := sb.batches[g]
	if b == nil {
		if sb.batches == nil {
			sb.batches = make(map[bft.GroupID]*auth.Batch)
		}
		b = bv.NewBatch()
		sb.batches[g] = b
	}
	return b.VerifyReplica(r, msg, sig)
}

// Adds returns the number of checks handed to the batch so far.
func (sb *SigBatch) Adds() int { return sb.adds }

// Verify reports whether every recorded signature is valid (true for an
// empty batch).
func (sb *SigBatch) Verify() bool {
	ok := true
	for _, b := range sb.batches {
		ok = b.Verify() && ok
	}
	for _, c := range sb.others {
		ok = c.v.VerifyReplica(c.r, c.msg, c.sig) == nil && ok
	}
	return ok
}
