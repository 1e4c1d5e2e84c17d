package auth

import (
	"crypto/ed25519"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
)

// ClientPolicy decides which clients may submit requests.
type ClientPolicy uint8

const (
	// ClientsListed admits only the clients whose keys are listed.
	ClientsListed ClientPolicy = iota + 1
	// ClientsOpen admits any client with a well-formed key; the signature
	// still proves the request comes from the holder of that key.
	ClientsOpen
)

// Policy names in the cluster file.
const (
	PolicyListed = "listed"
	PolicyOpen   = "open"
)

// ParseClientPolicy parses "listed" or "open".
func ParseClientPolicy(s string) (ClientPolicy, error) {
	switch s {
	case PolicyListed:
		return ClientsListed, nil
	case PolicyOpen:
		return ClientsOpen, nil
	}
	return 0, fmt.Errorf("auth: unknown client policy %q (want %q or %q)", s, PolicyListed, PolicyOpen)
}

// String returns the cluster-file name of the policy.
func (p ClientPolicy) String() string {
	switch p {
	case ClientsListed:
		return PolicyListed
	case ClientsOpen:
		return PolicyOpen
	}
	return fmt.Sprintf("ClientPolicy(%d)", uint8(p))
}

// DefaultOpenKeyCache is the number of decoded client keys a Verifier with
// the open policy keeps.
const DefaultOpenKeyCache = 4096

// VerifierConfig describes the keys a Verifier trusts.
type VerifierConfig struct {
	// Replicas are the group's replica keys in ReplicaID order.
	Replicas []ed25519.PublicKey
	// Policy is ClientsListed or ClientsOpen.
	Policy ClientPolicy
	// Clients are the admitted clients' keys under ClientsListed; they are
	// ignored under ClientsOpen.
	Clients []ed25519.PublicKey
	// OpenKeyCache bounds the decoded client keys kept under ClientsOpen;
	// zero means DefaultOpenKeyCache.
	OpenKeyCache int
	// SignatureCache bounds the signatures remembered as verified (a
	// message or certificate seen again is not verified again); zero means
	// DefaultSignatureCache, negative disables the cache.
	SignatureCache int
}

// Verifier checks the signatures of one group's replicas and of clients
// (bft.Verifier) by the ZIP-215 rules (verifykey.go), each signature once:
// those verified valid are remembered (sigcache.go), and NewBatch verifies
// many together. Keys are decoded once; it is safe for concurrent use and
// allocates only on failure (and, under the open policy, when it meets a
// client key it has not cached).
type Verifier struct {
	replicas []*verifyKey
	policy   ClientPolicy
	clients  map[bft.ClientID]*verifyKey // ClientsListed
	open     *lru[[PublicKeySize]byte, *verifyKey]
	// cache remembers signatures verified valid (nil: none).
	cache *sigCache
}

var _ bft.Verifier = (*Verifier)(nil)

// NewVerifier decodes the keys of cfg. Malformed or duplicate keys are
// errors.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if len(cfg.Replicas) == 0 {
		return nil, fmt.Errorf("auth: new verifier: no replica keys")
	}
	v := &Verifier{replicas: make([]*verifyKey, len(cfg.Replicas)), policy: cfg.Policy}
	switch {
	case cfg.SignatureCache == 0:
		v.cache = newSigCache(DefaultSignatureCache)
	case cfg.SignatureCache > 0:
		v.cache = newSigCache(cfg.SignatureCache)
	}
	seen := make(map[string]string, len(cfg.Replicas)+len(cfg.Clients))
	for i, pub := range cfg.Replicas {
		k, err := newVerifyKey(pub)
		if err != nil {
			return nil, fmt.Errorf("auth: new verifier: replica %d: %w", i, err)
		}
		if prev, dup := seen[string(pub)]; dup {
			return nil, fmt.Errorf("auth: new verifier: replica %d has the same key as %s", i, prev)
		}
		seen[string(pub)] = fmt.Sprintf("replica %d", i)
		v.replicas[i] = k
	}
	switch cfg.Policy {
	case ClientsListed:
		v.clients = make(map[bft.ClientID]*verifyKey, len(cfg.Clients))
		for i, pub := range cfg.Clients {
			k, err := newVerifyKey(pub)
			if err != nil {
				return nil, fmt.Errorf("auth: new verifier: client %d: %w", i, err)
			}
			if prev, dup := seen[string(pub)]; dup {
				return nil, fmt.Errorf("auth: new verifier: client %d has the same key as %s", i, prev)
			}
			seen[string(pub)] = fmt.Sprintf("client %d", i)
			v.clients[bft.ClientID(pub)] = k
		}
	case ClientsOpen:
		n := cfg.OpenKeyCache
		if n <= 0 {
			n = DefaultOpenKeyCache
		}
		v.open = newLRU[[PublicKeySize]byte, *verifyKey](n)
	default:
		return nil, fmt.Errorf("auth: new verifier: unknown client policy %v", cfg.Policy)
	}
	return v, nil
}

