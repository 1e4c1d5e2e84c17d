package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tags (the bank's unique written values) never repeat, within a key and
// across keys, and carry the key's tag base.
func TestTagsAreUniqueAcrossKeys(t *testing.T) {
	ts := newTagSource()
	seen := map[int64]bool{}
	for i := range 3000 {
		kt := int64(1 + i%3)
		tag := ts.next(kt)
		require.False(t, seen[tag])
		seen[tag] = true
		require.Equal(t, kt, tag>>tagCounterBits)
	}
	// A later process with the same key starts at the wall clock's
	// microseconds, above every tag an earlier one handed out before then
	// (it hands out at most one per microsecond on average).
	before := time.Now().UnixMicro() & (1<<tagCounterBits - 1)
	tag := newTagSource().next(1)
	require.GreaterOrEqual(t, tag&(1<<tagCounterBits-1), before)
}

func TestBankValuesRoundTrip(t *testing.T) {
	bal, tag, err := decodeBankValue(encodeBankValue(-17, 1<<41+5))
	require.NoError(t, err)
	require.Equal(t, -17, bal)
	require.Equal(t, int64(1<<41+5), tag)
	_, _, err = decodeBankValue([]byte("12"))
	require.ErrorContains(t, err, "without a tag")
}
