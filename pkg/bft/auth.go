package bft

// Signer signs canonical bytes (see signbytes.go) with this replica's key.
// Implementations must be deterministic (Ed25519 is) so that a replica that
// re-creates a message after a restart produces the identical message.
type Signer interface {
	Sign(msg []byte) []byte
}

// Verifier checks signatures of the group's replicas and of clients. Only
// the Checker uses it: the node never verifies anything itself.
type Verifier interface {
	// VerifyReplica reports whether sig is replica id's signature of msg.
	VerifyReplica(id ReplicaID, msg, sig []byte) error
	// VerifyClient reports whether sig is the client's signature of msg and
	// whether the client may submit requests at all (cluster policy).
	VerifyClient(client ClientID, msg, sig []byte) error
}
