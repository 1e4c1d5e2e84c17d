package rowenc

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// typeGen is a column type and a generator of its values (nil for NULL in
// about one draw of ten).
type typeGen struct {
	t   sql.Type
	gen *rapid.Generator[any]
}

func nullable(g *rapid.Generator[any]) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		if rapid.IntRange(0, 9).Draw(t, "null") == 0 {
			return nil
		}
		return g.Draw(t, "v")
	})
}

func anyOf[V any](g *rapid.Generator[V]) *rapid.Generator[any] {
	return rapid.Map(g, func(v V) any { return v })
}

// collatedRunes mixes letters that only case or accents tell apart, so the
// case- and accent-insensitive collation meets equal strings often.
var collatedRunes = []rune("aAáÁàbBcCçÇ eEéÉzZ0 9_-ßẞ\u00a0😀")

func stringGen(alphabet []rune) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		if rapid.Bool().Draw(t, "free") {
			return rapid.StringN(0, 12, -1).Draw(t, "s")
		}
		rs := rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 8).Draw(t, "rs")
		return string(rs)
	})
}

func timeGen(precisionNanos bool) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		// Years 1000..9999 (MySQL's DATETIME range), and some near 1970.
		sec := rapid.OneOf(rapid.Int64Range(-30610224000, 253402300799), rapid.Int64Range(-100, 100)).Draw(t, "sec")
		ns := int64(0)
		if precisionNanos {
			ns = rapid.Int64Range(0, 999999).Draw(t, "us") * 1000
		}
		return time.Unix(sec, ns).UTC()
	})
}

func decimalGen(maxScale int32) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		coef := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-1000, 1000)).Draw(t, "coef")
		scale := rapid.Int32Range(0, maxScale).Draw(t, "scale")
		return decimal.New(coef, -scale)
	})
}

func typeGens() []typeGen {
	aici := types.MustCreateString(sqltypes.VarChar, 255, sql.Collation_utf8mb4_0900_ai_ci)
	bin := types.MustCreateString(sqltypes.VarChar, 255, sql.Collation_utf8mb4_0900_bin)
	enum := types.MustCreateEnumType([]string{"x", "y", "z"}, sql.Collation_Default)
	set := types.MustCreateSetType([]string{"p", "q", "r"}, sql.Collation_Default)
	return []typeGen{
		{types.Int8, anyOf(rapid.Int8())},
		{types.Int16, anyOf(rapid.Int16())},
		{types.Int24, anyOf(rapid.Int32Range(-1<<23, 1<<23-1))},
		{types.Int32, anyOf(rapid.Int32())},
		{types.Int64, anyOf(rapid.Int64())},
		{types.Uint8, anyOf(rapid.Uint8())},
		{types.Uint16, anyOf(rapid.Uint16())},
		{types.Uint24, anyOf(rapid.Uint32Range(0, 1<<24-1))},
		{types.Uint32, anyOf(rapid.Uint32())},
		{types.Uint64, anyOf(rapid.Uint64())},
		{types.Float32, anyOf(rapid.Float32().Filter(func(f float32) bool { return f == f }))},
		{types.Float64, anyOf(rapid.Float64().Filter(func(f float64) bool { return f == f }))},
		{types.MustCreateDecimalType(65, 10), decimalGen(10)},
		{types.MustCreateDecimalType(10, 0), anyOf(rapid.Map(rapid.Int64Range(-9999999999, 9999999999), func(i int64) decimal.Decimal { return decimal.New(i, 0) }))},
		{bin, anyOf(stringGen(collatedRunes))},
		{aici, anyOf(stringGen(collatedRunes))},
		{types.Text, anyOf(rapid.String())},
		{types.MustCreateBinary(sqltypes.VarBinary, 255), anyOf(rapid.SliceOf(rapid.SampledFrom([]byte{0, 1, 0xFF, 'a', 0xFE})))},
		{types.Blob, anyOf(rapid.SliceOf(rapid.Byte()))},
		{types.Date, rapid.Map(timeGen(false), func(v any) any { return v.(time.Time).Truncate(24 * time.Hour) })},
		{types.Datetime, timeGen(false)},
		{types.DatetimeMaxPrecision, timeGen(true)},
		{types.Timestamp, timeGen(false)},
		{types.Time, anyOf(rapid.Map(rapid.Int64Range(-838*3600e6, 838*3600e6), func(i int64) types.Timespan { return types.Timespan(i) }))},
		{types.Year, anyOf(rapid.OneOf(rapid.Just(int16(0)), rapid.Int16Range(1901, 2155)))},
		{enum, anyOf(rapid.Uint16Range(1, 3))},
		{set, anyOf(rapid.Uint64Range(0, 7))},
		{types.MustCreateBitType(64), anyOf(rapid.Uint64())},
	}
}