// N returns the number of replicas in the group.
func (v *Verifier) N() int { return len(v.replicas) }

// Policy returns the client policy.
func (v *Verifier) Policy() ClientPolicy { return v.policy }

// ReplicaKey returns the public key of replica id.
func (v *Verifier) ReplicaKey(id bft.ReplicaID) (ed25519.PublicKey, bool) {
	if uint64(id) >= uint64(len(v.replicas)) {
		return nil, false
	}
	raw := v.replicas[id].raw
	return ed25519.PublicKey(raw[:]), true
}

// VerifyReplica checks that sig is replica id's signature of msg. Errors wrap
// ErrUnknownReplica or ErrBadSignature.
func (v *Verifier) VerifyReplica(id bft.ReplicaID, msg, sig []byte) error {
	if uint64(id) >= uint64(len(v.replicas)) {
		return fmt.Errorf("%w: replica %d (group of %d)", ErrUnknownReplica, id, len(v.replicas))
	}
	if !v.verify(v.replicas[id], msg, sig) {
		return fmt.Errorf("%w: from replica %d", ErrBadSignature, id)
	}
	return nil
}

// verify checks one signature (ZIP-215), plain or a tree's (sigtree.go), or
// finds it in the cache of signatures verified before.
func (v *Verifier) verify(k *verifyKey, msg, sig []byte) bool {
	// A tree signature is checked as its root's (sigtree.go): the cache then
	// holds the root once for every message of the tree.
	msg, sig, err := TreeRoot(msg, sig)
	if err != nil {
		return false
	}
	if v.cache == nil {
		return k.verify(msg, sig)
	}
	id := makeSigKey(k.raw[:], msg, sig)
	if v.cache.has(id) {
		return true
	}
	if !k.verify(msg, sig) {
		return false
	}
	v.cache.add(id)
	return true
}

// VerifyClient checks that the policy admits the client and that sig is its
// signature of msg. Errors wrap ErrMalformedKey, ErrClientNotAllowed or
// ErrBadSignature.
func (v *Verifier) VerifyClient(client bft.ClientID, msg, sig []byte) error {
	k, err := v.clientKey(client)
	if err != nil {
		return err
	}
	if !v.verify(k, msg, sig) {
		return fmt.Errorf("%w: from %v", ErrBadSignature, client)
	}
	return nil
}

// clientKey returns the decoded key of an admitted client.
func (v *Verifier) clientKey(client bft.ClientID) (*verifyKey, error) {
	if len(client) != PublicKeySize {
		return nil, fmt.Errorf("%w: client id has %d bytes, want a %d-byte Ed25519 key", ErrMalformedKey, len(client), PublicKeySize)
	}
	if v.policy == ClientsListed {
		k, ok := v.clients[client]
		if !ok {
			return nil, fmt.Errorf("%w: %v is not listed", ErrClientNotAllowed, client)
		}
		return k, nil
	}
	var raw [PublicKeySize]byte
	copy(raw[:], client)
	if k, ok := v.open.get(raw); ok {
		return k, nil
	}
	k, err := newVerifyKey(raw[:])
	if err != nil {
		return nil, fmt.Errorf("%w (client %v)", err, client)
	}
	v.open.add(raw, k)
	return k, nil
}
