package auth

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"sync"

	"github.com/augustus-db/augustus/pkg/bft"
)

// MACSize is the size of a reply MAC (HMAC-SHA256).
const MACSize = sha256.Size

// MACKeySize is the size of a pairwise MAC key.
const MACKeySize = 32

// macKeyInfo is the HKDF info prefix; the two Ed25519 public keys follow in
// ascending byte order, so both parties build the same string and a key is
// bound to its pair.
const macKeyInfo = "AUGUSTUS-REPLY-MAC-KEY-v1\x00"

// MACKey is a pairwise key shared by a replica and a client.
type MACKey [MACKeySize]byte

// X25519PrivateKey converts an Ed25519 private key to the X25519 scalar of
// the same key pair: the first 32 bytes of SHA-512 of the seed, clamped (RFC
// 8032 §5.1.5; libsodium's crypto_sign_ed25519_sk_to_curve25519).
func X25519PrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	if err := checkPrivateKey(priv); err != nil {
		return nil, fmt.Errorf("auth: x25519 private key: %w", err)
	}
	h := sha512.Sum512(priv.Seed())
	s := bytes.Clone(h[:32])
	s[0] &= 248
	s[31] &= 127
	s[31] |= 64
	return s, nil
}

// X25519PublicKey converts an Ed25519 public key to its Montgomery
// u-coordinate (libsodium's crypto_sign_ed25519_pk_to_curve25519). Keys that
// CheckPublicKey refuses, small-order points among them, are errors.
func X25519PublicKey(pub ed25519.PublicKey) ([]byte, error) {
	p, err := decodePoint(pub)
	if err != nil {
		return nil, err
	}
	return p.BytesMontgomery(), nil
}

// macDeriver derives pairwise keys for one own key pair.
type macDeriver struct {
	x   *ecdh.PrivateKey
	pub [PublicKeySize]byte
}

func newMACDeriver(own ed25519.PrivateKey) (*macDeriver, error) {
	scalar, err := X25519PrivateKey(own)
	if err != nil {
		return nil, err
	}
	x, err := ecdh.X25519().NewPrivateKey(scalar)
	if err != nil {
		return nil, fmt.Errorf("auth: x25519 private key: %w", err)
	}
	d := &macDeriver{x: x}
	copy(d.pub[:], own[32:])
	return d, nil
}

func (d *macDeriver) derive(peer []byte) (MACKey, error) {
	var key MACKey
	u, err := X25519PublicKey(peer)
	if err != nil {
		return key, fmt.Errorf("auth: derive MAC key: peer: %w", err)
	}
	xp, err := ecdh.X25519().NewPublicKey(u)
	if err != nil {
		return key, fmt.Errorf("auth: derive MAC key: peer: %w: %w", ErrMalformedKey, err)
	}
	shared, err := d.x.ECDH(xp)
	if err != nil {
		// crypto/ecdh refuses an all-zero output (a small-order peer);
		// decodePoint has refused those already.
		return key, fmt.Errorf("auth: derive MAC key: %w: %w", ErrMalformedKey, err)
	}
	lo, hi := d.pub[:], peer
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	info := make([]byte, 0, len(macKeyInfo)+2*PublicKeySize)
	info = append(append(append(info, macKeyInfo...), lo...), hi...)
	k, err := hkdf.Key(sha256.New, shared, nil, string(info), MACKeySize)
	if err != nil {
		return key, fmt.Errorf("auth: derive MAC key: %w", err)
	}
	copy(key[:], k)
	return key, nil
}

// DeriveMACKey returns the key that own's holder shares with peer's holder:
// DeriveMACKey(a, pubB) == DeriveMACKey(b, pubA). It is HKDF-SHA256 of the
// X25519 shared secret of the two key pairs (converted from Ed25519), with
// both public keys in the info string. Errors wrap ErrMalformedKey.
func DeriveMACKey(own ed25519.PrivateKey, peer ed25519.PublicKey) (MACKey, error) {
	d, err := newMACDeriver(own)
	if err != nil {
		return MACKey{}, fmt.Errorf("auth: derive MAC key: own: %w", err)
	}
	return d.derive(peer)
}

