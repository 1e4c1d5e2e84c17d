package rowenc

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
)

// Key encoding. Each column of a key is encoded so that bytes.Compare of two
// encodings is the column type's own comparison (GMS's Type.Compare), NULL
// first as in MySQL's ascending order, and no encoding is a prefix of
// another, so a composite key is the concatenation of its columns' encodings
// and still sorts column by column (CockroachDB's encoding package is the
// model):
//
//	NULL      0x00
//	non-NULL  0x01, then the type's body:
//	  signed ints      the value's two's complement in the column's width
//	                   (1, 2, 4 or 8 bytes) with the sign bit flipped, big-endian
//	  unsigned, BIT    big-endian in the column's width
//	  FLOAT, DOUBLE    IEEE bits big-endian, all bits flipped for negatives,
//	                   the sign bit set for the others (-0 is stored as 0)
//	  DECIMAL          0x02 for zero; else 0x03 (positive) or 0x01 (negative),
//	                   the decimal exponent E (value = 0.d1d2...dn × 10^E,
//	                   d1 ≠ 0, dn ≠ 0) as 4 bytes with the sign bit flipped,
//	                   each digit as byte d+1, and 0x00; a negative value's
//	                   exponent and digit bytes are complemented (0x00 → 0xFF),
//	                   so a larger magnitude sorts first
//	  bytewise strings the bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x01
//	                   (binary types, utf8mb4_0900_bin, binary collation)
//	  other collations a sort key: per character 0x01 and its collation weight
//	                   (4 bytes, sign bit flipped), then 0x00 — not reversible,
//	                   so the row's value keeps the original string
//	  DATE/DATETIME/TIMESTAMP  Unix seconds (8 bytes, sign bit flipped) and
//	                   nanoseconds (4 bytes)
//	  TIME             microseconds, 8 bytes with the sign bit flipped
//	  YEAR, ENUM, SET  the stored integer: 2, 2 and 8 bytes big-endian
//
// JSON and spatial types have no key encoding (MySQL does not index them
// either).

const (
	keyNull    byte = 0x00
	keyNotNull byte = 0x01
)

// AppendKey appends the key encoding of v, a value of type t, to dst.
func AppendKey(dst []byte, t sql.Type, v any) ([]byte, error) {
	if v == nil {
		return append(dst, keyNull), nil
	}
	k, w := KindOf(t)
	dst = append(dst, keyNotNull)
	out, ok, err := appendKeyBody(dst, k, w, t, v)
	if err != nil {
		return nil, err
	}
	if ok {
		return out, nil
	}
	// Not the Go type the kind stores: convert through the type first.
	c, err := canonical(t, v)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return append(dst[:len(dst)-1], keyNull), nil
	}
	out, ok, err = appendKeyBody(dst, k, w, t, c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %T for %s", ErrUnsupportedType, c, t)
	}
	return out, nil
}

