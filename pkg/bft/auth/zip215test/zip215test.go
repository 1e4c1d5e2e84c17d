package zip215test

import (
	"crypto/ed25519"
	"crypto/sha512"

	"filippo.io/edwards25519"
)

// order2 is the encoding of (0, -1), the point of order 2.
var order2 = func() []byte {
	b := make([]byte, 32)
	b[0] = 0xec
	for i := 1; i < 31; i++ {
		b[i] = 0xff
	}
	b[31] = 0x7f
	return b
}()

// Sign signs msg with priv like Ed25519, except that R carries a component
// of order 2: R = [r]B + T. Then S = r + k·a satisfies the cofactored
// equation [8]([S]B - R - [k]A) = -[8]T = 0 (ZIP-215 accepts) but not the
// cofactorless [S]B = R + [k]A that crypto/ed25519 checks ([S]B - [k]A is
// [r]B, not R).
func Sign(priv ed25519.PrivateKey, msg []byte) []byte {
	h := sha512.Sum512(priv.Seed())
	a, err := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	if err != nil {
		panic(err)
	}
	rh := sha512.New()
	rh.Write(h[32:])
	rh.Write(msg)
	r, err := new(edwards25519.Scalar).SetUniformBytes(rh.Sum(nil))
	if err != nil {
		panic(err)
	}
	t, err := new(edwards25519.Point).SetBytes(order2)
	if err != nil {
		panic(err)
	}
	R := new(edwards25519.Point).ScalarBaseMult(r)
	R.Add(R, t)
	rb := R.Bytes()
	kh := sha512.New()
	kh.Write(rb)
	kh.Write(priv.Public().(ed25519.PublicKey))
	kh.Write(msg)
	k, err := new(edwards25519.Scalar).SetUniformBytes(kh.Sum(nil))
	if err != nil {
		panic(err)
	}
	s := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
	return append(rb, s.Bytes()...)
}
