package txn

import (
	"crypto/ed25519"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// Keys holds what a replica or a client needs to check the signatures the
// protocol carries: every group's replica keys (votes and acknowledgements,
// E9, E10, W2, T3) and the admin keys (M5), all under one cluster's Domain.
// It is immutable and safe for concurrent use.
type Keys struct {
	dom    *Domain
	groups map[bft.GroupID]ReplicaVerifier
	ids    []bft.GroupID
	admins map[[OwnerSize]byte]ed25519.PublicKey
	// sink, on a copy made by Deferring, receives the replica signature
	// checks instead of performing them (sigbatch.go).
	sink *SigBatch
}

// ReplicaVerifier checks the signatures of one group's replicas. An
// *auth.Verifier (Ed25519) is one; the simulator plugs in its own, so that
// thousands of seeds need not pay for Ed25519.
type ReplicaVerifier interface {
	// N is the group's size, 3f+1.
	N() int
	VerifyReplica(id bft.ReplicaID, msg, sig []byte) error
}

// NewKeys builds Keys from each group's replica keys in bft.ReplicaID order
// and the admin keys.
func NewKeys(clusterID string, groups map[bft.GroupID][]ed25519.PublicKey, admins []ed25519.PublicKey) (*Keys, error) {
	vs := make(map[bft.GroupID]ReplicaVerifier, len(groups))
	for g, keys := range groups {
		if len(keys)%3 != 1 {
			return nil, fmt.Errorf("%w: group %d has %d replicas, want 3f+1", ErrKeys, g, len(keys))
		}
		v, err := auth.NewVerifier(auth.VerifierConfig{Replicas: keys, Policy: auth.ClientsOpen, OpenKeyCache: 1})
		if err != nil {
			return nil, fmt.Errorf("%w: group %d: %w", ErrKeys, g, err)
		}
		vs[g] = v
	}
	return NewKeysWithVerifiers(clusterID, vs, admins)
}

// NewKeysWithVerifiers builds Keys from a verifier per group and the admin
// keys.
func NewKeysWithVerifiers(clusterID string, groups map[bft.GroupID]ReplicaVerifier, admins []ed25519.PublicKey) (*Keys, error) {
	if len(groups) == 0 {
		return nil, fmt.Errorf("%w: no groups", ErrKeys)
	}
	k := &Keys{dom: NewDomain(clusterID), groups: make(map[bft.GroupID]ReplicaVerifier, len(groups)),
		admins: make(map[[OwnerSize]byte]ed25519.PublicKey, len(admins))}
	for g, v := range groups {
		if v.N()%3 != 1 {
			return nil, fmt.Errorf("%w: group %d has %d replicas, want 3f+1", ErrKeys, g, v.N())
		}
		k.groups[g] = v
		k.ids = append(k.ids, g)
	}
	slices.Sort(k.ids)
	for i, a := range admins {
		if err := auth.CheckPublicKey(a); err != nil {
			return nil, fmt.Errorf("%w: admin %d: %w", ErrKeys, i, err)
		}
		var raw [OwnerSize]byte
		copy(raw[:], a)
		k.admins[raw] = a
	}
	return k, nil
}

// KeysFromCluster returns the Keys of a cluster file: every group's replica
// keys and the admin keys.
func KeysFromCluster(c *cluster.Cluster) (*Keys, error) {
	groups := make(map[bft.GroupID][]ed25519.PublicKey, len(c.Groups))
	for _, g := range c.Groups {
		keys, err := c.GroupKeys(bft.GroupID(g.ID))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrKeys, err)
		}
		groups[bft.GroupID(g.ID)] = keys
	}
	admins, err := c.AdminKeys()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeys, err)
	}
	return NewKeys(c.ClusterID, groups, admins)
}

// Domain returns the cluster's signing domain.
func (k *Keys) Domain() *Domain { return k.dom }

// ClusterID returns the cluster id.
func (k *Keys) ClusterID() string { return k.dom.clusterID }

// Groups returns the cluster's groups in increasing order.
func (k *Keys) Groups() []bft.GroupID { return slices.Clone(k.ids) }

// HasGroup reports whether g is a group of the cluster.
func (k *Keys) HasGroup(g bft.GroupID) bool { _, ok := k.groups[g]; return ok }

// Quorum returns f+1 for group g: the number of distinct replicas whose
// matching signatures vouch for the group.
func (k *Keys) Quorum(g bft.GroupID) (int, bool) {
	v, ok := k.groups[g]
	if !ok {
		return 0, false
	}
	return (v.N()-1)/3 + 1, true
}

// ReplicaKey returns the public key of replica r of group g (false for a
// group whose verifier holds no Ed25519 keys).
func (k *Keys) ReplicaKey(g bft.GroupID, r bft.ReplicaID) (ed25519.PublicKey, bool) {
	v, ok := k.groups[g].(interface {
		ReplicaKey(bft.ReplicaID) (ed25519.PublicKey, bool)
	})
	if !ok {
		return nil, false
	}
	return v.ReplicaKey(r)
}

// checkSigsShape checks a group part without verifying signatures: a known
// group, exactly f+1 signatures (more would only cost every replica
// verification time), from distinct replicas of the group.
func (k *Keys) checkSigsShape(gs *GroupSigs) (ReplicaVerifier, error) {
	v, ok := k.groups[gs.Group]
	if !ok {
		return nil, fmt.Errorf("%w: no group %d in the cluster", ErrInvalid, gs.Group)
	}
	q := (v.N()-1)/3 + 1
	if len(gs.Sigs) != q {
		return nil, fmt.Errorf("%w: group %d: %d signatures, want f+1 = %d", ErrInvalid, gs.Group, len(gs.Sigs), q)
	}
	for i, s := range gs.Sigs {
		if int(s.Replica) >= v.N() {
			return nil, fmt.Errorf("%w: group %d has no replica %d", ErrInvalid, gs.Group, s.Replica)
		}
		if i > 0 && s.Replica <= gs.Sigs[i-1].Replica {
			return nil, fmt.Errorf("%w: group %d: replicas not distinct and increasing", ErrInvalid, gs.Group)
		}
	}
	return v, nil
}

