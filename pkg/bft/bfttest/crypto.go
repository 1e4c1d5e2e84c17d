package bfttest

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Keys are the simulation's signing keys. By default they are HMAC keys —
// a faithful model of signatures for the simulator (only the holder of a
// key can produce a valid tag, any verifier can check it) and fast enough
// for thousands of seeds; with Ed25519 set, real signatures are used.
type Keys struct {
	Ed25519  bool
	replicas []keyPair
	clients  map[bft.ClientID]keyPair
}

type keyPair struct {
	secret []byte
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
}

func newKeyPair(ed bool, label string, i int) keyPair {
	seed := sha256.Sum256([]byte(fmt.Sprintf("augustus-sim-%s-%d", label, i)))
	kp := keyPair{secret: seed[:]}
	if ed {
		kp.priv = ed25519.NewKeyFromSeed(seed[:])
		kp.pub = kp.priv.Public().(ed25519.PublicKey)
	}
	return kp
}

// NewKeys makes keys for n replicas.
func NewKeys(n int, ed bool) *Keys {
	k := &Keys{Ed25519: ed, clients: make(map[bft.ClientID]keyPair)}
	for i := 0; i < n; i++ {
		k.replicas = append(k.replicas, newKeyPair(ed, "replica", i))
	}
	return k
}

// NewClient makes a client key pair and returns its id (32 bytes).
func (k *Keys) NewClient(i int) bft.ClientID {
	kp := newKeyPair(k.Ed25519, "client", i)
	var id bft.ClientID
	if k.Ed25519 {
		id = bft.ClientID(kp.pub)
	} else {
		h := sha256.Sum256(append([]byte("client-id"), kp.secret...))
		id = bft.ClientID(h[:])
	}
	k.clients[id] = kp
	return id
}

func sign(kp keyPair, ed bool, msg []byte) []byte {
	if ed {
		return ed25519.Sign(kp.priv, msg)
	}
	m := hmac.New(sha256.New, kp.secret)
	m.Write(msg)
	return m.Sum(nil)
}

func verify(kp keyPair, ed bool, msg, sig []byte) bool {
	if ed {
		return ed25519.Verify(kp.pub, msg, sig)
	}
	return hmac.Equal(sign(kp, false, msg), sig)
}

// ReplicaSigner returns replica i's signer.
func (k *Keys) ReplicaSigner(i int) bft.Signer { return signer{kp: k.replicas[i], ed: k.Ed25519} }

// ClientSigner returns a client's signer.
func (k *Keys) ClientSigner(c bft.ClientID) bft.Signer {
	return signer{kp: k.clients[c], ed: k.Ed25519}
}

type signer struct {
	kp keyPair
	ed bool
}

func (s signer) Sign(msg []byte) []byte { return sign(s.kp, s.ed, msg) }

var (
	errUnknown = errors.New("unknown signer")
	errBadSig  = errors.New("signature does not verify")
)

// VerifyReplica implements bft.Verifier.
func (k *Keys) VerifyReplica(id bft.ReplicaID, msg, sig []byte) error {
	if int(id) >= len(k.replicas) {
		return errUnknown
	}
	if !verify(k.replicas[id], k.Ed25519, msg, sig) {
		return errBadSig
	}
	return nil
}

// VerifyClient implements bft.Verifier: only clients with keys are allowed.
func (k *Keys) VerifyClient(c bft.ClientID, msg, sig []byte) error {
	kp, ok := k.clients[c]
	if !ok {
		return errUnknown
	}
	if !verify(kp, k.Ed25519, msg, sig) {
		return errBadSig
	}
	return nil
}

// ReplyMAC is the simulation's pairwise reply authenticator: an HMAC under
// a key only the replica and the client share.
func (k *Keys) ReplyMAC(replica int, c bft.ClientID, msg []byte) []byte {
	key := sha256.Sum256(append(append(binary.BigEndian.AppendUint32([]byte("pair"), uint32(replica)), c...), k.replicas[replica].secret...))
	m := hmac.New(sha256.New, key[:])
	m.Write(msg)
	return m.Sum(nil)
}
