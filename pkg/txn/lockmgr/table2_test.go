package lockmgr

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// table2 is the compatibility matrix of the paper (Table 2) with
// range-granular structural locks (txn.md L1–L3): conflict[held][requested]
// for two different transactions whose locks overlap.
var table2 = map[Mode]map[Mode]bool{
	R:  {R: false, W: true, SR: false, SW: false},
	W:  {R: true, W: true, SR: false, SW: false},
	SR: {R: false, W: false, SR: false, SW: true},
	SW: {R: false, W: false, SR: true, SW: false},
}

// tag names the rule that decides a cell.
func tag(a, b Mode) string {
	key := func(m Mode) bool { return m == R || m == W }
	switch {
	case key(a) && key(b):
		return "L1"
	case !key(a) && !key(b):
		return "L2"
	}
	return "L3"
}

// lockOn builds a lock of mode m that covers key k: SR takes [k, k+"~").
// With overlap false it is placed on a key range disjoint from "k".
func lockOn(m Mode, overlap bool) Lock {
	k, end := "k", "l"
	if !overlap {
		k, end = "x", "y"
	}
	if m == SR {
		return Lock{Mode: SR, Start: []byte(k), End: []byte(end)}
	}
	return Lock{Mode: m, Start: []byte(k)}
}

// TestTable2EveryCell checks the sixteen cells of Table 2, each with
// overlapping and with disjoint locks, held by another transaction and by the
// same one. txn.md L1 (R–R share, R–W and W–W conflict), L2 (SR–SR and
// SW–SW share, SR–SW conflict where they overlap), L3 (key and structural
// locks never conflict), L4 (a transaction's own locks never conflict).
func TestTable2EveryCell(t *testing.T) {
	modes := []Mode{R, W, SR, SW}
	for _, held := range modes {
		for _, asked := range modes {
			for _, overlap := range []bool{true, false} {
				want := overlap && table2[held][asked]
				name := fmt.Sprintf("%s/held=%v/asked=%v/overlap=%v", tag(held, asked), held, asked, overlap)

				t.Run(name+"/other-txn", func(t *testing.T) {
					tb := New()
					mustAcquire(t, tb, txn(1), lockOn(held, true))
					// Conflicts asks the same question without acquiring.
					c, err := tb.Conflicts(tid(2), []Lock{lockOn(asked, overlap)})
					require.NoError(t, err)
					if want {
						require.Equal(t, []Holder{txn(1)}, c)
					} else {
						require.Nil(t, c)
					}
					c, err = tb.Acquire(txn(2), []Lock{lockOn(asked, overlap)})
					require.NoError(t, err)
					require.NoError(t, checkTable(tb))
					if want {
						require.Equal(t, []Holder{txn(1)}, c)
						_, ok := tb.Held(tid(2))
						require.False(t, ok, "a refused request holds nothing")
					} else {
						require.Nil(t, c)
						_, ok := tb.Held(tid(2))
						require.True(t, ok)
					}
				})

				// L4: the same transaction may hold both, whatever the cell.
				t.Run(name+"/same-txn", func(t *testing.T) {
					tb := New()
					mustAcquire(t, tb, txn(1), lockOn(held, true), lockOn(asked, overlap))
					c, err := tb.Conflicts(tid(1), []Lock{lockOn(asked, overlap)})
					require.NoError(t, err)
					require.Nil(t, c)
					require.True(t, tb.Release(tid(1)))
					require.NoError(t, checkTable(tb))
					require.Zero(t, tb.Len())
				})
			}
		}
	}
}

// TestReadThenWriteUpgradesWithinTransaction: txn.md L4, the read → write
// upgrade. R and W on one key in one request give W, which then excludes
// other readers and writers (L1).
func TestReadThenWriteUpgradesWithinTransaction(t *testing.T) {
	for _, req := range [][]Lock{
		{rl("k"), wl("k")},
		{wl("k"), rl("k")},
		{rl("k"), rl("k"), wl("k"), rl("k"), wl("k")},
	} {
		tb := New()
		mustAcquire(t, tb, txn(1), req...)
		held, ok := tb.Held(tid(1))
		require.True(t, ok)
		require.Equal(t, []Lock{wl("k")}, held)
		for _, l := range []Lock{rl("k"), wl("k")} {
			c, err := tb.Acquire(txn(2), []Lock{l})
			require.NoError(t, err)
			require.Equal(t, []Holder{txn(1)}, c, "%v against an upgraded W", l)
		}
	}
}

// TestUpgradeRefusedWhileAnotherReads: txn.md L1 with L4 — a transaction's
// own R does not excuse another transaction's R: R+W on a key someone else
// reads conflicts with that reader.
func TestUpgradeRefusedWhileAnotherReads(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), rl("k"))
	c, err := tb.Acquire(txn(2), []Lock{rl("k"), wl("k")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(1)}, c)
	require.NoError(t, checkTable(tb))
}

// TestConflictsIgnoresCallersOwnLocks: txn.md L4 and M4 — Conflicts for a
// holder in the table leaves its own locks out, and acquires nothing.
func TestConflictsIgnoresCallersOwnLocks(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), rl("k"), srl("a", "m"))
	mustAcquire(t, tb, txn(2), rl("k"))
	c, err := tb.Conflicts(tid(1), []Lock{wl("k"), swl("b")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(2)}, c, "txn 1's own R and SR do not count")
	c, err = tb.Conflicts(tid(3), []Lock{wl("k"), swl("b")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(1), txn(2)}, c)
	require.Equal(t, 2, tb.Len(), "Conflicts acquires nothing")
	_, ok := tb.Held(tid(3))
	require.False(t, ok)
	require.NoError(t, checkTable(tb))
}