func (k *Keys) verifySigs(gs *GroupSigs, msg []byte, what string) error {
	v, err := k.checkSigsShape(gs)
	if err != nil {
		return err
	}
	for _, s := range gs.Sigs {
		if k.sink != nil {
			err = k.sink.add(gs.Group, v, s.Replica, msg, s.Sig)
		} else {
			err = v.VerifyReplica(s.Replica, msg, s.Sig)
		}
		if err != nil {
			return fmt.Errorf("%w: %s of group %d: %w", ErrSignature, what, gs.Group, err)
		}
	}
	return nil
}

// VerifyVotes checks f+1 signed votes dec of group gs.Group on transaction
// id: distinct members of the group, valid signatures (K2, T3, E10).
func (k *Keys) VerifyVotes(id TxnID, dec Decision, gs *GroupSigs) error {
	return k.verifySigs(gs, k.dom.VoteBytes(id, gs.Group, dec), dec.String()+" votes")
}

// VerifyAcks checks f+1 signed acknowledgements of group gs.Group that
// transaction id terminated there with outcome dec (W2).
func (k *Keys) VerifyAcks(id TxnID, dec Decision, gs *GroupSigs) error {
	return k.verifySigs(gs, k.dom.AckBytes(id, gs.Group, dec), dec.String()+" acknowledgements")
}

// VerifyCertificate checks a certificate for transaction t with id (E10):
// COMMIT holds f+1 signed commit votes of every declared group and no other;
// ABORT holds f+1 signed abort votes of one declared group. The part of
// group skip (if skipSelf) is checked for shape only: a replica compares its
// own group's part with its record instead (E10), so the client needs no
// signatures a replica would not check. Clients pass skipSelf false.
func (k *Keys) VerifyCertificate(t *Txn, id TxnID, c *Certificate, skip bft.GroupID, skipSelf bool) error {
	if !c.Decision.valid() {
		return fmt.Errorf("%w: certificate decision %d", ErrInvalid, c.Decision)
	}
	switch c.Decision {
	case Commit:
		if len(c.Parts) != len(t.Groups) {
			return fmt.Errorf("%w: COMMIT certificate with %d parts for %d groups", ErrInvalid, len(c.Parts), len(t.Groups))
		}
		for i := range c.Parts {
			if c.Parts[i].Group != t.Groups[i].Group {
				return fmt.Errorf("%w: COMMIT certificate part %d is group %d, want %d", ErrInvalid, i, c.Parts[i].Group, t.Groups[i].Group)
			}
		}
	case Abort:
		if len(c.Parts) != 1 {
			return fmt.Errorf("%w: ABORT certificate with %d parts, want one group's", ErrInvalid, len(c.Parts))
		}
		if _, ok := t.Involves(c.Parts[0].Group); !ok {
			return fmt.Errorf("%w: ABORT certificate of group %d, not involved", ErrInvalid, c.Parts[0].Group)
		}
	}
	for i := range c.Parts {
		p := &c.Parts[i]
		if skipSelf && p.Group == skip {
			if _, err := k.checkSigsShape(p); err != nil {
				return err
			}
			continue
		}
		if err := k.VerifyVotes(id, c.Decision, p); err != nil {
			return err
		}
	}
	return nil
}

// VerifyProof checks a termination proof for transaction t with id sent to
// group self (W2): f+1 signed acknowledgements of outcome dec from every
// declared group other than self, in group order.
func (k *Keys) VerifyProof(t *Txn, id TxnID, dec Decision, acks []GroupSigs, self bft.GroupID) error {
	if !dec.valid() {
		return fmt.Errorf("%w: proof outcome %d", ErrInvalid, dec)
	}
	j := 0
	for _, gv := range t.Groups {
		if gv.Group == self {
			continue
		}
		if j >= len(acks) || acks[j].Group != gv.Group {
			return fmt.Errorf("%w: proof lacks the acknowledgements of group %d", ErrInvalid, gv.Group)
		}
		if err := k.VerifyAcks(id, dec, &acks[j]); err != nil {
			return err
		}
		j++
	}
	if j != len(acks) {
		return fmt.Errorf("%w: proof carries acknowledgements of groups not involved or of the receiver", ErrInvalid)
	}
	return nil
}

// VerifyAdmin checks an admin's signature over metadata transaction id (M5).
func (k *Keys) VerifyAdmin(id TxnID, a *AdminSig) error {
	pub, ok := k.admins[a.Key]
	if !ok {
		return fmt.Errorf("%w: admin key %x is not listed in the cluster", ErrSignature, a.Key[:4])
	}
	if !ed25519.Verify(pub, k.dom.AdminBytes(id), a.Sig[:]) {
		return fmt.Errorf("%w: admin signature by %x", ErrSignature, a.Key[:4])
	}
	return nil
}

// SignAdmin signs metadata transaction id with an admin key (M5).
func SignAdmin(d *Domain, id TxnID, priv ed25519.PrivateKey) *AdminSig {
	a := &AdminSig{}
	copy(a.Key[:], priv.Public().(ed25519.PublicKey))
	copy(a.Sig[:], ed25519.Sign(priv, d.AdminBytes(id)))
	return a
}
