// Package txn holds the public types of the Augustus transaction protocol
// (DESIGN.md §4, ../shared/txn.md): short transactions and their builder,
// transaction ids, outcomes and typed abort reasons, and the wire formats of
// every call a client sends to a group and every result a group returns.
//
// Canonical encodings. A transaction's id is the SHA-256 of a domain tag and
// its canonical encoding (T2); calls, results, certificates and records use
// the same strict codec (internal/wire): minimal varints, length-prefixed
// byte strings, sorted and distinct groups and replicas, no trailing bytes.
// Every decoder accepts exactly what its encoder produces, so
// decode(encode(x)) = x and encode(decode(b)) = b for every accepted b; the
// decoders are fuzzed with that property.
//
// Calls (client → group), see Call: a transaction (from its owner, as a
// relay with f+1 signed votes of one group, or as a copy answered from
// records, T3), an outcome with its certificate (E10), the owner's release of
// a read-only transaction (E8), a termination proof (W2) and a watermark
// query (W3). Results (group → client), see Result: a vote with its typed
// reason, read results and the owner's watermark; an acknowledgement; a
// queued reply (M4); a refusal; a proof acknowledgement; a query answer.
//
// Signatures. Votes of multi-group transactions and acknowledgements of
// certificates are signed by each replica's Ed25519 key over bytes built by
// Domain (distinct tags for votes, acknowledgements and admin signatures,
// each with the cluster id). A result says in its header whether it must be
// signed; Domain.SignBytes (or SignBytes) turns a result into the bytes to
// sign or verify, so the replica runtime and the group client agree. Keys
// verifies certificates, relays, proofs and admin signatures.
//
// Imports: pkg/bft (ids) and pkg/bft/auth (signature verification) only —
// no storage, network or metrics, so clients and replicas share it
// (internal/archtest).
package txn
