package bfttest

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hdevalence/ed25519consensus"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// Keys are the simulation's signing keys. By default they are HMAC keys —
// a faithful model of signatures for the simulator (only the holder of a
// key can produce a valid tag, any verifier can check it) and fast enough
// for thousands of seeds; with Ed25519 set, real signatures are used.
type Keys struct {
	Ed25519  bool
	group    int
	replicas []keyPair
	clients  *ClientKeys
}

// ClientKeys is the registry of client keys, shared by every group of a
// world (a client talks to many groups with one key).
type ClientKeys struct {
	ed bool
	m  map[bft.ClientID]keyPair
}

// NewClientKeys returns an empty registry.
func NewClientKeys(ed bool) *ClientKeys {
	return &ClientKeys{ed: ed, m: make(map[bft.ClientID]keyPair)}
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

// NewKeys makes keys for the n replicas of group 0 and a new client
// registry.
func NewKeys(n int, ed bool) *Keys { return NewGroupKeys(0, n, ed, nil) }

// NewGroupKeys makes keys for the n replicas of group g, sharing the client
// registry clients (nil: a new one).
func NewGroupKeys(g, n int, ed bool, clients *ClientKeys) *Keys {
	if clients == nil {
		clients = NewClientKeys(ed)
	}
	k := &Keys{Ed25519: ed, group: g, clients: clients}
	label := "replica"
	if g > 0 {
		label = fmt.Sprintf("g%d-replica", g)
	}
	for i := 0; i < n; i++ {
		k.replicas = append(k.replicas, newKeyPair(ed, label, i))
	}
	return k
}

// Clients returns the client registry.
func (k *Keys) Clients() *ClientKeys { return k.clients }

// NewClient makes a client key pair and returns its id (32 bytes).
func (k *Keys) NewClient(i int) bft.ClientID { return k.clients.NewClient(i) }

// NewClient makes a client key pair and returns its id (32 bytes).
func (k *ClientKeys) NewClient(i int) bft.ClientID {
	kp := newKeyPair(k.ed, "client", i)
	var id bft.ClientID
	if k.ed {
		id = bft.ClientID(kp.pub)
	} else {
		h := sha256.Sum256(append([]byte("client-id"), kp.secret...))
		id = bft.ClientID(h[:])
	}
	k.m[id] = kp
	return id
}

func sign(kp keyPair, ed bool, msg []byte) []byte {
	if ed {
		return ed25519.Sign(kp.priv, msg)
	}
	// 64 bytes, the size of an Ed25519 signature: formats with fixed-size
	// signature fields (the transaction layer's certificates) carry it.
	m := hmac.New(sha512.New, kp.secret)
	m.Write(msg)
	return m.Sum(nil)
}

func verify(kp keyPair, ed bool, msg, sig []byte) bool {
	// Tree signatures (pkg/bft/auth, sigtree.go) are checked as their
	// root's, as production does.
	msg, sig, err := auth.TreeRoot(msg, sig)
	if err != nil {
		return false
	}
	if ed {
		// ZIP-215, as production verifies (pkg/bft/auth, verifykey.go).
		return ed25519consensus.Verify(kp.pub, msg, sig)
	}
	return hmac.Equal(sign(kp, false, msg), sig)
}

// ReplicaSigner returns replica i's signer.
func (k *Keys) ReplicaSigner(i int) bft.Signer { return signer{kp: k.replicas[i], ed: k.Ed25519} }

// ClientSigner returns a client's signer.
func (k *Keys) ClientSigner(c bft.ClientID) bft.Signer { return k.clients.Signer(c) }

// Signer returns a client's signer.
func (k *ClientKeys) Signer(c bft.ClientID) bft.Signer {
	return signer{kp: k.m[c], ed: k.ed}
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
	kp, ok := k.clients.m[c]
	if !ok {
		return errUnknown
	}
	if !verify(kp, k.Ed25519, msg, sig) {
		return errBadSig
	}
	return nil
}

// VerifyReplicaSig checks a replica's signature (of a result the
// application signs).
func (k *Keys) VerifyReplicaSig(id bft.ReplicaID, msg, sig []byte) bool {
	return k.VerifyReplica(id, msg, sig) == nil
}

// ReplyMAC is the simulation's pairwise reply authenticator: an HMAC under
// a key only the replica and the client share.
func (k *Keys) ReplyMAC(replica int, c bft.ClientID, msg []byte) []byte {
	key := sha256.Sum256(append(append(binary.BigEndian.AppendUint32([]byte("pair"), uint32(replica)), c...), k.replicas[replica].secret...))
	m := hmac.New(sha256.New, key[:])
	m.Write(msg)
	return m.Sum(nil)
}
