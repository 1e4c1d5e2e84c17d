package auth

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestDeriveMACKeyGivesBothSidesTheSameKey(t *testing.T) {
	replica, client := newKey(t), newKey(t)
	k1, err := DeriveMACKey(replica, PublicKeyOf(client))
	require.NoError(t, err)
	k2, err := DeriveMACKey(client, PublicKeyOf(replica))
	require.NoError(t, err)
	require.Equal(t, k1, k2)
	require.NotEqual(t, MACKey{}, k1)
}

func TestDeriveMACKeyDiffersBetweenPairs(t *testing.T) {
	a, b, c := newKey(t), newKey(t), newKey(t)
	ab, err := DeriveMACKey(a, PublicKeyOf(b))
	require.NoError(t, err)
	ac, err := DeriveMACKey(a, PublicKeyOf(c))
	require.NoError(t, err)
	bc, err := DeriveMACKey(b, PublicKeyOf(c))
	require.NoError(t, err)
	require.NotEqual(t, ab, ac)
	require.NotEqual(t, ab, bc)
	require.NotEqual(t, ac, bc)
}

func TestDeriveMACKeyRejectsInvalidPeerKeys(t *testing.T) {
	own := newKey(t)
	cases := map[string][]byte{
		"short":         make([]byte, 31),
		"non-canonical": nonCanonicalEncoding(t),
	}
	for i, tor := range torsionPoints(t) {
		cases[fmt.Sprintf("torsion %d", i)] = tor
	}
	notOnCurve := make([]byte, 32)
	for y := byte(2); ; y++ {
		notOnCurve[0] = y
		if CheckPublicKey(notOnCurve) != nil {
			break
		}
	}
	cases["not on curve"] = notOnCurve
	for name, peer := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DeriveMACKey(own, peer)
			require.ErrorIs(t, err, ErrMalformedKey)
		})
	}
}

// The converted scalar and point belong to one X25519 key pair: the scalar
// times the base point is the converted public key.
func TestX25519ConversionsFormAKeyPair(t *testing.T) {
	for range 10 {
		priv := newKey(t)
		scalar, err := X25519PrivateKey(priv)
		require.NoError(t, err)
		x, err := ecdh.X25519().NewPrivateKey(scalar)
		require.NoError(t, err)
		u, err := X25519PublicKey(PublicKeyOf(priv))
		require.NoError(t, err)
		require.Equal(t, x.PublicKey().Bytes(), u)
	}
}

// Vector from libsodium's test/default/ed25519_convert.c: the Ed25519 key
// pair of a fixed seed converted with crypto_sign_ed25519_pk_to_curve25519
// and crypto_sign_ed25519_sk_to_curve25519.
func TestX25519ConversionsMatchLibsodium(t *testing.T) {
	seed, _ := hex.DecodeString("421151a459faeade3d247115f94aedae42318124095afabe4d1451a559faedee")
	priv := ed25519.NewKeyFromSeed(seed)
	u, err := X25519PublicKey(PublicKeyOf(priv))
	require.NoError(t, err)
	require.Equal(t, "f1814f0e8ff1043d8a44d25babff3cedcae6c22c3edaa48f857ae70de2baae50", hex.EncodeToString(u))
	s, err := X25519PrivateKey(priv)
	require.NoError(t, err)
	require.Equal(t, "8052030376d47112be7f73ed7a019293dd12ad910b654455798b4667d73de166", hex.EncodeToString(s))
}

func TestMACVerifiesAndTamperingFails(t *testing.T) {
	replica, client := newKey(t), newKey(t)
	k, err := DeriveMACKey(replica, PublicKeyOf(client))
	require.NoError(t, err)
	msg := []byte("reply v=2 t=9 result=ok")
	tag := MAC(k, msg)
	require.Len(t, tag, MACSize)
	require.NoError(t, VerifyMAC(k, msg, tag))

	require.ErrorIs(t, VerifyMAC(k, []byte("reply v=2 t=9 result=no"), tag), ErrBadMAC)
	bad := append([]byte{}, tag...)
	bad[0] ^= 1
	require.ErrorIs(t, VerifyMAC(k, msg, bad), ErrBadMAC)
	require.ErrorIs(t, VerifyMAC(k, msg, tag[:31]), ErrBadMAC)
	require.ErrorIs(t, VerifyMAC(k, msg, nil), ErrBadMAC)

	other, err := DeriveMACKey(replica, PublicKeyOf(newKey(t)))
	require.NoError(t, err)
	require.ErrorIs(t, VerifyMAC(other, msg, tag), ErrBadMAC, "another client's key")
}

