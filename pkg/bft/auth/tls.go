package auth

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	"time"
)

// Certificates carry a node's Ed25519 key and nothing a peer relies on
// besides it: peers are pinned by key, so there is no CA, no host name check
// and no expiry. The validity period spans everything X.509 can express
// (RFC 5280 §4.1.2.5 names 99991231235959Z for "no expiration").
var (
	certNotBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	certNotAfter  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// Certificate returns a self-signed X.509 certificate for priv's key pair,
// for TLS 1.3 (which signs handshakes with Ed25519). It is deterministic: the
// same key gives the same certificate bytes.
func Certificate(priv ed25519.PrivateKey) (tls.Certificate, error) {
	if err := checkPrivateKey(priv); err != nil {
		return tls.Certificate{}, fmt.Errorf("auth: certificate: %w", err)
	}
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	serial := new(big.Int).SetBytes(sum[:16])
	serial.SetBit(serial, 127, 0) // positive, at most 16 bytes
	if serial.Sign() == 0 {
		serial.SetInt64(1)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "augustus " + hex.EncodeToString(pub[:8])},
		NotBefore:             certNotBefore,
		NotAfter:              certNotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, pub, priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("auth: certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("auth: certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv, Leaf: leaf}, nil
}

// AcceptKeys returns an acceptance function for ServerTLSConfig and
// ClientTLSConfig that admits exactly the given keys; others are refused
// with an error wrapping ErrUnknownPeer.
func AcceptKeys(keys ...ed25519.PublicKey) func(ed25519.PublicKey) error {
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		set[string(k)] = struct{}{}
	}
	return func(pub ed25519.PublicKey) error {
		if _, ok := set[string(pub)]; !ok {
			return fmt.Errorf("%w: key %s", ErrUnknownPeer, EncodePublicKey(pub))
		}
		return nil
	}
}

// ServerTLSConfig returns the TLS 1.3 configuration of a server presenting
// own's certificate.
//
//   - requireClientCert: a client must present a certificate whose key
//     acceptPeer accepts (replica-to-replica mutual TLS); acceptPeer is
//     required.
//   - otherwise, with acceptPeer set: a client may present a certificate,
//     and if it does, acceptPeer must accept its key.
//   - otherwise: no client certificate is requested (the client endpoint,
//     where clients authenticate by signing their envelopes).
//
// After the handshake, PeerIdentity tells which key the client presented.
// Session resumption is disabled, so every connection proves its key afresh
// and acceptPeer sees every connection.
func ServerTLSConfig(own ed25519.PrivateKey, acceptPeer func(ed25519.PublicKey) error, requireClientCert bool) (*tls.Config, error) {
	if requireClientCert && acceptPeer == nil {
		return nil, fmt.Errorf("auth: server TLS config: a client certificate is required but no acceptance function was given")
	}
	cert, err := Certificate(own)
	if err != nil {
		return nil, fmt.Errorf("auth: server TLS config: %w", err)
	}
	cfg := &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{cert},
		SessionTicketsDisabled: true,
		ClientAuth:             tls.NoClientCert,
	}
	if acceptPeer != nil {
		cfg.ClientAuth = tls.RequestClientCert
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAnyClientCert
		}
		cfg.VerifyPeerCertificate = pinPeer("client", acceptPeer, requireClientCert)
	}
	return cfg, nil
}

// ClientTLSConfig returns the TLS 1.3 configuration of a client that accepts
// a server only if expectServer accepts the key of its certificate. own, if
// not nil, is presented as the client certificate (replicas connecting to
// peers); clients of the group leave it nil. The server's host name is not
// checked: the pinned key is the identity.
func ClientTLSConfig(own ed25519.PrivateKey, expectServer func(ed25519.PublicKey) error) (*tls.Config, error) {
	if expectServer == nil {
		return nil, fmt.Errorf("auth: client TLS config: an acceptance function for the server's key is required")
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is not verified against roots: VerifyPeerCertificate
		// below pins the server's key instead, and TLS 1.3's
		// CertificateVerify proves the server holds it.
		InsecureSkipVerify:    true, //nolint:gosec // pinned by key in VerifyPeerCertificate
		VerifyPeerCertificate: pinPeer("server", expectServer, true),
	}
	if own != nil {
		cert, err := Certificate(own)
		if err != nil {
			return nil, fmt.Errorf("auth: client TLS config: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// pinPeer returns a VerifyPeerCertificate function that accepts a single
// certificate with an Ed25519 key that accept accepts.
func pinPeer(role string, accept func(ed25519.PublicKey) error, required bool) func([][]byte, [][]*x509.Certificate) error {
	return func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
		switch {
		case len(rawCerts) == 0 && !required:
			return nil
		case len(rawCerts) == 0:
			return fmt.Errorf("%w: the %s presented none", ErrNoPeerCertificate, role)
		case len(rawCerts) > 1:
			return fmt.Errorf("auth: tls: the %s presented %d certificates, want one self-signed certificate", role, len(rawCerts))
		}
		cert, err := x509.ParseCertificate(rawCerts[0])
		if err != nil {
			return fmt.Errorf("auth: tls: %s certificate: %w", role, err)
		}
		pub, ok := cert.PublicKey.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("%w: the %s's certificate has a %T key, want Ed25519", ErrNoPeerCertificate, role, cert.PublicKey)
		}
		if err := accept(pub); err != nil {
			return fmt.Errorf("auth: tls: %s: %w", role, err)
		}
		return nil
	}
}

// PeerIdentity returns the Ed25519 key of the certificate the peer presented
// in a completed handshake. With the configurations of this package, that
// key passed the acceptance function and the peer proved it holds it.
func PeerIdentity(state tls.ConnectionState) (ed25519.PublicKey, error) {
	if !state.HandshakeComplete {
		return nil, fmt.Errorf("auth: peer identity: handshake not complete")
	}
	if len(state.PeerCertificates) == 0 {
		return nil, fmt.Errorf("%w: the peer presented none", ErrNoPeerCertificate)
	}
	pub, ok := state.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: the peer's certificate has a %T key, want Ed25519", ErrNoPeerCertificate, state.PeerCertificates[0].PublicKey)
	}
	return pub, nil
}
