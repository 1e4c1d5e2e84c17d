package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/edwards25519"
	"github.com/stretchr/testify/require"
)

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	priv, err := GenerateKey()
	require.NoError(t, err)
	return priv
}

func TestPrivateKeyFileRoundTripsWithMode0600(t *testing.T) {
	priv := newKey(t)
	path := filepath.Join(t.TempDir(), "r0.key")
	require.NoError(t, WritePrivateKeyFile(path, priv))

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	got, err := LoadPrivateKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, priv, got)

	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is removed")
}

func TestPrivateKeyFileIsPKCS8PEM(t *testing.T) {
	priv := newKey(t)
	path := filepath.Join(t.TempDir(), "r0.key")
	require.NoError(t, WritePrivateKeyFile(path, priv))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	require.Equal(t, "PRIVATE KEY", block.Type)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, priv, key)
}

func TestWritePrivateKeyFileRefusesToOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r0.key")
	first := newKey(t)
	require.NoError(t, WritePrivateKeyFile(path, first))
	err := WritePrivateKeyFile(path, newKey(t))
	require.ErrorIs(t, err, fs.ErrExist)
	got, err := LoadPrivateKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, first, got, "the existing key is untouched")
}

func TestLoadPrivateKeyFileRefusesGroupOrOtherAccess(t *testing.T) {
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o606, 0o700 | 0o004} {
		path := filepath.Join(t.TempDir(), "r0.key")
		require.NoError(t, WritePrivateKeyFile(path, newKey(t)))
		require.NoError(t, os.Chmod(path, mode))
		_, err := LoadPrivateKeyFile(path)
		require.ErrorIs(t, err, ErrInsecureKeyFile, "mode %#o", mode)
		require.ErrorContains(t, err, "chmod 600")
	}
}

func TestLoadPrivateKeyFileAcceptsOwnerOnlyModes(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o400} {
		path := filepath.Join(t.TempDir(), "r0.key")
		priv := newKey(t)
		require.NoError(t, WritePrivateKeyFile(path, priv))
		require.NoError(t, os.Chmod(path, mode))
		got, err := LoadPrivateKeyFile(path)
		require.NoError(t, err, "mode %#o", mode)
		require.Equal(t, priv, got)
	}
}

func TestLoadPrivateKeyFileRefusesADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r0.key")
	require.NoError(t, os.Mkdir(dir, 0o700))
	_, err := LoadPrivateKeyFile(dir)
	require.ErrorIs(t, err, ErrInsecureKeyFile)
}

func TestLoadPrivateKeyFileReportsAMissingFile(t *testing.T) {
	_, err := LoadPrivateKeyFile(filepath.Join(t.TempDir(), "nope.key"))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func writeRaw(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "k.key")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

func TestLoadPrivateKeyFileRejectsMalformedContents(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKCS8PrivateKey(ecKey)
	require.NoError(t, err)
	good, err := MarshalPrivateKey(newKey(t))
	require.NoError(t, err)

	cases := map[string][]byte{
		"empty":              nil,
		"not pem":            []byte("hello"),
		"wrong block type":   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}),
		"not an ed25519 key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}),
		"garbage der":        pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}}),
		"trailing data":      append(append([]byte{}, good...), "junk"...),
		"two blocks":         append(append([]byte{}, good...), good...),
		"pem headers":        pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: ecDER}),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadPrivateKeyFile(writeRaw(t, data))
			require.ErrorIs(t, err, ErrMalformedKey)
		})
	}
}

func TestPublicKeyEncodingRoundTrips(t *testing.T) {
	priv := newKey(t)
	pub := PublicKeyOf(priv)
	s := EncodePublicKey(pub)
	require.Len(t, s, 44)
	got, err := ParsePublicKey(s)
	require.NoError(t, err)
	require.Equal(t, pub, got)
}

// nonCanonicalEncoding returns an encoding with y >= p of a valid point that
// is not of small order.
func nonCanonicalEncoding(t *testing.T) []byte {
	t.Helper()
	// p = 2^255 - 19; y + p for small y fits in 255 bits.
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	for y := int64(2); y < 19; y++ {
		canon := make([]byte, 32)
		canon[0] = byte(y)
		pt, err := new(edwards25519.Point).SetBytes(canon)
		if err != nil || new(edwards25519.Point).MultByCofactor(pt).Equal(edwards25519.NewIdentityPoint()) == 1 {
			continue
		}
		v := new(big.Int).Add(p, big.NewInt(y))
		be := v.FillBytes(make([]byte, 32))
		le := make([]byte, 32)
		for i := range be {
			le[i] = be[31-i]
		}
		_, err = new(edwards25519.Point).SetBytes(le)
		require.NoError(t, err, "edwards25519 accepts the non-canonical encoding")
		return le
	}
	t.Fatal("no small y decodes to a point")
	return nil
}

