package auth

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them with
// context (which replica, which file, which key), so callers test with
// errors.Is.
var (
	// ErrUnknownReplica: the replica id is not a member of the group.
	ErrUnknownReplica = errors.New("auth: unknown replica")
	// ErrBadSignature: the signature does not verify under the signer's key.
	ErrBadSignature = errors.New("auth: bad signature")
	// ErrClientNotAllowed: the client's key is well formed but the client
	// policy does not admit it.
	ErrClientNotAllowed = errors.New("auth: client not allowed")
	// ErrMalformedKey: a key has the wrong length or encoding, is not a
	// point of the curve, is not canonically encoded or has small order.
	ErrMalformedKey = errors.New("auth: malformed key")
	// ErrBadMAC: a reply MAC does not verify.
	ErrBadMAC = errors.New("auth: bad MAC")
	// ErrInsecureKeyFile: a private key file may be accessed by group or
	// others, or is not a regular file.
	ErrInsecureKeyFile = errors.New("auth: insecure private key file")
	// ErrUnknownPeer: a TLS peer presented a key the caller does not accept.
	ErrUnknownPeer = errors.New("auth: unknown peer")
	// ErrNoPeerCertificate: a TLS peer presented no certificate, or not one
	// with an Ed25519 key.
	ErrNoPeerCertificate = errors.New("auth: no peer certificate")
)