// appendKeyBody appends the body; ok is false when v is not the Go type the
// kind stores.
func appendKeyBody(dst []byte, k Kind, w int, t sql.Type, v any) ([]byte, bool, error) {
	switch k {
	case KindInt:
		i, ok := asInt64(v)
		if !ok {
			return dst, false, nil
		}
		return appendFixed(dst, uint64(i)^signBit(w), w), true, nil
	case KindUint:
		u, ok := asUint64(v)
		if !ok {
			return dst, false, nil
		}
		return appendFixed(dst, u, w), true, nil
	case KindFloat32:
		f, ok := v.(float32)
		if !ok {
			return dst, false, nil
		}
		if f != f {
			return nil, false, fmt.Errorf("rowenc: NaN in a key")
		}
		if f == 0 {
			f = 0 // -0 compares equal to 0
		}
		b := math.Float32bits(f)
		if b&(1<<31) != 0 {
			b = ^b
		} else {
			b |= 1 << 31
		}
		return binary.BigEndian.AppendUint32(dst, b), true, nil
	case KindFloat64:
		f, ok := v.(float64)
		if !ok {
			return dst, false, nil
		}
		if f != f {
			return nil, false, fmt.Errorf("rowenc: NaN in a key")
		}
		if f == 0 {
			f = 0
		}
		b := math.Float64bits(f)
		if b&(1<<63) != 0 {
			b = ^b
		} else {
			b |= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, b), true, nil
	case KindDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			return dst, false, nil
		}
		return appendDecimalKey(dst, d), true, nil
	case KindBytes:
		switch s := v.(type) {
		case string:
			return appendEscaped(dst, s), true, nil
		case []byte:
			return appendEscaped(dst, s), true, nil
		}
		return dst, false, nil
	case KindCollated:
		s, ok := v.(string)
		if !ok {
			return dst, false, nil
		}
		out, err := appendCollated(dst, t.(sql.StringType).Collation(), s)
		return out, err == nil, err
	case KindTime:
		tm, ok := v.(time.Time)
		if !ok {
			return dst, false, nil
		}
		if t.Type() == sqltypes.Date {
			tm = tm.Truncate(24 * time.Hour) // as DATE compares
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(tm.Unix())^(1<<63))
		return binary.BigEndian.AppendUint32(dst, uint32(tm.Nanosecond())), true, nil
	case KindTimespan:
		ts, ok := v.(types.Timespan)
		if !ok {
			return dst, false, nil
		}
		return binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63)), true, nil
	case KindYear:
		y, ok := v.(int16)
		if !ok {
			return dst, false, nil
		}
		return binary.BigEndian.AppendUint16(dst, uint16(y)^(1<<15)), true, nil
	case KindEnum:
		e, ok := v.(uint16)
		if !ok {
			return dst, false, nil
		}
		return binary.BigEndian.AppendUint16(dst, e), true, nil
	case KindSet:
		s, ok := v.(uint64)
		if !ok {
			return dst, false, nil
		}
		return binary.BigEndian.AppendUint64(dst, s), true, nil
	}
	return nil, false, fmt.Errorf("%w: %s in a key", ErrUnsupportedType, t)
}

// signBit is the sign bit of a w-byte two's complement integer.
func signBit(w int) uint64 { return 1 << (8*w - 1) }

// appendFixed appends the low w bytes of v big-endian.
func appendFixed(dst []byte, v uint64, w int) []byte {
	for i := w - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

func readFixed(b []byte, w int) (uint64, []byte, error) {
	if len(b) < w {
		return 0, nil, fmt.Errorf("%w: %d bytes left, want %d", ErrCorrupt, len(b), w)
	}
	var v uint64
	for _, c := range b[:w] {
		v = v<<8 | uint64(c)
	}
	return v, b[w:], nil
}

func asInt64(v any) (int64, bool) {
	switch i := v.(type) {
	case int8:
		return int64(i), true
	case int16:
		return int64(i), true
	case int32:
		return int64(i), true
	case int64:
		return i, true
	}
	return 0, false
}

func asUint64(v any) (uint64, bool) {
	switch u := v.(type) {
	case uint8:
		return uint64(u), true
	case uint16:
		return uint64(u), true
	case uint32:
		return uint64(u), true
	case uint64:
		return u, true
	}
	return 0, false
}

// appendEscaped appends s with 0x00 escaped as 0x00 0xFF and the terminator
// 0x00 0x01: the terminator sorts below any escaped byte, so a string sorts
// before its extensions, and the encoding is prefix-free.
func appendEscaped[S string | []byte](dst []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		dst = append(dst, c)
		if c == 0 {
			dst = append(dst, 0xFF)
		}
	}
	return append(dst, 0x00, 0x01)
}

// readEscaped decodes an escaped string and returns the rest.
func readEscaped(b []byte) ([]byte, []byte, error) {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch b[i+1] {
		case 0x01:
			out = append(out, b[:i]...)
			return out, b[i+2:], nil
		case 0xFF:
			out = append(out, b[:i+1]...)
			b = b[i+2:]
			i = -1
		default:
			return nil, nil, fmt.Errorf("%w: bad escape 0x00 0x%02x", ErrCorrupt, b[i+1])
		}
	}
	return nil, nil, fmt.Errorf("%w: unterminated string", ErrCorrupt)
}

