// Package auth holds the cryptographic material of Augustus replicas and
// clients: Ed25519 key files, the Signer and Verifier that pkg/bft uses for
// protocol messages and client envelopes, the pairwise HMAC keys (X25519 from
// the two parties' Ed25519 keys) that authenticate replies to clients, and the
// TLS configurations that pin peers to the cluster's replica keys.
//
// Keys. Every replica and client has one Ed25519 key. The private key lives
// in a PKCS#8 PEM file of mode 0600 (LoadPrivateKeyFile refuses a file that
// group or others may access); the public key appears in the cluster file as
// the standard base64 encoding of its 32 raw bytes (EncodePublicKey,
// ParsePublicKey). A client's bft.ClientID is its raw public key as a string.
// Public keys are accepted only in canonical encoding and never of small
// order, so one key has one identity and a pairwise MAC key cannot collapse
// to a constant.
//
// Signatures (DESIGN.md §3). Signer signs with deterministic Ed25519.
// Verifier checks replica and client signatures against keys decoded once, at
// construction: it is safe for concurrent use and does not allocate on the
// success path of a plain signature. Its verification equation is ZIP-215's
// (verifykey.go), which a differential test pins, alone and in a Batch.
// SignTree signs many messages with one signature (a Merkle tree's root,
// sigtree.go); every verifier here accepts such a tree signature of a
// message as well as a plain one, and checks each tree's root once.
//
// Reply MACs. A replica's reply to a client carries HMAC-SHA256 under a key
// that both derive alone: X25519 of one's Ed25519 private key converted to a
// Montgomery scalar and the other's Ed25519 public key converted to Montgomery
// form, then HKDF-SHA256 bound to both public keys. MACKeys caches derived
// keys (bounded LRU) so a replica derives each client's key once.
//
// TLS. Replicas authenticate each other with mutual TLS 1.3 over self-signed
// certificates that carry their Ed25519 keys; there is no CA. A peer is
// accepted when its certificate's key is one the caller accepts (pinning);
// PeerIdentity tells the caller which key it was, and PeerKeys which replica.
//
// This package imports pkg/bft for its id types and interfaces only; it must
// not import the network, storage or metrics layers, and starts no goroutines.
package auth
