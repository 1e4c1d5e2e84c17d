package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"golang.org/x/crypto/blake2b"
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
// BLAKE2X; its trailing version changes with the element encoding.
const elementDomain = "augustus/storage/lthash/v1\x00"

// Digest is the state digest of the replicated keyspaces: an LtHash with
// DigestLanes 16-bit lanes (Bellare–Micciancio; Lewi et al., "Securing update
// propagation with homomorphic hashing", 2019).
//
// Each element (keyspace, key, value) is expanded to DigestSize bytes by the
// BLAKE2X extendable-output function (BLAKE2Xb, output length DigestSize) of
//
//	elementDomain || keyspace (1 byte) || len(key) (4 bytes, big endian) || key ||
//	len(value) (4 bytes, big endian) || value
//
// and read as DigestLanes little-endian uint16 lanes. A set of elements
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

// elementHasher expands elements; it is reused to keep expansions free of
// allocations. Not safe for concurrent use.
type elementHasher struct {
	xof  blake2b.XOF
	hdr  [len(elementDomain) + 1 + 4]byte
	vlen [4]byte
	out  [DigestSize]byte
}

var hasherPool = sync.Pool{New: func() any { return newElementHasher() }}

func newElementHasher() *elementHasher {
	xof, err := blake2b.NewXOF(DigestSize, nil)
	if err != nil {
		// Only an out-of-range size or an oversize key fail; neither is
		// possible with constants.
		panic(fmt.Sprintf("storage: blake2b.NewXOF: %v", err))
	}
	h := &elementHasher{xof: xof}
	copy(h.hdr[:], elementDomain)
	return h
}

// expand returns the expansion of (ks, key, value). The result is valid until
// the next call.
func (h *elementHasher) expand(ks Keyspace, key, value []byte) *[DigestSize]byte {
	h.xof.Reset()
	n := len(elementDomain)
	h.hdr[n] = byte(ks)
	binary.BigEndian.PutUint32(h.hdr[n+1:], uint32(len(key)))
	// Writes to a BLAKE2 hash never fail.
	_, _ = h.xof.Write(h.hdr[:])
	_, _ = h.xof.Write(key)
	binary.BigEndian.PutUint32(h.vlen[:], uint32(len(value)))
	_, _ = h.xof.Write(h.vlen[:])
	_, _ = h.xof.Write(value)
	if _, err := io.ReadFull(h.xof, h.out[:]); err != nil {
		// The XOF was created for exactly DigestSize bytes of output.
		panic(fmt.Sprintf("storage: blake2x read: %v", err))
	}
	return &h.out
}
