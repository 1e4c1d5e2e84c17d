package auth

import (
	"crypto/ed25519"
	"crypto/sha512"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"
)

// Every signature check of Augustus, single or batched, at replicas and at
// clients, follows the ZIP-215 rules (github.com/hdevalence/ed25519consensus):
// S must be canonical (below the group order), R and A may be any encoding of
// a curve point, and the check is the cofactored equation
// [8]([S]B - R - [k]A) = 0. Batch verification is only consistent with the
// cofactored equation: with crypto/ed25519's cofactorless check for single
// signatures, a signature whose R carries a small-order component is
// rejected alone and accepted in a batch, so a Byzantine client could craft
// a request that some correct replicas accept (batched) and others reject
// (alone, or in a batch with a bad neighbour that sends them back to single
// checks) — and split the group, the "big MAC" attack with signatures
// (DESIGN.md §3). Keys are a separate matter: the Verifier admits only
// canonical, non-small-order keys (CheckPublicKey), the same at every
// replica.

// VerifySignature reports whether sig is a valid Ed25519 signature of msg
// under pub by the ZIP-215 rules, plain or a tree signature (sigtree.go).
// Use it wherever a signature is checked without a Verifier (a client
// checking replicas' signatures of results).
func VerifySignature(pub ed25519.PublicKey, msg, sig []byte) bool {
	msg, sig, err := TreeRoot(msg, sig)
	return err == nil && ed25519consensus.Verify(pub, msg, sig)
}

// verifyKey is an Ed25519 public key decoded once. Decoding a key (a field
// square root) costs about a tenth of a verification; the Verifier checks
// every client envelope and every protocol message, so it keeps keys
// decoded.
type verifyKey struct {
	negA edwards25519.Point // -A
	raw  [PublicKeySize]byte
}

// newVerifyKey decodes pub under the rules of CheckPublicKey.
func newVerifyKey(pub []byte) (*verifyKey, error) {
	a, err := decodePoint(pub)
	if err != nil {
		return nil, err
	}
	k := &verifyKey{}
	k.negA.Negate(a)
	copy(k.raw[:], pub)
	return k, nil
}

// pub returns the key as an ed25519.PublicKey (aliasing k).
func (k *verifyKey) pub() ed25519.PublicKey { return k.raw[:] }

// verify reports whether sig is a valid signature of msg under k by the
// ZIP-215 rules: ed25519consensus.Verify written against a pre-decoded A;
// TestVerifyKeyAgreesWithZIP215 holds the two to the same answers. All
// correct replicas must accept exactly the same signatures, so do not
// change the equation.
func (k *verifyKey) verify(msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize || sig[63]&224 != 0 {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(k.raw[:])
	h.Write(msg)
	var digest [sha512.Size]byte
	hk, err := new(edwards25519.Scalar).SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false // unreachable: the digest has 64 bytes
	}
	// RFC 8032 and ZIP-215 both require S < L.
	s, err := new(edwards25519.Scalar).SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	// ZIP-215: R may be a non-canonical encoding (SetBytes accepts those).
	var r edwards25519.Point
	if _, err := r.SetBytes(sig[:32]); err != nil {
		return false
	}
	// [S]B - [k]A - R, times the cofactor, must be the identity.
	var p edwards25519.Point
	p.VarTimeDoubleScalarBaseMult(hk, &k.negA, s)
	p.Subtract(&p, &r)
	p.MultByCofactor(&p)
	return p.Equal(edwards25519.NewIdentityPoint()) == 1
}