// torsionPoints returns encodings of points of small order other than the
// identity, computed rather than remembered: for a random point P, P minus
// its prime-order component is a torsion point.
func torsionPoints(t *testing.T) [][]byte {
	t.Helper()
	eight := make([]byte, 32)
	eight[0] = 8
	s8, err := new(edwards25519.Scalar).SetCanonicalBytes(eight)
	require.NoError(t, err)
	inv8 := new(edwards25519.Scalar).Invert(s8)
	seen := map[string]bool{}
	var out [][]byte
	for i := 0; i < 200 && len(out) < 4; i++ {
		var b [32]byte
		_, _ = rand.Read(b[:])
		p, err := new(edwards25519.Point).SetBytes(b[:])
		if err != nil {
			continue
		}
		prime := new(edwards25519.Point).ScalarMult(inv8, new(edwards25519.Point).MultByCofactor(p))
		tor := new(edwards25519.Point).Subtract(p, prime)
		if tor.Equal(edwards25519.NewIdentityPoint()) == 1 || seen[string(tor.Bytes())] {
			continue
		}
		seen[string(tor.Bytes())] = true
		out = append(out, tor.Bytes())
	}
	require.NotEmpty(t, out)
	return out
}

// urlEncodedKey returns a valid key in the URL-safe base64 alphabet, which
// differs from the standard one.
func urlEncodedKey(t *testing.T) string {
	for {
		pub := PublicKeyOf(newKey(t))
		if s := base64.StdEncoding.EncodeToString(pub); strings.ContainsAny(s, "+/") {
			return base64.URLEncoding.EncodeToString(pub)
		}
	}
}

func TestParsePublicKeyRejectsMalformedKeys(t *testing.T) {
	identity := make([]byte, 32)
	identity[0] = 1
	orderTwo := make([]byte, 32) // y = -1 = p - 1
	orderTwo[0] = 0xec
	for i := 1; i < 31; i++ {
		orderTwo[i] = 0xff
	}
	orderTwo[31] = 0x7f
	notOnCurve := make([]byte, 32)
	for y := byte(2); ; y++ {
		notOnCurve[0] = y
		if _, err := new(edwards25519.Point).SetBytes(notOnCurve); err != nil {
			break
		}
	}
	cases := map[string]string{
		"not base64":        "not base64!",
		"url base64":        urlEncodedKey(t),
		"short":             base64.StdEncoding.EncodeToString(make([]byte, 31)),
		"long":              base64.StdEncoding.EncodeToString(make([]byte, 33)),
		"empty":             "",
		"not on the curve":  base64.StdEncoding.EncodeToString(notOnCurve),
		"identity":          base64.StdEncoding.EncodeToString(identity),
		"order two":         base64.StdEncoding.EncodeToString(orderTwo),
		"non-canonical y":   base64.StdEncoding.EncodeToString(nonCanonicalEncoding(t)),
		"unpadded base64":   base64.RawStdEncoding.EncodeToString(PublicKeyOf(newKey(t))),
		"whitespace inside": EncodePublicKey(PublicKeyOf(newKey(t)))[:10] + " " + EncodePublicKey(PublicKeyOf(newKey(t)))[10:],
	}
	for i, tor := range torsionPoints(t) {
		cases["torsion point "+string(rune('a'+i))] = base64.StdEncoding.EncodeToString(tor)
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParsePublicKey(s)
			require.ErrorIs(t, err, ErrMalformedKey)
		})
	}
}

// A decoding error keeps its cause in the chain beside ErrMalformedKey.
func TestKeyDecodingErrorsKeepTheirCause(t *testing.T) {
	_, err := ParsePublicKey("not*base64")
	require.ErrorIs(t, err, ErrMalformedKey)
	var b64 base64.CorruptInputError
	require.ErrorAs(t, err, &b64)

	der := pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: []byte{0x30, 0x03, 0x02, 0x01}})
	_, err = ParsePrivateKey(der)
	require.ErrorIs(t, err, ErrMalformedKey)
	var asn1Err asn1.SyntaxError
	var asn1Struct asn1.StructuralError
	require.True(t, errors.As(err, &asn1Err) || errors.As(err, &asn1Struct), "cause kept: %v", err)
}
