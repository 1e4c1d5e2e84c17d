package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
)

const (
	// DigestLanes is the number of 16-bit lanes of a Digest.
	DigestLanes = 1024
	// DigestSize is the size of a Digest's state in bytes (2 KiB).
	DigestSize = 2 * DigestLanes
	// SumSize is the size of a Digest's Sum in bytes.
	SumSize = sha256.Size
)

// elementDomain separates LtHash element expansions from any other use of
// SHA-256; its trailing version changes with the element encoding or the
// expansion (v1 expanded with BLAKE2X; format version 1 of the store).
const elementDomain = "augustus/storage/lthash/v2\x00"

// Digest is the state digest of the replicated keyspaces: an LtHash with
// DigestLanes 16-bit lanes (Bellare–Micciancio; Lewi et al., "Securing update
// propagation with homomorphic hashing", 2019).
//
// Each element (keyspace, key, value) is expanded to DigestSize bytes by an
// extendable-output function built from SHA-256 and AES-256 in counter mode
// (the XOF of Kyber's "90s" variant, and NIST's CTR_DRBG, expand seeds the
// same way): the seed is
//
//	seed = SHA-256(elementDomain || keyspace (1 byte) || len(key) (4 bytes, big endian) || key ||
//	               len(value) (4 bytes, big endian) || value)
//
// and the expansion is the AES-256-CTR keystream under key seed from the zero
// counter block (128 blocks), read as DigestLanes little-endian uint16 lanes.
// The encoding is injective (lengths are explicit, the keyspace is fixed
// size), so distinct elements get distinct seeds unless SHA-256 collides, and
// distinct seeds key independent-looking keystreams. The construction
// replaced BLAKE2X (format version 1) because it is about 6× cheaper here and
// every replicated write pays one or two expansions (docs/benchmarks/storage.md):
// SHA-256 and AES both run on dedicated instructions (SHA-NI, AES-NI).
//
// A set of elements
// digests to the lane-wise sum modulo 2^16 of their expansions: adding an
// element adds its lanes, removing it subtracts them, so the digest of a state
// does not depend on the order of the writes that produced it and never needs
// a full scan to maintain.
//
// The zero Digest is the digest of the empty state. Digests compare with ==.
type Digest struct {
	// w packs four lanes per word: lane 4i+j is bits 16j..16j+15 of w[i], so
	// the little-endian encoding of w is the little-endian encoding of the
	// lanes.
	w [DigestSize / 8]uint64
}

