package rowenc

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/shopspring/decimal"
)

// Value encoding. A row's value (the columns its key does not hold) is a
// list of columns keyed by column id, in increasing id order:
//
//	value  := 0x01 { uvarint(column id) uvarint(n) body(n-1 bytes) }
//
// n = 0 is NULL; otherwise the body has n-1 bytes. Every entry can be
// skipped without knowing its type, so a value written before DROP COLUMN
// still decodes (the dropped column's entry is skipped), and one written
// before ADD COLUMN lacks the new id (the reader fills the column's default
// recorded by the catalog). Neither needs the table rewritten.
//
// Bodies: integers as zig-zag (signed) or plain uvarints; FLOAT/DOUBLE as
// IEEE bits (4 or 8 bytes); DECIMAL as its exact decimal string; strings and
// byte strings as their bytes; DATE/DATETIME/TIMESTAMP as varint seconds and
// uvarint nanoseconds; TIME as varint microseconds; YEAR, ENUM, SET, BIT as
// their integer; JSON as its text.

const valueFormat byte = 0x01

// ValueColumn is one column a value holds: its id, its type, and its
// position in a row.
type ValueColumn struct {
	ID   uint32
	Type sql.Type
	Pos  int
}

// AppendValue appends the value of row's columns cols (in increasing id
// order) to dst.
func AppendValue(dst []byte, cols []ValueColumn, row sql.Row) ([]byte, error) {
	dst = append(dst, valueFormat)
	var body []byte
	for i := range cols {
		c := &cols[i]
		if i > 0 && c.ID <= cols[i-1].ID {
			return nil, fmt.Errorf("rowenc: value columns not in increasing id order")
		}
		dst = binary.AppendUvarint(dst, uint64(c.ID))
		v := row[c.Pos]
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		var err error
		body, err = appendValueBody(body[:0], c.Type, v)
		if err != nil {
			return nil, fmt.Errorf("column %d: %w", c.ID, err)
		}
		dst = binary.AppendUvarint(dst, uint64(len(body))+1)
		dst = append(dst, body...)
	}
	return dst, nil
}

func appendValueBody(dst []byte, t sql.Type, v any) ([]byte, error) {
	out, ok, err := valueBody(dst, t, v)
	if err != nil || ok {
		return out, err
	}
	c, err := canonical(t, v)
	if err != nil {
		return nil, err
	}
	out, ok, err = valueBody(dst, t, c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %T for %s", ErrUnsupportedType, c, t)
	}
	return out, nil
}

func valueBody(dst []byte, t sql.Type, v any) ([]byte, bool, error) {
	k, _ := KindOf(t)
	switch k {
	case KindInt:
		i, ok := asInt64(v)
		return binary.AppendVarint(dst, i), ok, nil
	case KindUint:
		u, ok := asUint64(v)
		return binary.AppendUvarint(dst, u), ok, nil
	case KindFloat32:
		f, ok := v.(float32)
		return binary.BigEndian.AppendUint32(dst, math.Float32bits(f)), ok, nil
	case KindFloat64:
		f, ok := v.(float64)
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f)), ok, nil
	case KindDecimal:
		d, ok := v.(decimal.Decimal)
		if !ok {
			return dst, false, nil
		}
		return append(dst, d.String()...), true, nil
	case KindBytes, KindCollated:
		switch s := v.(type) {
		case string:
			return append(dst, s...), true, nil
		case []byte:
			return append(dst, s...), true, nil
		}
		return dst, false, nil
	case KindTime:
		tm, ok := v.(time.Time)
		if !ok {
			return dst, false, nil
		}
		dst = binary.AppendVarint(dst, tm.Unix())
		return binary.AppendUvarint(dst, uint64(tm.Nanosecond())), true, nil
	case KindTimespan:
		ts, ok := v.(types.Timespan)
		return binary.AppendVarint(dst, int64(ts)), ok, nil
	case KindYear:
		y, ok := v.(int16)
		return binary.AppendVarint(dst, int64(y)), ok, nil
	case KindEnum:
		e, ok := v.(uint16)
		return binary.AppendUvarint(dst, uint64(e)), ok, nil
	case KindSet:
		s, ok := v.(uint64)
		return binary.AppendUvarint(dst, s), ok, nil
	case KindJSON:
		w, ok := v.(sql.JSONWrapper)
		if !ok {
			return dst, false, nil
		}
		b, err := types.MarshallJson(w)
		if err != nil {
			return nil, false, err
		}
		return append(dst, b...), true, nil
	}
	return nil, false, fmt.Errorf("%w: %s", ErrUnsupportedType, t)
}

