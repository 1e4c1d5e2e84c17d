package auth

import (
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/subtle"

	"filippo.io/edwards25519"
)

// verifyKey is an Ed25519 public key decoded once. crypto/ed25519.Verify
// decodes the key (a field square root, about a tenth of a verification) on
// every call; the Verifier checks every client envelope and every protocol
// message, so it keeps keys decoded.
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

// verify reports whether sig is a valid Ed25519 signature of msg under k.
// It is the verification of crypto/ed25519 (RFC 8032 §5.1.7, cofactorless:
// [S]B = R + [k]A checked as the encoding of [k](-A) + [S]B equal to R, with
// S canonical), written against a pre-decoded A; TestVerifyKeyAgreesWithStdlib
// holds the two to the same answers. All correct replicas must accept
// exactly the same signatures, so do not change the equation.
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
	s, err := new(edwards25519.Scalar).SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	var r edwards25519.Point
	r.VarTimeDoubleScalarBaseMult(hk, &k.negA, s)
	// Not secret, but constant time costs nothing here.
	return subtle.ConstantTimeCompare(sig[:32], r.Bytes()) == 1
}