func TestAppendMACAppends(t *testing.T) {
	var k MACKey
	k[0] = 7
	out := AppendMAC([]byte("prefix"), k, []byte("m"))
	require.Equal(t, "prefix", string(out[:6]))
	require.Equal(t, MAC(k, []byte("m")), out[6:])
}

func TestMACKeysMatchDeriveMACKey(t *testing.T) {
	replica, client := newKey(t), newKey(t)
	m, err := NewMACKeys(replica, 0)
	require.NoError(t, err)
	want, err := DeriveMACKey(client, PublicKeyOf(replica))
	require.NoError(t, err)
	got, err := m.Get(PublicKeyOf(client))
	require.NoError(t, err)
	require.Equal(t, want, got)
	got, err = m.ForClient(mustSigner(t, client).ClientID())
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 1, m.Len())
}

func mustSigner(t *testing.T, priv ed25519.PrivateKey) *Signer {
	t.Helper()
	s, err := NewSigner(priv)
	require.NoError(t, err)
	return s
}

func TestMACKeysIsBounded(t *testing.T) {
	m, err := NewMACKeys(newKey(t), 3)
	require.NoError(t, err)
	peers := newGroup(t, 5)
	first := map[int]MACKey{}
	for i, pub := range peers.pubs {
		k, err := m.Get(pub)
		require.NoError(t, err)
		first[i] = k
		require.LessOrEqual(t, m.Len(), 3)
	}
	// Evicted keys are derived again, identically.
	for i, pub := range peers.pubs {
		k, err := m.Get(pub)
		require.NoError(t, err)
		require.Equal(t, first[i], k)
	}
	require.Equal(t, 3, m.Len())
}

func TestMACKeysDoesNotCacheErrors(t *testing.T) {
	m, err := NewMACKeys(newKey(t), 3)
	require.NoError(t, err)
	_, err = m.Get(torsionPoints(t)[0])
	require.ErrorIs(t, err, ErrMalformedKey)
	_, err = m.ForClient("short")
	require.ErrorIs(t, err, ErrMalformedKey)
	_, err = m.Get(make([]byte, 40))
	require.ErrorIs(t, err, ErrMalformedKey)
	require.Zero(t, m.Len())
}

func TestMACKeysIsSafeForConcurrentUse(t *testing.T) {
	own := newKey(t)
	m, err := NewMACKeys(own, 4)
	require.NoError(t, err)
	peers := newGroup(t, 6)
	want := make([]MACKey, len(peers.privs))
	for i, p := range peers.privs {
		want[i], err = DeriveMACKey(p, PublicKeyOf(own))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for w := range 6 {
		wg.Go(func() {
			for i := range 30 {
				p := (w + i) % len(peers.pubs)
				k, err := m.Get(peers.pubs[p])
				if err != nil || k != want[p] {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("peer %d: %v", p, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Empty(t, bad)
}

// AppendMAC computes HMAC-SHA256 exactly as crypto/hmac does.
func TestAppendMACIsHMACSHA256(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var key MACKey
		copy(key[:], rapid.SliceOfN(rapid.Byte(), MACKeySize, MACKeySize).Draw(rt, "key"))
		msg := rapid.SliceOfN(rapid.Byte(), 0, 2000).Draw(rt, "msg")
		h := hmac.New(sha256.New, key[:])
		h.Write(msg)
		want := h.Sum(nil)
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "prefix")
		got := AppendMAC(append([]byte(nil), prefix...), key, msg)
		if !bytes.Equal(got, append(append([]byte(nil), prefix...), want...)) {
			rt.Fatalf("AppendMAC = %x, crypto/hmac %x", got, want)
		}
	})
}

func TestMACDoesNotAllocateButItsResult(t *testing.T) {
	var key MACKey
	msg := make([]byte, 200)
	buf := make([]byte, 0, MACSize)
	require.Zero(t, testing.AllocsPerRun(100, func() { AppendMAC(buf[:0], key, msg) }))
	require.NoError(t, VerifyMAC(key, msg, MAC(key, msg)))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = VerifyMAC(key, msg, buf) }))
}