// DecodeValue decodes a value into row at the positions cols (in increasing
// id order) give; present[i] tells whether cols[i] was in the value (a
// column added after the value was written is not). Entries of ids not in
// cols (dropped columns) are skipped.
func DecodeValue(b []byte, cols []ValueColumn, row sql.Row, present []bool) error {
	if len(b) == 0 || b[0] != valueFormat {
		return fmt.Errorf("%w: value format", ErrCorrupt)
	}
	b = b[1:]
	clear(present)
	j := 0
	var prev uint64
	first := true
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("%w: column id", ErrCorrupt)
		}
		b = b[n:]
		if !first && id <= prev {
			return fmt.Errorf("%w: column ids not increasing", ErrCorrupt)
		}
		first, prev = false, id
		l, n := binary.Uvarint(b)
		if n <= 0 || l-1 > uint64(len(b)-n) && l != 0 {
			return fmt.Errorf("%w: column %d length", ErrCorrupt, id)
		}
		b = b[n:]
		var body []byte
		if l > 0 {
			body, b = b[:l-1], b[l-1:]
		}
		for j < len(cols) && uint64(cols[j].ID) < id {
			j++
		}
		if j == len(cols) || uint64(cols[j].ID) != id {
			continue // a dropped column
		}
		c := &cols[j]
		present[j] = true
		if l == 0 {
			row[c.Pos] = nil
			continue
		}
		v, err := decodeValueBody(c.Type, body)
		if err != nil {
			return fmt.Errorf("column %d: %w", id, err)
		}
		row[c.Pos] = v
	}
	return nil
}

func decodeValueBody(t sql.Type, b []byte) (any, error) {
	k, w := KindOf(t)
	bad := func() error { return fmt.Errorf("%w: %s body of %d bytes", ErrCorrupt, t, len(b)) }
	switch k {
	case KindInt:
		i, n := binary.Varint(b)
		if n != len(b) {
			return nil, bad()
		}
		switch w {
		case 1:
			return int8(i), nil
		case 2:
			return int16(i), nil
		case 4:
			return int32(i), nil
		}
		return i, nil
	case KindUint:
		u, n := binary.Uvarint(b)
		if n != len(b) {
			return nil, bad()
		}
		switch w {
		case 1:
			return uint8(u), nil
		case 2:
			return uint16(u), nil
		case 4:
			return uint32(u), nil
		}
		return u, nil
	case KindFloat32:
		if len(b) != 4 {
			return nil, bad()
		}
		return math.Float32frombits(binary.BigEndian.Uint32(b)), nil
	case KindFloat64:
		if len(b) != 8 {
			return nil, bad()
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), nil
	case KindDecimal:
		d, err := decimal.NewFromString(string(b))
		if err != nil {
			return nil, fmt.Errorf("%w: decimal %q", ErrCorrupt, b)
		}
		return d, nil
	case KindBytes, KindCollated:
		if types.IsBinaryType(t) {
			return append([]byte{}, b...), nil
		}
		return string(b), nil
	case KindTime:
		sec, n := binary.Varint(b)
		if n <= 0 {
			return nil, bad()
		}
		ns, m := binary.Uvarint(b[n:])
		if m <= 0 || n+m != len(b) || ns >= 1e9 {
			return nil, bad()
		}
		return time.Unix(sec, int64(ns)).UTC(), nil
	case KindTimespan:
		i, n := binary.Varint(b)
		if n != len(b) {
			return nil, bad()
		}
		return types.Timespan(i), nil
	case KindYear:
		i, n := binary.Varint(b)
		if n != len(b) {
			return nil, bad()
		}
		return int16(i), nil
	case KindEnum:
		u, n := binary.Uvarint(b)
		if n != len(b) {
			return nil, bad()
		}
		return uint16(u), nil
	case KindSet:
		u, n := binary.Uvarint(b)
		if n != len(b) {
			return nil, bad()
		}
		return u, nil
	case KindJSON:
		v, _, err := types.JSON.Convert(context.Background(), string(b))
		if err != nil {
			return nil, fmt.Errorf("%w: json: %v", ErrCorrupt, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, t)
}

// AppendValueOf encodes one value of type t alone (the body of a value
// entry); tests and the catalog (missing values of added columns) use it.
func AppendValueOf(dst []byte, t sql.Type, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	out, err := appendValueBody(dst, t, v)
	if out == nil && err == nil {
		out = []byte{} // an empty string is not NULL
	}
	return out, err
}

// DecodeValueOf decodes what AppendValueOf wrote (nil bytes: NULL).
func DecodeValueOf(t sql.Type, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return decodeValueBody(t, b)
}
