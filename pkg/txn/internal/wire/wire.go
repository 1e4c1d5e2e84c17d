// Package wire holds the byte-level codec that every canonical encoding of
// pkg/txn is written with: minimal unsigned varints, length-prefixed byte
// strings, fixed-size fields and a strict reader that rejects non-minimal
// varints, overlong lengths and trailing bytes. Strictness is what makes the
// encodings canonical: a reader that accepted two spellings of one value would
// let two byte strings decode to one transaction, and the transaction id
// (T2) is a hash of bytes.
//
// It imports only the standard library.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error. pkg/txn re-exports it as
// txn.ErrMalformed.
var ErrMalformed = errors.New("txn: malformed")

// AppendUvarint appends the minimal unsigned varint of v.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendBytes appends a uvarint length and v.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendString is AppendBytes for a string.
func AppendString(b []byte, v string) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// AppendBool appends 1 or 0.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// UvarintLen returns the length of the minimal uvarint of v.
func UvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// BytesLen returns the encoded length of a byte string of n bytes.
func BytesLen(n int) int { return UvarintLen(uint64(n)) + n }

// Reader decodes a buffer strictly. The first error sticks: later reads
// return zero values, and Err or Done report the first failure, so decoders
// read a whole structure and check once.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b. Byte strings it returns alias b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Reset makes r read b from the start, forgetting any error.
func (r *Reader) Reset(b []byte) { *r = Reader{b: b} }

// Err returns the first error.
func (r *Reader) Err() error { return r.err }

// Remaining returns the number of unread bytes.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Offset returns the number of bytes read.
func (r *Reader) Offset() int { return r.off }

// Failf records an error (if none is recorded yet) that wraps ErrMalformed.
func (r *Reader) Failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

// Done reports the first error, or an error if bytes remain unread.
func (r *Reader) Done(what string) error {
	if r.err == nil && r.off != len(r.b) {
		r.Failf("%s: %d trailing bytes", what, len(r.b)-r.off)
	}
	return r.err
}

// Byte reads one byte.
func (r *Reader) Byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.Failf("%s: unexpected end at byte %d", what, r.off)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool(what string) bool {
	switch v := r.Byte(what); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.Failf("%s: boolean byte %d", what, v)
		return false
	}
}

// Uvarint reads a minimal unsigned varint.
func (r *Reader) Uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	var shift uint
	for i := 0; ; i++ {
		if r.off >= len(r.b) {
			r.Failf("%s: unexpected end in a varint at byte %d", what, r.off)
			return 0
		}
		c := r.b[r.off]
		r.off++
		if i == 9 && c > 1 {
			r.Failf("%s: varint overflows 64 bits", what)
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			// Minimal: a multi-byte varint must not end in a zero group
			// (0x80 0x00 would spell 0 in two bytes).
			if i > 0 && c == 0 {
				r.Failf("%s: non-minimal varint", what)
				return 0
			}
			return v
		}
		shift += 7
	}
}

// Uvarint32 reads a minimal varint that must fit 32 bits.
func (r *Reader) Uvarint32(what string) uint32 {
	v := r.Uvarint(what)
	if v > 1<<32-1 {
		r.Failf("%s: %d does not fit 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// Count reads a uvarint count of elements each at least minSize bytes long,
// bounded by max (0: no bound other than the remaining bytes).
func (r *Reader) Count(what string, minSize, max int) int {
	v := r.Uvarint(what)
	if r.err != nil {
		return 0
	}
	if max > 0 && v > uint64(max) {
		r.Failf("%s: %d exceeds %d", what, v, max)
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if v > uint64(r.Remaining()/minSize) {
		r.Failf("%s: %d elements cannot fit in %d bytes", what, v, r.Remaining())
		return 0
	}
	return int(v)
}

// Bytes reads a length-prefixed byte string of at most max bytes (0: no
// bound other than the buffer). The result aliases the buffer and is never
// nil on success.
func (r *Reader) Bytes(what string, max int) []byte {
	n := r.Uvarint(what)
	if r.err != nil {
		return nil
	}
	if max > 0 && n > uint64(max) {
		r.Failf("%s: %d bytes exceed %d", what, n, max)
		return nil
	}
	if n > uint64(r.Remaining()) {
		r.Failf("%s: %d bytes overrun the buffer (%d left)", what, n, r.Remaining())
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}

// Fixed reads exactly n bytes, aliasing the buffer.
func (r *Reader) Fixed(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > r.Remaining() {
		r.Failf("%s: %d bytes overrun the buffer (%d left)", what, n, r.Remaining())
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// Uint32 reads a 4-byte big-endian integer.
func (r *Reader) Uint32(what string) uint32 {
	b := r.Fixed(what, 4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Uint64 reads an 8-byte big-endian integer.
func (r *Reader) Uint64(what string) uint64 {
	b := r.Fixed(what, 8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