// MAC returns HMAC-SHA256(key, msg).
func MAC(key MACKey, msg []byte) []byte {
	return AppendMAC(make([]byte, 0, MACSize), key, msg)
}

// AppendMAC appends HMAC-SHA256(key, msg) to dst. It is HMAC as RFC 2104
// defines it (TestAppendMACIsHMACSHA256 holds it to crypto/hmac), computed
// with two SHA-256 sums over a pooled buffer: crypto/hmac.New allocates a
// dozen objects per call, and every reply is MACed by its replica and
// checked by its client.
func AppendMAC(dst []byte, key MACKey, msg []byte) []byte {
	bp := macScratch.Get().(*[]byte)
	b := (*bp)[:0]
	// inner = SHA-256((K ^ ipad) || msg); the key is shorter than the
	// block, so K is the key padded with zeros.
	for i := range sha256.BlockSize {
		k := byte(0)
		if i < len(key) {
			k = key[i]
		}
		b = append(b, k^0x36)
	}
	b = append(b, msg...)
	inner := sha256.Sum256(b)
	// outer = SHA-256((K ^ opad) || inner)
	b = b[:0]
	for i := range sha256.BlockSize {
		k := byte(0)
		if i < len(key) {
			k = key[i]
		}
		b = append(b, k^0x5c)
	}
	b = append(b, inner[:]...)
	outer := sha256.Sum256(b)
	if cap(b) <= 1<<16 {
		*bp = b[:0]
		macScratch.Put(bp)
	}
	return append(dst, outer[:]...)
}

var macScratch = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// VerifyMAC checks tag against HMAC-SHA256(key, msg) in constant time.
// Errors wrap ErrBadMAC.
func VerifyMAC(key MACKey, msg, tag []byte) error {
	var buf [MACSize]byte
	if !hmac.Equal(AppendMAC(buf[:0], key, msg), tag) {
		return ErrBadMAC
	}
	return nil
}

// DefaultMACKeysCapacity is the number of pairwise keys a MACKeys keeps when
// the caller does not say.
const DefaultMACKeysCapacity = 8192

// MACKeys derives and caches the pairwise MAC keys of one own key with many
// peers: a replica with each client, a client with each replica. It is
// bounded (least recently used keys are dropped and derived again when
// needed) and safe for concurrent use.
type MACKeys struct {
	d     *macDeriver
	cache *lru[[PublicKeySize]byte, MACKey]
}

// NewMACKeys returns a cache of at most capacity keys (zero means
// DefaultMACKeysCapacity) for own.
func NewMACKeys(own ed25519.PrivateKey, capacity int) (*MACKeys, error) {
	d, err := newMACDeriver(own)
	if err != nil {
		return nil, fmt.Errorf("auth: new MAC keys: %w", err)
	}
	if capacity <= 0 {
		capacity = DefaultMACKeysCapacity
	}
	return &MACKeys{d: d, cache: newLRU[[PublicKeySize]byte, MACKey](capacity)}, nil
}

// Get returns the key shared with peer, deriving it on first use. Errors
// (a malformed peer key) are not cached.
func (m *MACKeys) Get(peer ed25519.PublicKey) (MACKey, error) {
	if len(peer) != PublicKeySize {
		return MACKey{}, fmt.Errorf("auth: derive MAC key: peer: %w: public key has %d bytes, want %d", ErrMalformedKey, len(peer), PublicKeySize)
	}
	var id [PublicKeySize]byte
	copy(id[:], peer)
	if k, ok := m.cache.get(id); ok {
		return k, nil
	}
	k, err := m.d.derive(id[:])
	if err != nil {
		return MACKey{}, err
	}
	m.cache.add(id, k)
	return k, nil
}

// ForClient returns the key shared with a client.
func (m *MACKeys) ForClient(c bft.ClientID) (MACKey, error) {
	if len(c) != PublicKeySize {
		return MACKey{}, fmt.Errorf("auth: derive MAC key: %w: client id has %d bytes, want %d", ErrMalformedKey, len(c), PublicKeySize)
	}
	var id [PublicKeySize]byte
	copy(id[:], c)
	return m.Get(id[:])
}

// Len returns the number of cached keys.
func (m *MACKeys) Len() int { return m.cache.len() }
