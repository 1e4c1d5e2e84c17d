package auth

import (
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
)

// PeerKeys pins the replicas of a group (or of a whole cluster) by key and
// tells which replica a key belongs to. Its Accept method is the acceptance
// function of ServerTLSConfig and ClientTLSConfig; its Identify method maps a
// completed handshake to the peer's index (the IdentityFunc of
// pkg/bft/transport). It is immutable and safe for concurrent use.
type PeerKeys struct {
	keys  []ed25519.PublicKey
	index map[[PublicKeySize]byte]uint32
}

// NewPeerKeys indexes keys: keys[i] belongs to peer i. Malformed or
// duplicate keys are errors.
func NewPeerKeys(keys []ed25519.PublicKey) (*PeerKeys, error) {
	p := &PeerKeys{keys: make([]ed25519.PublicKey, len(keys)), index: make(map[[PublicKeySize]byte]uint32, len(keys))}
	for i, k := range keys {
		if err := CheckPublicKey(k); err != nil {
			return nil, fmt.Errorf("auth: peer keys: peer %d: %w", i, err)
		}
		var raw [PublicKeySize]byte
		copy(raw[:], k)
		if prev, dup := p.index[raw]; dup {
			return nil, fmt.Errorf("auth: peer keys: peer %d has the same key as peer %d", i, prev)
		}
		p.index[raw] = uint32(i)
		p.keys[i] = ed25519.PublicKey(raw[:])
	}
	return p, nil
}

// Len returns the number of peers.
func (p *PeerKeys) Len() int { return len(p.keys) }

// Key returns the key of peer i.
func (p *PeerKeys) Key(i uint32) (ed25519.PublicKey, bool) {
	if uint64(i) >= uint64(len(p.keys)) {
		return nil, false
	}
	return p.keys[i], true
}

// Index returns the peer that owns pub.
func (p *PeerKeys) Index(pub ed25519.PublicKey) (uint32, bool) {
	if len(pub) != PublicKeySize {
		return 0, false
	}
	var raw [PublicKeySize]byte
	copy(raw[:], pub)
	i, ok := p.index[raw]
	return i, ok
}

// Accept admits the keys of the peers; others are refused with an error
// wrapping ErrUnknownPeer.
func (p *PeerKeys) Accept(pub ed25519.PublicKey) error {
	if _, ok := p.Index(pub); !ok {
		return fmt.Errorf("%w: key %s", ErrUnknownPeer, EncodePublicKey(pub))
	}
	return nil
}

// Identify returns the index of the peer at the other end of a completed
// handshake. Errors wrap ErrNoPeerCertificate or ErrUnknownPeer.
func (p *PeerKeys) Identify(state tls.ConnectionState) (uint32, error) {
	pub, err := PeerIdentity(state)
	if err != nil {
		return 0, err
	}
	i, ok := p.Index(pub)
	if !ok {
		return 0, fmt.Errorf("%w: key %s", ErrUnknownPeer, EncodePublicKey(pub))
	}
	return i, nil
}