// ParseDigest decodes a Digest from its DigestSize-byte encoding (Bytes).
func ParseDigest(b []byte) (Digest, error) {
	var d Digest
	if len(b) != DigestSize {
		return d, fmt.Errorf("storage: parse digest: %w: %d bytes, want %d", ErrInvalidArgument, len(b), DigestSize)
	}
	for i := range d.w {
		d.w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return d, nil
}

// Bytes returns the DigestSize-byte encoding of the lanes: lane i as a
// little-endian uint16 at offset 2i.
func (d Digest) Bytes() []byte {
	return d.AppendBytes(make([]byte, 0, DigestSize))
}

// AppendBytes appends the encoding returned by Bytes to dst.
func (d Digest) AppendBytes(dst []byte) []byte {
	for _, w := range d.w {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// putBytes writes the encoding returned by Bytes into dst[:DigestSize].
func (d *Digest) putBytes(dst []byte) {
	_ = dst[DigestSize-1]
	for i, w := range d.w {
		binary.LittleEndian.PutUint64(dst[8*i:], w)
	}
}

// Lane returns lane i (0 ≤ i < DigestLanes).
func (d Digest) Lane(i int) uint16 {
	return uint16(d.w[i/4] >> (16 * (i % 4)))
}

// Sum returns SHA-256 of the lanes' encoding (Bytes). It is the 32-byte value
// PBFT checkpoints carry.
func (d Digest) Sum() [SumSize]byte {
	var buf [DigestSize]byte
	d.putBytes(buf[:])
	return sha256.Sum256(buf[:])
}

// String returns a short hex prefix of Sum, for logs.
func (d Digest) String() string {
	s := d.Sum()
	return hex.EncodeToString(s[:8])
}

// Add adds the element (ks, key, value) to the digest.
func (d *Digest) Add(ks Keyspace, key, value []byte) {
	h := hasherPool.Get().(*elementHasher)
	d.addLanes(h.expand(ks, key, value))
	hasherPool.Put(h)
}

// Remove removes the element (ks, key, value) from the digest. Removing an
// element that was never added leaves a digest that matches no state.
func (d *Digest) Remove(ks Keyspace, key, value []byte) {
	h := hasherPool.Get().(*elementHasher)
	d.subLanes(h.expand(ks, key, value))
	hasherPool.Put(h)
}

// Combine adds every element of o to d (the digest of a disjoint union).
func (d *Digest) Combine(o *Digest) {
	for i := range d.w {
		d.w[i] = addLanes16(d.w[i], o.w[i])
	}
}

// laneHigh has the top bit of every 16-bit lane set.
const laneHigh = 0x8000_8000_8000_8000

// addLanes16 adds the four 16-bit lanes of a and b modulo 2^16 each, without
// carries between lanes (SWAR: add the low 15 bits, then fix the top bits).
func addLanes16(a, b uint64) uint64 {
	return ((a &^ laneHigh) + (b &^ laneHigh)) ^ ((a ^ b) & laneHigh)
}

// subLanes16 subtracts the four 16-bit lanes of b from those of a modulo 2^16
// each, without borrows between lanes.
func subLanes16(a, b uint64) uint64 {
	return ((a | laneHigh) - (b &^ laneHigh)) ^ ((a ^ ^b) & laneHigh)
}

func (d *Digest) addLanes(e *[DigestSize]byte) {
	for i := range d.w {
		d.w[i] = addLanes16(d.w[i], binary.LittleEndian.Uint64(e[8*i:]))
	}
}

func (d *Digest) subLanes(e *[DigestSize]byte) {
	for i := range d.w {
		d.w[i] = subLanes16(d.w[i], binary.LittleEndian.Uint64(e[8*i:]))
	}
}

// elementHasher expands elements; it is reused to keep the seed hashing free
// of allocations (the AES key schedule and counter-mode state are allocated
// by crypto/cipher per element: crypto/aes has no way to re-key in place).
// Not safe for concurrent use.
type elementHasher struct {
	sha  hash.Hash
	hdr  [len(elementDomain) + 1 + 4]byte
	vlen [4]byte
	seed [sha256.Size]byte
	out  [DigestSize]byte
}

// zeroBlocks is the plaintext the keystream is XORed onto.
var zeroBlocks [DigestSize]byte

var hasherPool = sync.Pool{New: func() any { return newElementHasher() }}

func newElementHasher() *elementHasher {
	h := &elementHasher{sha: sha256.New()}
	copy(h.hdr[:], elementDomain)
	return h
}

// expand returns the expansion of (ks, key, value). The result is valid until
// the next call.
func (h *elementHasher) expand(ks Keyspace, key, value []byte) *[DigestSize]byte {
	h.sha.Reset()
	n := len(elementDomain)
	h.hdr[n] = byte(ks)
	binary.BigEndian.PutUint32(h.hdr[n+1:], uint32(len(key)))
	// Writes to a SHA-256 hash never fail.
	_, _ = h.sha.Write(h.hdr[:])
	_, _ = h.sha.Write(key)
	binary.BigEndian.PutUint32(h.vlen[:], uint32(len(value)))
	_, _ = h.sha.Write(h.vlen[:])
	_, _ = h.sha.Write(value)
	seed := h.sha.Sum(h.seed[:0])
	block, err := aes.NewCipher(seed)
	if err != nil {
		// Only a key of the wrong length fails; the seed is 32 bytes.
		panic(fmt.Sprintf("storage: aes.NewCipher: %v", err))
	}
	var iv [aes.BlockSize]byte
	cipher.NewCTR(block, iv[:]).XORKeyStream(h.out[:], zeroBlocks[:])
	return &h.out
}
