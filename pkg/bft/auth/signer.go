package auth

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Signer signs with one Ed25519 private key. Ed25519 is deterministic: the
// same key and message always give the same signature, which pkg/bft relies
// on when a restarted replica re-creates a message (pbft.md P3). A Signer is
// safe for concurrent use.
type Signer struct {
	// priv is owned by the Signer: crypto/ed25519 caches the expanded key
	// by the address of its first byte, so one stable slice keeps that
	// cache warm, and callers cannot change the key under us.
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

var _ bft.Signer = (*Signer)(nil)

// NewSigner returns a Signer for priv (which it copies).
func NewSigner(priv ed25519.PrivateKey) (*Signer, error) {
	if err := checkPrivateKey(priv); err != nil {
		return nil, fmt.Errorf("auth: new signer: %w", err)
	}
	p := bytes.Clone(priv)
	return &Signer{priv: p, pub: ed25519.PublicKey(p[32:])}, nil
}

// Sign returns the Ed25519 signature of msg.
func (s *Signer) Sign(msg []byte) []byte {
	return ed25519.Sign(s.priv, msg)
}

// PublicKey returns the signer's public key. The caller must not modify it.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// ClientID returns the signer's public key as a client id, for a signer
// that acts as a client.
func (s *Signer) ClientID() bft.ClientID { return bft.ClientID(s.pub) }
