package auth

import (
	"fmt"

	"github.com/hdevalence/ed25519consensus"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Batch collects signature checks and verifies them together (ZIP-215 batch
// verification, github.com/hdevalence/ed25519consensus): n signatures cost
// about what 0.6 n single verifications cost once n is 4 or more. It
// implements bft.Verifier so that a bft.Checker can run over it
// (Checker.WithVerifier): VerifyReplica and VerifyClient apply every check
// but the signature's at once — membership, the client policy — and record
// the signature, returning nil; Verify then checks every recorded signature.
// A Checker that passed over a Batch whose Verify returns true has passed;
// if Verify returns false, at least one signature is invalid and the caller
// checks again with the Verifier itself, to learn which (the verdict is the
// same either way: ZIP-215 batch verification accepts exactly when every
// signature passes alone).
//
// Signatures the Verifier's cache holds are not recorded; after a
// successful Verify the batch's are added to it. A Batch is not safe for
// concurrent use; Reset makes it reusable.
type Batch struct {
	v       *Verifier
	entries []batchEntry
	seen    map[sigKey]struct{}
	// malformed is set by a signature that is neither plain nor a
	// well-formed tree signature: Verify then fails, and the caller's
	// checks one by one name it.
	malformed bool
}

type batchEntry struct {
	key      *verifyKey
	msg, sig []byte
	id       sigKey
}

var _ bft.Verifier = (*Batch)(nil)

// NewBatch returns an empty Batch over v's keys and cache.
func (v *Verifier) NewBatch() *Batch {
	return &Batch{v: v, seen: make(map[sigKey]struct{})}
}

// Reset empties the batch, dropping its references to messages.
func (b *Batch) Reset() {
	clear(b.entries)
	b.entries = b.entries[:0]
	clear(b.seen)
	b.malformed = false
}

// Len returns the number of signatures recorded.
func (b *Batch) Len() int { return len(b.entries) }

// VerifyReplica records replica id's signature of msg; it fails at once for
// an unknown replica.
func (b *Batch) VerifyReplica(id bft.ReplicaID, msg, sig []byte) error {
	if uint64(id) >= uint64(len(b.v.replicas)) {
		return fmt.Errorf("%w: replica %d (group of %d)", ErrUnknownReplica, id, len(b.v.replicas))
	}
	b.add(b.v.replicas[id], msg, sig)
	return nil
}

// VerifyClient records the client's signature of msg; it fails at once if
// the policy does not admit the client.
func (b *Batch) VerifyClient(client bft.ClientID, msg, sig []byte) error {
	k, err := b.v.clientKey(client)
	if err != nil {
		return err
	}
	b.add(k, msg, sig)
	return nil
}

func (b *Batch) add(k *verifyKey, msg, sig []byte) {
	// A tree signature is recorded as its root's (sigtree.go), so a batch
	// holding many messages of one tree checks its root once.
	msg, sig, err := TreeRoot(msg, sig)
	if err != nil {
		b.malformed = true
		return
	}
	id := makeSigKey(k.raw[:], msg, sig)
	if _, dup := b.seen[id]; dup || b.v.cache.has(id) {
		return
	}
	b.seen[id] = struct{}{}
	b.entries = append(b.entries, batchEntry{key: k, msg: msg, sig: sig, id: id})
}

// Verify reports whether every recorded signature is valid. One signature is
// checked alone (a batch of one costs more than a single verification).
func (b *Batch) Verify() bool {
	if b.malformed {
		return false
	}
	var ok bool
	switch len(b.entries) {
	case 0:
		return true
	case 1:
		e := &b.entries[0]
		ok = e.key.verify(e.msg, e.sig)
	default:
		bv := ed25519consensus.NewPreallocatedBatchVerifier(len(b.entries))
		for i := range b.entries {
			e := &b.entries[i]
			bv.Add(e.key.pub(), e.msg, e.sig)
		}
		ok = bv.Verify()
	}
	if ok {
		for i := range b.entries {
			b.v.cache.add(b.entries[i].id)
		}
	}
	return ok
}