// mysqlCompare is the type's comparison with NULL first, as MySQL's
// ascending order (and GMS's ORDER BY and index ranges) put it; GMS's
// Type.Compare itself puts NULL last.
func mysqlCompare(ctx context.Context, t sql.Type, a, b any) (int, error) {
	switch {
	case a == nil && b == nil:
		return 0, nil
	case a == nil:
		return -1, nil
	case b == nil:
		return 1, nil
	}
	return t.Compare(ctx, a, b)
}

// TestKeyEncodingPreservesOrder checks, for every key type, that the byte
// order of two keys is the type's own comparison (GMS's Type.Compare), NULL
// first.
func TestKeyEncodingPreservesOrder(t *testing.T) {
	ctx := context.Background()
	for _, tg := range typeGens() {
		t.Run(tg.t.String(), func(t *testing.T) {
			gen := nullable(tg.gen)
			rapid.Check(t, func(rt *rapid.T) {
				a, b := gen.Draw(rt, "a"), gen.Draw(rt, "b")
				ka, err := AppendKey(nil, tg.t, a)
				require.NoError(rt, err)
				kb, err := AppendKey(nil, tg.t, b)
				require.NoError(rt, err)
				want, err := mysqlCompare(ctx, tg.t, a, b)
				require.NoError(rt, err)
				require.Equal(rt, want, bytes.Compare(ka, kb), "%v vs %v: keys %x %x", a, b, ka, kb)
			})
		})
	}
}

// TestKeyEncodingRoundTrips checks that every decodable key type decodes to
// a value equal to the original under the type's comparison, that SkipKey
// skips exactly one column, and that a concatenation of keys (a composite
// key) decodes column by column.
func TestKeyEncodingRoundTrips(t *testing.T) {
	ctx := context.Background()
	gens := typeGens()
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "columns")
		var ts []sql.Type
		var vals []any
		var key []byte
		for range n {
			tg := gens[rapid.IntRange(0, len(gens)-1).Draw(rt, "type")]
			v := nullable(tg.gen).Draw(rt, "v")
			var err error
			key, err = AppendKey(key, tg.t, v)
			require.NoError(rt, err)
			ts, vals = append(ts, tg.t), append(vals, v)
		}
		rest := key
		for i, typ := range ts {
			skipped, err := SkipKey(typ, rest)
			require.NoError(rt, err)
			if KeyDecodable(typ) {
				got, r2, err := DecodeKey(typ, rest)
				require.NoError(rt, err)
				require.Equal(rt, len(skipped), len(r2))
				c, err := typ.Compare(ctx, vals[i], got)
				require.NoError(rt, err)
				require.Zero(rt, c, "column %d %s: %v decoded as %v", i, typ, vals[i], got)
				if vals[i] != nil {
					require.IsType(rt, vals[i], got)
				}
			}
			rest = skipped
		}
		require.Empty(rt, rest)
	})
}

