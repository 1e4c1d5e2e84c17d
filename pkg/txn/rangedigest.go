package txn

import (
	"crypto/sha256"
	"hash"

	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

const tagRange = "AUGUSTUS-TXN-RANGE-v1\x00"

// RangeHasher computes the digest a cmp-range carries for one group (T1):
// SHA-256 of a domain tag, each present entry of the range in key order as
// length-prefixed key and value, and the entry count. A SQL session feeds it
// the entries a read-range returned; a group feeds it its current entries.
type RangeHasher struct {
	h   hash.Hash
	n   uint64
	buf []byte
}

// NewRangeHasher returns an empty hasher.
func NewRangeHasher() *RangeHasher {
	h := &RangeHasher{h: sha256.New()}
	h.h.Write([]byte(tagRange))
	return h
}

// Add adds the next entry (keys must come in increasing order).
func (r *RangeHasher) Add(key, value []byte) {
	r.buf = wire.AppendBytes(r.buf[:0], key)
	r.h.Write(r.buf)
	r.buf = wire.AppendBytes(r.buf[:0], value)
	r.h.Write(r.buf)
	r.n++
}

// Count returns the entries added.
func (r *RangeHasher) Count() uint64 { return r.n }

// Sum returns the digest of the entries added. Call it once: it finishes the
// hash.
func (r *RangeHasher) Sum() [32]byte {
	r.buf = wire.AppendUvarint(r.buf[:0], r.n)
	h := r.h
	h.Write(r.buf)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// RangeDigest returns the digest of entries (in key order).
func RangeDigest(entries []KV) [32]byte {
	h := NewRangeHasher()
	for _, e := range entries {
		h.Add(e.Key, e.Value)
	}
	return h.Sum()
}
