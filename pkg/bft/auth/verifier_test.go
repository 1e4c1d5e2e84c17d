package auth

import (
	"crypto/ed25519"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
)

type group struct {
	privs   []ed25519.PrivateKey
	pubs    []ed25519.PublicKey
	signers []*Signer
}

func newGroup(t testing.TB, n int) group {
	t.Helper()
	var g group
	for range n {
		priv := newKey(t)
		s, err := NewSigner(priv)
		require.NoError(t, err)
		g.privs = append(g.privs, priv)
		g.pubs = append(g.pubs, PublicKeyOf(priv))
		g.signers = append(g.signers, s)
	}
	return g
}

func TestSignerIsDeterministic(t *testing.T) {
	priv := newKey(t)
	s, err := NewSigner(priv)
	require.NoError(t, err)
	msg := []byte("pre-prepare v=3 s=17")
	require.Equal(t, s.Sign(msg), s.Sign(msg))
	require.Equal(t, ed25519.Sign(priv, msg), s.Sign(msg))
	require.Equal(t, PublicKeyOf(priv), s.PublicKey())
	require.Equal(t, bft.ClientID(PublicKeyOf(priv)), s.ClientID())
}

func TestSignerCopiesItsKey(t *testing.T) {
	priv := newKey(t)
	want := ed25519.Sign(priv, []byte("m"))
	s, err := NewSigner(priv)
	require.NoError(t, err)
	for i := range priv {
		priv[i] = 0
	}
	require.Equal(t, want, s.Sign([]byte("m")))
}

func TestNewSignerRejectsMalformedKeys(t *testing.T) {
	_, err := NewSigner(make([]byte, 10))
	require.ErrorIs(t, err, ErrMalformedKey)
	priv := newKey(t)
	priv[40] ^= 1 // public half no longer matches the seed
	_, err = NewSigner(priv)
	require.ErrorIs(t, err, ErrMalformedKey)
}

func TestVerifyReplicaAcceptsEachReplicasSignature(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	msg := []byte("commit")
	for i, s := range g.signers {
		require.NoError(t, v.VerifyReplica(bft.ReplicaID(i), msg, s.Sign(msg)))
	}
	require.Equal(t, 4, v.N())
}

func TestVerifyReplicaRejectsAnotherReplicasSignature(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	msg := []byte("commit")
	err = v.VerifyReplica(1, msg, g.signers[2].Sign(msg))
	require.ErrorIs(t, err, ErrBadSignature)
}

func TestVerifyReplicaRejectsTamperedMessagesAndSignatures(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	msg := []byte("prepare v=1 s=2")
	sig := g.signers[0].Sign(msg)

	require.ErrorIs(t, v.VerifyReplica(0, []byte("prepare v=1 s=3"), sig), ErrBadSignature)
	for _, i := range []int{0, 31, 32, 63} {
		bad := append([]byte{}, sig...)
		bad[i] ^= 1
		require.ErrorIs(t, v.VerifyReplica(0, msg, bad), ErrBadSignature, "byte %d", i)
	}
	require.ErrorIs(t, v.VerifyReplica(0, msg, sig[:63]), ErrBadSignature)
	require.ErrorIs(t, v.VerifyReplica(0, msg, append(sig, 0)), ErrBadSignature)
	require.ErrorIs(t, v.VerifyReplica(0, msg, nil), ErrBadSignature)
}

func TestVerifyReplicaRejectsUnknownReplica(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	msg := []byte("m")
	err = v.VerifyReplica(4, msg, g.signers[0].Sign(msg))
	require.ErrorIs(t, err, ErrUnknownReplica)
	err = v.VerifyReplica(^bft.ReplicaID(0), msg, g.signers[0].Sign(msg))
	require.ErrorIs(t, err, ErrUnknownReplica)
}

