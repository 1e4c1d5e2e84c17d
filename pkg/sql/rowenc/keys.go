package rowenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Prefix starts every key the SQL layer writes in the user-data keyspace.
// 0xF5 can never begin a UTF-8 string, so keys typed as text (what
// `augustus txn` and most applications of the raw transaction API write)
// never fall inside SQL's span, and SQL never writes outside it.
const Prefix byte = 0xF5

// Index ids inside a table's span. Id 0 holds the table's own bookkeeping
// keys (the AUTO_INCREMENT counter); the primary index is 1; secondary
// indexes take ids from 2 up.
const (
	AuxIndexID     uint32 = 0
	PrimaryIndexID uint32 = 1
)

// ErrCorrupt is wrapped by every decoding error: bytes this package did not
// write, or written under another schema.
var ErrCorrupt = errors.New("rowenc: corrupt encoding")

// AppendUvarintAscending appends v so that the byte order of encodings is the
// numeric order of values, and no encoding is a prefix of another: a value
// below 0xF0 is the single byte v; a larger one is 0xF0+n followed by its n
// big-endian bytes (n minimal, 1..8). A longer encoding always holds a larger
// value, and every multi-byte encoding starts above every single byte.
func AppendUvarintAscending(dst []byte, v uint64) []byte {
	if v < 0xF0 {
		return append(dst, byte(v))
	}
	n := (bits.Len64(v) + 7) / 8
	dst = append(dst, byte(0xF0+n))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// DecodeUvarintAscending decodes what AppendUvarintAscending wrote and
// returns the rest of b.
func DecodeUvarintAscending(b []byte) (uint64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, fmt.Errorf("%w: empty uvarint", ErrCorrupt)
	}
	if b[0] < 0xF0 {
		return uint64(b[0]), b[1:], nil
	}
	n := int(b[0] - 0xF0)
	if n < 1 || n > 8 || len(b) < 1+n {
		return 0, nil, fmt.Errorf("%w: uvarint of %d bytes", ErrCorrupt, n)
	}
	var v uint64
	for _, c := range b[1 : 1+n] {
		v = v<<8 | uint64(c)
	}
	if b[1] == 0 || v < 0xF0 {
		return 0, nil, fmt.Errorf("%w: uvarint not minimal", ErrCorrupt)
	}
	return v, b[1+n:], nil
}

// TablePrefix returns the prefix of every key of table id: Prefix, then the
// id. Every key of the table, of every index, starts with it.
func TablePrefix(table uint32) []byte {
	return AppendUvarintAscending([]byte{Prefix}, uint64(table))
}

// IndexPrefix returns the prefix of every entry of one index of a table.
func IndexPrefix(table, index uint32) []byte {
	return AppendUvarintAscending(TablePrefix(table), uint64(index))
}

// AutoIncrementKey is the key of a table's AUTO_INCREMENT counter: an
// ordinary data key in the table's span (so in the table's group), never
// metadata — a metadata write would abort every data transaction in flight
// (M2). Its value is 8 bytes big-endian: the first id not yet handed out.
func AutoIncrementKey(table uint32) []byte {
	return append(IndexPrefix(table, AuxIndexID), "autoinc"...)
}

// EncodeCounter and DecodeCounter read and write the counter's value.
func EncodeCounter(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// DecodeCounter decodes a counter value.
func DecodeCounter(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: counter of %d bytes", ErrCorrupt, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// PrefixEnd returns the smallest key above every key that starts with p:
// p with its last byte below 0xFF incremented and what follows dropped. It
// returns nil (no bound) when p is empty or all 0xFF.
func PrefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xFF {
			end := make([]byte, i+1)
			copy(end, p)
			end[i]++
			return end
		}
	}
	return nil
}

// Span is a key span [Start, End) (End nil: unbounded).
type Span struct {
	Start, End []byte
}

// TableSpan is the span of every key of a table.
func TableSpan(table uint32) Span {
	p := TablePrefix(table)
	return Span{Start: p, End: PrefixEnd(p)}
}

// IndexSpan is the span of every entry of one index.
func IndexSpan(table, index uint32) Span {
	p := IndexPrefix(table, index)
	return Span{Start: p, End: PrefixEnd(p)}
}
