package rowenc

import (
	"context"
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
)

// ErrUnsupportedType is returned for a column type this package cannot
// store (spatial types, and JSON in a key).
var ErrUnsupportedType = errors.New("rowenc: unsupported type")

// Kind is how a column type is stored.
type Kind uint8

// The kinds.
const (
	KindUnsupported Kind = iota
	KindInt              // signed integers: int8, int16, int32 (INT24 too), int64
	KindUint             // unsigned integers, and BIT (uint64)
	KindFloat32
	KindFloat64
	KindDecimal // decimal.Decimal
	KindBytes   // strings compared byte by byte: binary types and _bin collations whose weights are the code points
	KindCollated
	KindTime     // DATE, DATETIME, TIMESTAMP: time.Time
	KindTimespan // TIME: types.Timespan (microseconds)
	KindYear     // int16
	KindEnum     // uint16, the value's index
	KindSet      // uint64, the members' bits
	KindJSON
)

// KindOf classifies a GMS type, with the width in bytes of a fixed-width
// integer kind.
func KindOf(t sql.Type) (Kind, int) {
	switch t.Type() {
	case sqltypes.Int8:
		return KindInt, 1
	case sqltypes.Int16:
		return KindInt, 2
	case sqltypes.Int24, sqltypes.Int32:
		return KindInt, 4
	case sqltypes.Int64:
		return KindInt, 8
	case sqltypes.Uint8:
		return KindUint, 1
	case sqltypes.Uint16:
		return KindUint, 2
	case sqltypes.Uint24, sqltypes.Uint32:
		return KindUint, 4
	case sqltypes.Uint64, sqltypes.Bit:
		return KindUint, 8
	case sqltypes.Float32:
		return KindFloat32, 4
	case sqltypes.Float64:
		return KindFloat64, 8
	case sqltypes.Decimal:
		return KindDecimal, 0
	case sqltypes.Char, sqltypes.VarChar, sqltypes.Text, sqltypes.Binary, sqltypes.VarBinary, sqltypes.Blob:
		if bytewise(t) {
			return KindBytes, 0
		}
		return KindCollated, 0
	case sqltypes.Date, sqltypes.Datetime, sqltypes.Timestamp:
		return KindTime, 0
	case sqltypes.Time:
		return KindTimespan, 0
	case sqltypes.Year:
		return KindYear, 0
	case sqltypes.Enum:
		return KindEnum, 0
	case sqltypes.Set:
		return KindSet, 0
	case sqltypes.TypeJSON:
		return KindJSON, 0
	}
	return KindUnsupported, 0
}

// bytewise reports whether a string type compares as its bytes: binary
// types, and collations whose rune weight is the code point (UTF-8 keeps
// code-point order in byte order), as GMS's StringType.Compare does.
func bytewise(t sql.Type) bool {
	if types.IsBinaryType(t) {
		return true
	}
	st, ok := t.(sql.StringType)
	if !ok {
		return false
	}
	switch st.Collation() {
	case sql.Collation_binary, sql.Collation_utf8mb4_0900_bin:
		return true
	}
	return false
}

// Supported reports an error if values of t cannot be stored; inKey also
// requires an order-preserving key encoding.
func Supported(t sql.Type, inKey bool) error {
	k, _ := KindOf(t)
	switch {
	case k == KindUnsupported:
		return fmt.Errorf("%w: %s", ErrUnsupportedType, t)
	case inKey && k == KindJSON:
		return fmt.Errorf("%w: %s cannot be part of a key or index", ErrUnsupportedType, t)
	case k == KindCollated:
		st := t.(sql.StringType)
		if st.Collation().Sorter() == nil {
			return fmt.Errorf("%w: collation %s has no sort order in this engine", ErrUnsupportedType, st.Collation())
		}
	}
	return nil
}

// canonical converts v to the Go type the kind stores when it is not that
// type already (a wrapper, or a value an expression produced).
func canonical(t sql.Type, v any) (any, error) {
	v, err := sql.UnwrapAny(context.Background(), v)
	if err != nil {
		return nil, err
	}
	c, _, err := t.Convert(context.Background(), v)
	if err != nil {
		return nil, fmt.Errorf("rowenc: %v as %s: %w", v, t, err)
	}
	return sql.UnwrapAny(context.Background(), c)
}
