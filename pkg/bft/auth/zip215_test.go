package auth

import (
	"crypto/ed25519"
	"testing"

	"github.com/hdevalence/ed25519consensus"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth/zip215test"
)

// The verifier must accept exactly what the ZIP-215 rules accept
// (ed25519consensus.Verify): every correct replica has to reach the same
// verdict on a Byzantine client's signature, single or batched.
func TestVerifyKeyAgreesWithZIP215(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(rt, "seed")
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		k, err := newVerifyKey(pub)
		if err != nil {
			rt.Fatalf("honest key refused: %v", err)
		}
		msg := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "msg")
		sig := ed25519.Sign(priv, msg)
		switch rapid.IntRange(0, 6).Draw(rt, "mutation") {
		case 0: // none
		case 1:
			i := rapid.IntRange(0, 63).Draw(rt, "byte")
			sig[i] ^= byte(rapid.IntRange(1, 255).Draw(rt, "xor"))
		case 2:
			if len(msg) > 0 {
				msg[rapid.IntRange(0, len(msg)-1).Draw(rt, "msgbyte")] ^= 1
			}
		case 3:
			if nc := nonCanonicalS(sig); nc != nil {
				sig = nc
			}
		case 4:
			sig = rapid.SliceOfN(rapid.Byte(), 0, 70).Draw(rt, "random sig")
		case 5:
			sig[63] |= byte(rapid.IntRange(1, 7).Draw(rt, "high")) << 5
		case 6: // valid by ZIP-215 only
			sig = zip215test.Sign(priv, msg)
		}
		want := ed25519consensus.Verify(pub, msg, sig)
		if got := k.verify(msg, sig); got != want {
			rt.Fatalf("verify = %v, ed25519consensus says %v", got, want)
		}
		if got := VerifySignature(pub, msg, sig); got != want {
			rt.Fatalf("VerifySignature = %v, ed25519consensus says %v", got, want)
		}
	})
}

// A signature that crypto/ed25519 rejects and ZIP-215 accepts (R with a
// small-order component) is accepted by every verifier of this package:
// VerifyReplica, VerifyClient, VerifySignature, a Batch alone and in
// company. Were one of them cofactorless, a Byzantine client could make
// such a request valid at some correct replicas and not at others.
func TestZIP215OnlySignatureIsAcceptedByEveryVerifier(t *testing.T) {
	g := newGroup(t, 4)
	clients := newGroup(t, 1)
	msg := []byte("a request's canonical bytes")
	sig := zip215test.Sign(g.privs[1], msg)
	csig := zip215test.Sign(clients.privs[0], msg)
	require.False(t, ed25519.Verify(g.pubs[1], msg, sig), "crypto/ed25519 rejects it")
	require.True(t, ed25519consensus.Verify(g.pubs[1], msg, sig), "ZIP-215 accepts it")
	require.True(t, VerifySignature(g.pubs[1], msg, sig))

	for _, cache := range []int{-1, 0} {
		fresh := func() *Verifier {
			v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsListed, Clients: clients.pubs, SignatureCache: cache})
			require.NoError(t, err)
			return v
		}
		v := fresh()
		require.NoError(t, v.VerifyReplica(1, msg, sig))
		require.NoError(t, v.VerifyClient(bft.ClientID(clients.pubs[0]), msg, csig))

		alone := fresh().NewBatch()
		require.NoError(t, alone.VerifyReplica(1, msg, sig))
		require.Equal(t, 1, alone.Len())
		require.True(t, alone.Verify(), "a batch of one")

		mixed := fresh().NewBatch()
		require.NoError(t, mixed.VerifyReplica(1, msg, sig))
		require.NoError(t, mixed.VerifyClient(bft.ClientID(clients.pubs[0]), msg, csig))
		require.NoError(t, mixed.VerifyReplica(2, msg, g.signers[2].Sign(msg)))
		require.Equal(t, 3, mixed.Len())
		require.True(t, mixed.Verify(), "a batch of three")
	}
}

// A batch with one bad signature fails as a whole; the signatures of a
// batch that verified are remembered, so they are not recorded again.
func TestBatchFailsOnOneBadSignatureAndRemembersAGoodBatch(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	msgs := [][]byte{[]byte("prepare 1"), []byte("prepare 2"), []byte("commit 1")}
	bad := v.NewBatch()
	for i, m := range msgs {
		sig := g.signers[i].Sign(m)
		if i == 1 {
			sig[5] ^= 1
		}
		require.NoError(t, bad.VerifyReplica(bft.ReplicaID(i), m, sig))
	}
	require.False(t, bad.Verify())
	require.Zero(t, v.cache.len(), "nothing remembered from a failed batch")

	good := v.NewBatch()
	for i, m := range msgs {
		require.NoError(t, good.VerifyReplica(bft.ReplicaID(i), m, g.signers[i].Sign(m)))
		require.NoError(t, good.VerifyReplica(bft.ReplicaID(i), m, g.signers[i].Sign(m)), "a duplicate is recorded once")
	}
	require.Equal(t, 3, good.Len())
	require.True(t, good.Verify())
	require.Equal(t, 3, v.cache.len())

	again := v.NewBatch()
	for i, m := range msgs {
		require.NoError(t, again.VerifyReplica(bft.ReplicaID(i), m, g.signers[i].Sign(m)))
	}
	require.Zero(t, again.Len(), "verified once, never again")
	require.True(t, again.Verify())
	require.ErrorIs(t, again.VerifyReplica(9, msgs[0], nil), ErrUnknownReplica)
}

// The cache forgets the oldest signatures first and stays within bounds.
func TestSignatureCacheForgetsTheOldestFirst(t *testing.T) {
	c := newSigCache(2)
	k := func(b byte) sigKey { return sigKey{b} }
	c.add(k(1))
	c.add(k(2))
	c.add(k(2))
	require.True(t, c.has(k(1)))
	c.add(k(3))
	require.False(t, c.has(k(1)))
	require.True(t, c.has(k(2)))
	require.True(t, c.has(k(3)))
	require.Equal(t, 2, c.len())
}
