package bft

import "fmt"

// ReplicaID identifies a replica inside its group: 0..n-1.
type ReplicaID uint32

// GroupID identifies a replica group of the cluster.
type GroupID uint32

// View is a PBFT view number; the primary of view v is v mod n.
type View uint64

// SeqNum is a sequence number assigned to a batch by the primary. 0 is the
// genesis checkpoint; batches start at 1.
type SeqNum uint64

// ClientID is a client's Ed25519 public key, held as a string so it can key maps.
type ClientID string

// String prints a short hex prefix of the key.
func (c ClientID) String() string {
	if len(c) >= 4 {
		return fmt.Sprintf("client-%x", []byte(c[:4]))
	}
	return fmt.Sprintf("client-%x", []byte(c))
}

// Digest is a SHA-256 digest: of a request, a batch or a state.
type Digest [32]byte

// String prints a short hex prefix.
func (d Digest) String() string { return fmt.Sprintf("%x", d[:4]) }

// digestFrom converts a digest from the wire. Callers that get their input
// after the Checker ignore ok: the Checker rejected every digest of another
// length (checkDigestLen).
func digestFrom(b []byte) (Digest, bool) {
	var d Digest
	if len(b) != len(d) {
		return d, false
	}
	copy(d[:], b)
	return d, true
}