// appendCollated appends a sort key: per character 0x01 and its weight under
// the collation (4 bytes, sign bit flipped), then 0x00. GMS compares two
// strings weight by weight and then the shorter first, which is exactly the
// byte order of these keys.
func appendCollated(dst []byte, c sql.CollationID, s string) ([]byte, error) {
	weight := c.Sorter()
	enc := c.CharacterSet().Encoder()
	for len(s) > 0 {
		r, n := enc.NextRune(s)
		if n == 0 || r == 0xFFFD && n == 1 {
			return nil, fmt.Errorf("rowenc: malformed %s string in a key", c.CharacterSet())
		}
		dst = append(dst, 0x01)
		dst = binary.BigEndian.AppendUint32(dst, uint32(weight(r))^(1<<31))
		s = s[n:]
	}
	return append(dst, 0x00), nil
}

func skipCollated(b []byte) ([]byte, error) {
	for len(b) > 0 {
		switch b[0] {
		case 0x00:
			return b[1:], nil
		case 0x01:
			if len(b) < 5 {
				return nil, fmt.Errorf("%w: short collation weight", ErrCorrupt)
			}
			b = b[5:]
		default:
			return nil, fmt.Errorf("%w: collation key byte 0x%02x", ErrCorrupt, b[0])
		}
	}
	return nil, fmt.Errorf("%w: unterminated collation key", ErrCorrupt)
}

// Decimal keys: see the package comment above.
const (
	decNeg  byte = 0x01
	decZero byte = 0x02
	decPos  byte = 0x03
)

func appendDecimalKey(dst []byte, d decimal.Decimal) []byte {
	sign := d.Sign()
	if sign == 0 {
		return append(dst, decZero)
	}
	coef := new(big.Int).Abs(d.Coefficient())
	digits := coef.String()
	exp := int64(d.Exponent())
	// Strip trailing zeros: 1.50 and 1.5 are one value and one key.
	n := len(digits)
	for n > 1 && digits[n-1] == '0' {
		n--
		exp++
	}
	digits = digits[:n]
	e := uint32(int32(exp+int64(n))) ^ (1 << 31)
	flip := byte(0)
	if sign < 0 {
		dst = append(dst, decNeg)
		flip = 0xFF
	} else {
		dst = append(dst, decPos)
	}
	var eb [4]byte
	binary.BigEndian.PutUint32(eb[:], e)
	for _, c := range eb {
		dst = append(dst, c^flip)
	}
	for i := 0; i < len(digits); i++ {
		dst = append(dst, (digits[i]-'0'+1)^flip)
	}
	return append(dst, 0x00^flip)
}

func readDecimalKey(b []byte) (decimal.Decimal, []byte, error) {
	if len(b) == 0 {
		return decimal.Decimal{}, nil, fmt.Errorf("%w: empty decimal", ErrCorrupt)
	}
	var flip byte
	switch b[0] {
	case decZero:
		return decimal.Zero, b[1:], nil
	case decNeg:
		flip = 0xFF
	case decPos:
	default:
		return decimal.Decimal{}, nil, fmt.Errorf("%w: decimal sign 0x%02x", ErrCorrupt, b[0])
	}
	b = b[1:]
	if len(b) < 4 {
		return decimal.Decimal{}, nil, fmt.Errorf("%w: short decimal exponent", ErrCorrupt)
	}
	var eb [4]byte
	for i := range eb {
		eb[i] = b[i] ^ flip
	}
	e := int64(int32(binary.BigEndian.Uint32(eb[:]) ^ (1 << 31)))
	b = b[4:]
	var digits []byte
	for {
		if len(b) == 0 {
			return decimal.Decimal{}, nil, fmt.Errorf("%w: unterminated decimal", ErrCorrupt)
		}
		c := b[0] ^ flip
		b = b[1:]
		if c == 0 {
			break
		}
		if c < 1 || c > 10 {
			return decimal.Decimal{}, nil, fmt.Errorf("%w: decimal digit byte 0x%02x", ErrCorrupt, c)
		}
		digits = append(digits, '0'+c-1)
	}
	if len(digits) == 0 {
		return decimal.Decimal{}, nil, fmt.Errorf("%w: decimal without digits", ErrCorrupt)
	}
	coef, ok := new(big.Int).SetString(string(digits), 10)
	if !ok {
		return decimal.Decimal{}, nil, fmt.Errorf("%w: decimal digits", ErrCorrupt)
	}
	if flip != 0 {
		coef.Neg(coef)
	}
	return decimal.NewFromBigInt(coef, int32(e-int64(len(digits)))), b, nil
}

