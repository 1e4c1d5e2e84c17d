package auth

import (
	"crypto/ed25519"
	"fmt"
	"testing"
)

// The message sizes are what pkg/bft signs: a PRE-PREPARE's canonical bytes
// are about 100 bytes, a request's about 120; 256 covers both.
const benchMsgSize = 256

func BenchmarkSign(b *testing.B) {
	s, err := NewSigner(newKey(b))
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, benchMsgSize)
	b.ReportAllocs()
	for b.Loop() {
		s.Sign(msg)
	}
}

func benchVerifier(b *testing.B, policy ClientPolicy) (*Verifier, group, group) {
	b.Helper()
	g := newGroup(b, 4)
	clients := newGroup(b, 1)
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: policy, Clients: clients.pubs})
	if err != nil {
		b.Fatal(err)
	}
	return v, g, clients
}

func BenchmarkVerifyReplica(b *testing.B) {
	v, g, _ := benchVerifier(b, ClientsListed)
	msg := make([]byte, benchMsgSize)
	sig := g.signers[2].Sign(msg)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.VerifyReplica(2, msg, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyReplicaParallel runs on every core, as the replica driver's
// verification pool does.
func BenchmarkVerifyReplicaParallel(b *testing.B) {
	v, g, _ := benchVerifier(b, ClientsListed)
	msg := make([]byte, benchMsgSize)
	sig := g.signers[2].Sign(msg)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := v.VerifyReplica(2, msg, sig); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkVerifyClient(b *testing.B) {
	for _, policy := range []ClientPolicy{ClientsListed, ClientsOpen} {
		b.Run(policy.String(), func(b *testing.B) {
			v, _, clients := benchVerifier(b, policy)
			msg := make([]byte, benchMsgSize)
			s := clients.signers[0]
			sig := s.Sign(msg)
			id := s.ClientID()
			b.ReportAllocs()
			for b.Loop() {
				if err := v.VerifyClient(id, msg, sig); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStdlibVerify is crypto/ed25519.Verify, which decodes the key on
// every call: the baseline for the pre-decoded keys of the Verifier.
func BenchmarkStdlibVerify(b *testing.B) {
	priv := newKey(b)
	pub := PublicKeyOf(priv)
	msg := make([]byte, benchMsgSize)
	sig := ed25519.Sign(priv, msg)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("bad signature")
		}
	}
}

func BenchmarkDeriveMACKey(b *testing.B) {
	own, peer := newKey(b), PublicKeyOf(newKey(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DeriveMACKey(own, peer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMACKeysDerive is a cache miss on a MACKeys (the own key is
// converted once, at construction).
func BenchmarkMACKeysDerive(b *testing.B) {
	m, err := NewMACKeys(newKey(b), 1)
	if err != nil {
		b.Fatal(err)
	}
	peers := [][]byte{PublicKeyOf(newKey(b)), PublicKeyOf(newKey(b))}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := m.Get(peers[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkMACKeysHit(b *testing.B) {
	m, err := NewMACKeys(newKey(b), 0)
	if err != nil {
		b.Fatal(err)
	}
	peer := PublicKeyOf(newKey(b))
	if _, err := m.Get(peer); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Get(peer); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMAC(b *testing.B) {
	var key MACKey
	key[0] = 1
	for _, size := range []int{256, 4096} {
		msg := make([]byte, size)
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			buf := make([]byte, 0, MACSize)
			for b.Loop() {
				AppendMAC(buf[:0], key, msg)
			}
		})
	}
}

func BenchmarkVerifyMAC(b *testing.B) {
	var key MACKey
	key[0] = 1
	msg := make([]byte, benchMsgSize)
	tag := MAC(key, msg)
	b.ReportAllocs()
	for b.Loop() {
		if err := VerifyMAC(key, msg, tag); err != nil {
			b.Fatal(err)
		}
	}
}