func TestVerifyClientUnderListedPolicyAdmitsOnlyListedClients(t *testing.T) {
	g := newGroup(t, 4)
	clients := newGroup(t, 2)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsListed, Clients: clients.pubs})
	require.NoError(t, err)
	msg := []byte("envelope")
	for i, s := range clients.signers {
		require.NoError(t, v.VerifyClient(s.ClientID(), msg, s.Sign(msg)), "client %d", i)
	}
	stranger := newGroup(t, 1).signers[0]
	err = v.VerifyClient(stranger.ClientID(), msg, stranger.Sign(msg))
	require.ErrorIs(t, err, ErrClientNotAllowed)
	// A replica is not a client unless listed.
	err = v.VerifyClient(g.signers[0].ClientID(), msg, g.signers[0].Sign(msg))
	require.ErrorIs(t, err, ErrClientNotAllowed)
}

func TestVerifyClientUnderOpenPolicyAdmitsAnyWellFormedKey(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen, OpenKeyCache: 2})
	require.NoError(t, err)
	msg := []byte("envelope")
	// More clients than the cache holds, twice round: evictions do not
	// change answers.
	clients := newGroup(t, 5)
	for range 2 {
		for _, s := range clients.signers {
			require.NoError(t, v.VerifyClient(s.ClientID(), msg, s.Sign(msg)))
			require.ErrorIs(t, v.VerifyClient(s.ClientID(), []byte("other"), s.Sign(msg)), ErrBadSignature)
		}
	}
	require.LessOrEqual(t, v.open.len(), 2)
}

func TestVerifyClientRejectsMalformedClientIDs(t *testing.T) {
	g := newGroup(t, 4)
	for _, policy := range []ClientPolicy{ClientsListed, ClientsOpen} {
		v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: policy})
		require.NoError(t, err)
		sig := make([]byte, 64)
		require.ErrorIs(t, v.VerifyClient("short", []byte("m"), sig), ErrMalformedKey, policy.String())
		require.ErrorIs(t, v.VerifyClient(bft.ClientID(make([]byte, 33)), []byte("m"), sig), ErrMalformedKey, policy.String())
	}
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	for _, tor := range torsionPoints(t) {
		require.ErrorIs(t, v.VerifyClient(bft.ClientID(tor), []byte("m"), make([]byte, 64)), ErrMalformedKey)
	}
	require.ErrorIs(t, v.VerifyClient(bft.ClientID(nonCanonicalEncoding(t)), []byte("m"), make([]byte, 64)), ErrMalformedKey)
}

func TestNewVerifierRejectsBadConfigurations(t *testing.T) {
	g := newGroup(t, 4)
	tor := torsionPoints(t)[0]
	cases := map[string]VerifierConfig{
		"no replicas":       {Policy: ClientsOpen},
		"unknown policy":    {Replicas: g.pubs},
		"malformed replica": {Replicas: []ed25519.PublicKey{g.pubs[0], tor}, Policy: ClientsOpen},
		"duplicate replica": {Replicas: []ed25519.PublicKey{g.pubs[0], g.pubs[1], g.pubs[0]}, Policy: ClientsOpen},
		"malformed client":  {Replicas: g.pubs, Policy: ClientsListed, Clients: []ed25519.PublicKey{make([]byte, 5)}},
		"client is replica": {Replicas: g.pubs, Policy: ClientsListed, Clients: []ed25519.PublicKey{g.pubs[2]}},
		"duplicate client":  {Replicas: g.pubs[:3], Policy: ClientsListed, Clients: []ed25519.PublicKey{g.pubs[3], g.pubs[3]}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewVerifier(cfg)
			require.Error(t, err)
		})
	}
}

func TestParseClientPolicyKnowsListedAndOpen(t *testing.T) {
	p, err := ParseClientPolicy("listed")
	require.NoError(t, err)
	require.Equal(t, ClientsListed, p)
	p, err = ParseClientPolicy("open")
	require.NoError(t, err)
	require.Equal(t, ClientsOpen, p)
	require.Equal(t, "open", p.String())
	_, err = ParseClientPolicy("Open")
	require.ErrorContains(t, err, "unknown client policy")
}

