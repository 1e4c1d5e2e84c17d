package rowenc

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestValueEncodingRoundTrips encodes rows of random columns and decodes
// them: equal values (by the type's comparison), NULLs kept, and columns the
// reader does not know skipped.
func TestValueEncodingRoundTrips(t *testing.T) {
	ctx := context.Background()
	gens := append(typeGens(), typeGen{types.JSON, anyOf(rapid.Map(rapid.SampledFrom([]string{`{"a":1}`, `[1,2,"x"]`, `"s"`, `null`, `3.5`}),
		func(s string) sql.JSONWrapper {
			v, _, _ := types.JSON.Convert(context.Background(), s)
			return v.(sql.JSONWrapper)
		}))})
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(rt, "columns")
		var cols []ValueColumn
		row := make(sql.Row, n)
		id := uint32(0)
		for i := range n {
			id += uint32(rapid.IntRange(1, 300).Draw(rt, "gap"))
			tg := gens[rapid.IntRange(0, len(gens)-1).Draw(rt, "type")]
			cols = append(cols, ValueColumn{ID: id, Type: tg.t, Pos: i})
			row[i] = nullable(tg.gen).Draw(rt, "v")
		}
		enc, err := AppendValue(nil, cols, row)
		require.NoError(rt, err)

		// The reader knows a random subset of the columns (the others were
		// dropped) plus one it does not find (added later).
		var known []ValueColumn
		for _, c := range cols {
			if rapid.Bool().Draw(rt, "known") {
				known = append(known, c)
			}
		}
		known = append(known, ValueColumn{ID: id + 1, Type: types.Int64, Pos: n})
		out := make(sql.Row, n+1)
		present := make([]bool, len(known))
		require.NoError(rt, DecodeValue(enc, known, out, present))
		for j, c := range known {
			if c.ID == id+1 {
				require.False(rt, present[j])
				continue
			}
			require.True(rt, present[j])
			if row[c.Pos] == nil {
				require.Nil(rt, out[c.Pos])
				continue
			}
			cmp, err := c.Type.Compare(ctx, row[c.Pos], out[c.Pos])
			require.NoError(rt, err)
			require.Zero(rt, cmp, "%s: %v decoded as %v", c.Type, row[c.Pos], out[c.Pos])
		}
	})
}

func TestValueOfKeepsEmptyStringApartFromNull(t *testing.T) {
	b, err := AppendValueOf(nil, types.Text, "")
	require.NoError(t, err)
	require.NotNil(t, b)
	v, err := DecodeValueOf(types.Text, b)
	require.NoError(t, err)
	require.Equal(t, "", v)
	b, err = AppendValueOf(nil, types.Text, nil)
	require.NoError(t, err)
	v, err = DecodeValueOf(types.Text, b)
	require.NoError(t, err)
	require.Nil(t, v)
}

func TestDecodeValueRejectsCorruptBytes(t *testing.T) {
	cols := []ValueColumn{{ID: 1, Type: types.Int64, Pos: 0}}
	row := make(sql.Row, 1)
	present := make([]bool, 1)
	for _, b := range [][]byte{nil, {0x02}, {0x01, 0x01}, {0x01, 0x01, 0x05, 0x01}, {0x01, 0x02, 0x00, 0x01, 0x00}} {
		require.ErrorIs(t, DecodeValue(b, cols, row, present), ErrCorrupt, "%x", b)
	}
}