// TestCompositeKeysSortColumnByColumn checks that concatenated keys sort as
// tuples: the first column decides, then the next (prefix-freeness).
func TestCompositeKeysSortColumnByColumn(t *testing.T) {
	ctx := context.Background()
	gens := typeGens()
	rapid.Check(t, func(rt *rapid.T) {
		t1 := gens[rapid.IntRange(0, len(gens)-1).Draw(rt, "t1")]
		t2 := gens[rapid.IntRange(0, len(gens)-1).Draw(rt, "t2")]
		g1, g2 := nullable(t1.gen), nullable(t2.gen)
		a1, a2, b1, b2 := g1.Draw(rt, "a1"), g2.Draw(rt, "a2"), g1.Draw(rt, "b1"), g2.Draw(rt, "b2")
		enc := func(x, y any) []byte {
			k, err := AppendKey(nil, t1.t, x)
			require.NoError(rt, err)
			k, err = AppendKey(k, t2.t, y)
			require.NoError(rt, err)
			return k
		}
		c, err := mysqlCompare(ctx, t1.t, a1, b1)
		require.NoError(rt, err)
		if c == 0 {
			c, err = mysqlCompare(ctx, t2.t, a2, b2)
			require.NoError(rt, err)
		}
		require.Equal(rt, c, bytes.Compare(enc(a1, a2), enc(b1, b2)))
	})
}

func TestKeyEncodingCorners(t *testing.T) {
	neg0, err := AppendKey(nil, types.Float64, math.Copysign(0, -1))
	require.NoError(t, err)
	pos0, err := AppendKey(nil, types.Float64, 0.0)
	require.NoError(t, err)
	require.Equal(t, pos0, neg0, "-0 and 0 are one key")

	d1, err := AppendKey(nil, types.MustCreateDecimalType(10, 2), decimal.RequireFromString("1.50"))
	require.NoError(t, err)
	d2, err := AppendKey(nil, types.MustCreateDecimalType(10, 2), decimal.RequireFromString("1.5"))
	require.NoError(t, err)
	require.Equal(t, d1, d2, "1.50 and 1.5 are one key")

	// A value of another Go type converts through the column type.
	k1, err := AppendKey(nil, types.Int32, int64(7))
	require.NoError(t, err)
	k2, err := AppendKey(nil, types.Int32, int32(7))
	require.NoError(t, err)
	require.Equal(t, k2, k1)

	_, err = AppendKey(nil, types.JSON, types.JSONDocument{Val: 1.0})
	require.ErrorIs(t, err, ErrUnsupportedType)
	require.ErrorIs(t, Supported(types.JSON, true), ErrUnsupportedType)
	require.NoError(t, Supported(types.JSON, false))

	_, _, err = DecodeKey(types.Int32, []byte{0x07})
	require.ErrorIs(t, err, ErrCorrupt)
	aici := types.MustCreateString(sqltypes.VarChar, 10, sql.Collation_utf8mb4_0900_ai_ci)
	require.False(t, KeyDecodable(aici))
	ka, _ := AppendKey(nil, aici, "Résumé")
	kb, _ := AppendKey(nil, aici, "resume")
	require.Equal(t, ka, kb, "ai_ci ignores case and accents")
}

func TestUvarintAscendingSortsAndRoundTrips(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		a := rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 300)).Draw(rt, "a")
		b := rapid.OneOf(rapid.Uint64(), rapid.Uint64Range(0, 300)).Draw(rt, "b")
		ea, eb := AppendUvarintAscending(nil, a), AppendUvarintAscending(nil, b)
		want := 0
		if a < b {
			want = -1
		} else if a > b {
			want = 1
		}
		require.Equal(rt, want, bytes.Compare(ea, eb))
		got, rest, err := DecodeUvarintAscending(append(ea, 0x42))
		require.NoError(rt, err)
		require.Equal(rt, a, got)
		require.Equal(rt, []byte{0x42}, rest)
	})
}

func TestTableSpansNest(t *testing.T) {
	for _, id := range []uint32{1, 2, 0xEF, 0xF0, 0x1234} {
		ts := TableSpan(id)
		k := append(IndexPrefix(id, PrimaryIndexID), 0xFF, 0xFF)
		require.True(t, bytes.Compare(ts.Start, k) <= 0 && bytes.Compare(k, ts.End) < 0, fmt.Sprint(id))
		require.True(t, bytes.Compare(AutoIncrementKey(id), ts.End) < 0)
		next := TableSpan(id + 1)
		require.True(t, bytes.Compare(ts.End, next.Start) <= 0)
	}
}