func TestVerifierReplicaKeyReturnsKeysInOrder(t *testing.T) {
	g := newGroup(t, 4)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	for i, pub := range g.pubs {
		got, ok := v.ReplicaKey(bft.ReplicaID(i))
		require.True(t, ok)
		require.Equal(t, pub, got)
	}
	_, ok := v.ReplicaKey(4)
	require.False(t, ok)
}

func TestVerifierIsSafeForConcurrentUse(t *testing.T) {
	g := newGroup(t, 4)
	clients := newGroup(t, 8)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen, OpenKeyCache: 3})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				msg := fmt.Appendf(nil, "w%d-%d", w, i)
				s := clients.signers[(w+i)%len(clients.signers)]
				if err := v.VerifyClient(s.ClientID(), msg, s.Sign(msg)); err != nil {
					errs <- err
				}
				r := (w + i) % 4
				if err := v.VerifyReplica(bft.ReplicaID(r), msg, g.signers[r].Sign(msg)); err != nil {
					errs <- err
				}
				if err := v.VerifyReplica(bft.ReplicaID((r+1)%4), msg, g.signers[r].Sign(msg)); err == nil {
					errs <- fmt.Errorf("forged signature accepted")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestVerifyDoesNotAllocateOnSuccess(t *testing.T) {
	g := newGroup(t, 4)
	clients := newGroup(t, 1)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsListed, Clients: clients.pubs})
	require.NoError(t, err)
	msg := make([]byte, 256)
	sig := g.signers[1].Sign(msg)
	csig := clients.signers[0].Sign(msg)
	cid := clients.signers[0].ClientID()
	require.Zero(t, testing.AllocsPerRun(20, func() {
		if v.VerifyReplica(1, msg, sig) != nil {
			panic("bad")
		}
	}))
	require.Zero(t, testing.AllocsPerRun(20, func() {
		if v.VerifyClient(cid, msg, csig) != nil {
			panic("bad")
		}
	}))
	open, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsOpen})
	require.NoError(t, err)
	require.NoError(t, open.VerifyClient(cid, msg, csig)) // caches the key
	require.Zero(t, testing.AllocsPerRun(20, func() {
		if open.VerifyClient(cid, msg, csig) != nil {
			panic("bad")
		}
	}))
}

// groupOrder is l, the order of the prime-order subgroup.
var groupOrder, _ = new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)

// nonCanonicalS returns sig with S replaced by S + l when that still fits in
// 253 bits (so the high-bits check does not catch it first), else nil.
func nonCanonicalS(sig []byte) []byte {
	le := sig[32:]
	be := make([]byte, 32)
	for i := range le {
		be[i] = le[31-i]
	}
	s := new(big.Int).SetBytes(be)
	s.Add(s, groupOrder)
	if s.BitLen() > 253 {
		return nil
	}
	be = s.FillBytes(make([]byte, 32))
	out := append([]byte{}, sig[:32]...)
	for i := range be {
		out = append(out, be[31-i])
	}
	return out
}

func TestVerifyKeyRejectsNonCanonicalS(t *testing.T) {
	priv := newKey(t)
	k, err := newVerifyKey(PublicKeyOf(priv))
	require.NoError(t, err)
	found := 0
	for i := 0; found < 3 && i < 1000; i++ {
		msg := fmt.Appendf(nil, "m%d", i)
		sig := ed25519.Sign(priv, msg)
		nc := nonCanonicalS(sig)
		if nc == nil {
			continue
		}
		found++
		require.True(t, k.verify(msg, sig))
		require.False(t, k.verify(msg, nc), "S+l is the same scalar but not canonical")
		require.False(t, ed25519.Verify(PublicKeyOf(priv), msg, nc))
	}
	require.Positive(t, found)
}