// KeyDecodable reports whether DecodeKey can recover a value of type t from
// its key (a collation sort key cannot).
func KeyDecodable(t sql.Type) bool {
	k, _ := KindOf(t)
	return k != KindCollated && k != KindJSON && k != KindUnsupported
}

// DecodeKey decodes one column of a key and returns the rest of b.
func DecodeKey(t sql.Type, b []byte) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty key column", ErrCorrupt)
	}
	switch b[0] {
	case keyNull:
		return nil, b[1:], nil
	case keyNotNull:
	default:
		return nil, nil, fmt.Errorf("%w: key column marker 0x%02x", ErrCorrupt, b[0])
	}
	b = b[1:]
	k, w := KindOf(t)
	switch k {
	case KindInt:
		x, rest, err := readFixed(b, w)
		if err != nil {
			return nil, nil, err
		}
		x ^= signBit(w)
		shift := 64 - 8*uint(w)
		i := int64(x<<shift) >> shift // sign-extend
		switch w {
		case 1:
			return int8(i), rest, nil
		case 2:
			return int16(i), rest, nil
		case 4:
			return int32(i), rest, nil
		}
		return i, rest, nil
	case KindUint:
		u, rest, err := readFixed(b, w)
		if err != nil {
			return nil, nil, err
		}
		switch w {
		case 1:
			return uint8(u), rest, nil
		case 2:
			return uint16(u), rest, nil
		case 4:
			return uint32(u), rest, nil
		}
		return u, rest, nil
	case KindFloat32:
		x, rest, err := readFixed(b, 4)
		if err != nil {
			return nil, nil, err
		}
		u := uint32(x)
		if u&(1<<31) != 0 {
			u &^= 1 << 31
		} else {
			u = ^u
		}
		return math.Float32frombits(u), rest, nil
	case KindFloat64:
		u, rest, err := readFixed(b, 8)
		if err != nil {
			return nil, nil, err
		}
		if u&(1<<63) != 0 {
			u &^= 1 << 63
		} else {
			u = ^u
		}
		return math.Float64frombits(u), rest, nil
	case KindDecimal:
		return readDecimalKey(b)
	case KindBytes:
		s, rest, err := readEscaped(b)
		if err != nil {
			return nil, nil, err
		}
		if types.IsBinaryType(t) {
			if s == nil {
				s = []byte{}
			}
			return s, rest, nil
		}
		return string(s), rest, nil
	case KindTime:
		sec, rest, err := readFixed(b, 8)
		if err != nil {
			return nil, nil, err
		}
		ns, rest, err := readFixed(rest, 4)
		if err != nil {
			return nil, nil, err
		}
		return time.Unix(int64(sec^(1<<63)), int64(ns)).UTC(), rest, nil
	case KindTimespan:
		u, rest, err := readFixed(b, 8)
		if err != nil {
			return nil, nil, err
		}
		return types.Timespan(int64(u ^ (1 << 63))), rest, nil
	case KindYear:
		u, rest, err := readFixed(b, 2)
		if err != nil {
			return nil, nil, err
		}
		return int16(uint16(u) ^ (1 << 15)), rest, nil
	case KindEnum:
		u, rest, err := readFixed(b, 2)
		if err != nil {
			return nil, nil, err
		}
		return uint16(u), rest, nil
	case KindSet:
		return readFixed(b, 8)
	case KindCollated:
		return nil, nil, fmt.Errorf("rowenc: a %s key is a sort key and cannot be decoded", t)
	}
	return nil, nil, fmt.Errorf("%w: %s in a key", ErrUnsupportedType, t)
}

// SkipKey returns b after one encoded key column of type t.
func SkipKey(t sql.Type, b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty key column", ErrCorrupt)
	}
	if b[0] == keyNull {
		return b[1:], nil
	}
	k, _ := KindOf(t)
	if k == KindCollated {
		if b[0] != keyNotNull {
			return nil, fmt.Errorf("%w: key column marker 0x%02x", ErrCorrupt, b[0])
		}
		return skipCollated(b[1:])
	}
	_, rest, err := DecodeKey(t, b)
	return rest, err
}
