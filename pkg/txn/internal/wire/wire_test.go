package wire

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestUvarintRoundTripsAndRejectsNonMinimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint64().Draw(t, "v")
		b := AppendUvarint(nil, v)
		require.Equal(t, UvarintLen(v), len(b))
		r := NewReader(b)
		require.Equal(t, v, r.Uvarint("v"))
		require.NoError(t, r.Done("v"))
	})
	for _, bad := range [][]byte{
		{0x80, 0x00},       // 0 in two bytes
		{0x81, 0x80, 0x00}, // 1 in three bytes
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, // > 64 bits
		{0x80}, // truncated
	} {
		r := NewReader(bad)
		r.Uvarint("v")
		require.True(t, errors.Is(r.Err(), ErrMalformed), "%x", bad)
	}
	r := NewReader(AppendUvarint(nil, math.MaxUint64))
	require.Equal(t, uint64(math.MaxUint64), r.Uvarint("max"))
	require.NoError(t, r.Done("max"))
}

func TestReaderRejectsTrailingBytesAndOverruns(t *testing.T) {
	r := NewReader([]byte{2, 'a', 'b', 'c'})
	require.Equal(t, []byte("ab"), r.Bytes("s", 0))
	require.ErrorIs(t, r.Done("s"), ErrMalformed)

	r = NewReader([]byte{5, 'a'})
	require.Nil(t, r.Bytes("s", 0))
	require.ErrorIs(t, r.Err(), ErrMalformed)

	r = NewReader([]byte{3, 'a', 'b', 'c'})
	require.Nil(t, r.Bytes("s", 2))
	require.ErrorIs(t, r.Err(), ErrMalformed)

	r = NewReader([]byte{2})
	require.False(t, r.Bool("b"))
	require.ErrorIs(t, r.Err(), ErrMalformed)

	r = NewReader([]byte{200, 1})
	require.Zero(t, r.Count("n", 1, 0))
	require.ErrorIs(t, r.Err(), ErrMalformed)
}
