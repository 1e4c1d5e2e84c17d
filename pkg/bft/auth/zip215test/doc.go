// Package zip215test makes Ed25519 signatures that the ZIP-215 rules accept
// and crypto/ed25519 rejects, for tests that every verifier of Augustus —
// replicas' and clients', single and batched — treats them alike
// (pkg/bft/auth, verifykey.go). It imports only the standard library and
// filippo.io/edwards25519; never import it outside tests.
package zip215test
