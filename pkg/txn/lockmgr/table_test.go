package lockmgr

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRefusedRequestLeavesNothingGranted: txn.md L6 — acquisition is all or
// nothing. A request whose last lock conflicts is refused, and none of its
// earlier locks (of every mode) stays behind: other transactions can then
// take exactly the locks it would have blocked.
func TestRefusedRequestLeavesNothingGranted(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), wl("z"))
	c, err := tb.Acquire(txn(2), []Lock{rl("a"), wl("b"), srl("c", "d"), swl("e"), rl("z")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(1)}, c)
	require.NoError(t, checkTable(tb))
	require.Equal(t, 1, tb.Len())
	_, ok := tb.Held(tid(2))
	require.False(t, ok)
	// Each of these would conflict with one of txn 2's locks had any stayed.
	mustAcquire(t, tb, txn(3), wl("a"), wl("b"), swl("c"), srl("e", "f"))
	// And txn 2 can acquire later, once txn 1 and 3 are gone: it was never
	// registered, so this is not ErrHolderExists.
	require.True(t, tb.Release(tid(1)))
	require.True(t, tb.Release(tid(3)))
	mustAcquire(t, tb, txn(2), rl("a"), wl("b"), srl("c", "d"), swl("e"), rl("z"))
}

// TestConflictsReportedInDeliveryOrderOnce: txn.md E3 — the report lists
// every conflicting holder exactly once, sorted by delivery order, whatever
// the order they were granted in and however many of their locks collide.
func TestConflictsReportedInDeliveryOrderOnce(t *testing.T) {
	tb := New()
	// Granted out of delivery order (as after a Restore).
	for _, n := range []int{50, 10, 40, 30, 20} {
		mustAcquire(t, tb, txn(n), rl("k"))
	}
	// 30 collides through three locks, 60 through a span.
	mustAcquire(t, tb, txn(60), srl("q", "s"))
	mustAcquire(t, tb, txn(70), rl("unrelated"), swl("z"))
	tb.Release(tid(30))
	mustAcquire(t, tb, txn(30), rl("k"), rl("k2"), swl("n"))
	c, err := tb.Acquire(txn(99), []Lock{srl("n", "o"), wl("k2"), wl("k"), swl("r")})
	require.NoError(t, err)
	require.Equal(t, []uint64{10, 20, 30, 40, 50, 60}, orders(c))
	// The same question asked again (fresh query mark) gives the same answer.
	c2, err := tb.Conflicts(tid(99), []Lock{srl("n", "o"), wl("k2"), wl("k"), swl("r")})
	require.NoError(t, err)
	require.Equal(t, c, c2)
}

// TestAcquireRejectsMalformedCalls: misuse is an error, distinct from a
// conflict, and leaves the table unchanged.
func TestAcquireRejectsMalformedCalls(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), rl("a"))
	for _, tc := range []struct {
		name string
		h    Holder
		lk   []Lock
		want error
	}{
		{"zero mode", txn(2), []Lock{rl("b"), {Start: []byte("c")}}, ErrInvalidLock},
		{"unknown mode", txn(2), []Lock{{Mode: SW + 1, Start: []byte("c")}}, ErrInvalidLock},
		{"end on R", txn(2), []Lock{{Mode: R, Start: []byte("a"), End: []byte("b")}}, ErrInvalidLock},
		{"end on W", txn(2), []Lock{{Mode: W, Start: []byte("a"), End: []byte("b")}}, ErrInvalidLock},
		{"end on SW", txn(2), []Lock{{Mode: SW, Start: []byte("a"), End: []byte("b")}}, ErrInvalidLock},
		{"holder twice", txn(1), []Lock{rl("b")}, ErrHolderExists},
		{"order taken", Holder{ID: tid(2), Order: 1}, []Lock{rl("b")}, ErrOrderTaken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tb.Acquire(tc.h, tc.lk)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, c)
			require.ErrorIs(t, tb.Restore(tc.h, tc.lk), tc.want)
			require.Equal(t, 1, tb.Len())
			held, _ := tb.Held(tid(1))
			require.Equal(t, []Lock{rl("a")}, held)
			require.NoError(t, checkTable(tb))
		})
	}
	_, err := tb.Conflicts(tid(2), []Lock{{Mode: 0}})
	require.ErrorIs(t, err, ErrInvalidLock)
}

// TestAcquireCopiesCallerBuffers: the table keeps its own copy of every key;
// a caller that reuses its buffers after the call changes nothing.
func TestAcquireCopiesCallerBuffers(t *testing.T) {
	buf := []byte("abcdefgh")
	locks := []Lock{
		{Mode: R, Start: buf[0:1]},
		{Mode: W, Start: buf[1:2]},
		{Mode: SR, Start: buf[2:3], End: buf[3:4]},
		{Mode: SW, Start: buf[4:5]},
	}
	tb := New()
	mustAcquire(t, tb, txn(1), locks...)
	copy(buf, "zzzzzzzz")
	held, _ := tb.Held(tid(1))
	require.Equal(t, []Lock{rl("a"), wl("b"), srl("c", "d"), swl("e")}, held)
	c, err := tb.Conflicts(tid(2), []Lock{wl("a")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(1)}, c)
	// Held's slices are the caller's: appending to one does not reach
	// another or the table.
	held[0].Start = append(held[0].Start, 'x')
	held2, _ := tb.Held(tid(1))
	require.Equal(t, []Lock{rl("a"), wl("b"), srl("c", "d"), swl("e")}, held2)
	require.Equal(t, "b", string(held[1].Start))
}

// TestEmptyEndMeansUnbounded: an SR with nil or zero-length End covers every
// key from Start on (the documented encoding of +infinity).
func TestEmptyEndMeansUnbounded(t *testing.T) {
	for _, end := range [][]byte{nil, {}} {
		tb := New()
		mustAcquire(t, tb, txn(1), Lock{Mode: SR, Start: []byte("m"), End: end})
		for k, want := range map[string]bool{"": false, "l\xff": false, "m": true, "\xff\xff\xff\xff": true} {
			c, err := tb.Conflicts(tid(2), []Lock{swl(k)})
			require.NoError(t, err)
			require.Equal(t, want, c != nil, "SW(%q)", k)
		}
	}
}

// TestReleaseFreesEveryLockAndOnlyOnce: Release drops all of a holder's
// locks (every mode), reports whether it held any, and the freed locks are
// grantable again.
func TestReleaseFreesEveryLockAndOnlyOnce(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), rl("a"), wl("b"), srl("c", "e"), swl("f"))
	mustAcquire(t, tb, txn(2), rl("a"), srl("x", "y"))
	require.True(t, tb.Release(tid(1)))
	require.NoError(t, checkTable(tb))
	require.False(t, tb.Release(tid(1)))
	require.False(t, tb.Release(tid(9)))
	mustAcquire(t, tb, txn(3), rl("b"), wl("b"), swl("d"), srl("f", "g"))
	c, err := tb.Conflicts(tid(4), []Lock{wl("a")})
	require.NoError(t, err)
	require.Equal(t, []Holder{txn(2)}, c, "txn 2's R on a survives txn 1's release")
	require.Equal(t, []Holder{txn(2), txn(3)}, tb.Holders())
}

// TestHotKeyReadersLeaveInAnyOrder: many holders read one key (every data
// transaction reads the metadata version key, txn.md M2); they leave in an
// arbitrary order, each in O(1), and the slots stay consistent. Then a
// writer gets the key. The holder that created the entry leaves first, so
// the entry must stop pointing into its arena (checkTable checks it).
func TestHotKeyReadersLeaveInAnyOrder(t *testing.T) {
	tb := New()
	const n = 500
	for i := 1; i <= n; i++ {
		mustAcquireQuiet(t, tb, txn(i), rl("meta"), rl(fmt.Sprint("k", i)))
	}
	require.NoError(t, checkTable(tb))
	c, err := tb.Conflicts(tid(n+1), []Lock{wl("meta")})
	require.NoError(t, err)
	require.Len(t, c, n)
	// A deterministic shuffle: multiply by a unit mod n+1 (n+1 = 501 and
	// 7 is coprime to it).
	for i := 0; i < n; i++ {
		k := (i*7)%n + 1
		require.True(t, tb.Release(tid(k)))
		if i%50 == 0 {
			require.NoError(t, checkTable(tb))
		}
	}
	require.Zero(t, tb.Len())
	require.Empty(t, tb.keys)
	mustAcquire(t, tb, txn(n+1), wl("meta"))
}

func mustAcquireQuiet(t *testing.T, tb *Table, h Holder, locks ...Lock) {
	t.Helper()
	c, err := tb.Acquire(h, locks)
	require.NoError(t, err)
	require.Nil(t, c)
}

// TestRestoreRoundTripGivesAnEqualTable: txn.md E11 — the lock table is
// rebuilt verbatim from the persisted lock sets. Held of every holder,
// restored into a fresh table in reverse delivery order, gives the same
// holders and lock sets, and the same answers to conflict queries.
func TestRestoreRoundTripGivesAnEqualTable(t *testing.T) {
	tb := New()
	mustAcquire(t, tb, txn(1), rl("a"), wl("b"), srl("c", "e"), srl("d", "f"), swl("c"))
	mustAcquire(t, tb, txn(2), rl("a"), srl("", "b"), swl("w"), swl("w"))
	mustAcquire(t, tb, txn(3), rl("a"), rl("g"), wl("g"), srl("x", ""))
	mustAcquire(t, tb, txn(4))
	fresh := New()
	hs := tb.Holders()
	for _, h := range slices.Backward(hs) {
		locks, ok := tb.Held(h.ID)
		require.True(t, ok)
		require.NoError(t, fresh.Restore(h, locks))
		require.NoError(t, checkTable(fresh))
	}
	requireSameTable(t, tb, fresh)
	for _, q := range [][]Lock{{wl("a")}, {swl("d")}, {srl("v", "x")}, {wl("g")}, {swl("a")}} {
		c1, err1 := tb.Conflicts(tid(9), q)
		c2, err2 := fresh.Conflicts(tid(9), q)
		require.NoError(t, errors.Join(err1, err2))
		require.Equal(t, c1, c2, "%v", q)
	}
}

// requireSameTable checks two tables hold the same holders with the same
// lock sets.
func requireSameTable(t interface {
	require.TestingT
	Helper()
}, a, b *Table) {
	t.Helper()
	require.Equal(t, a.Holders(), b.Holders())
	for _, h := range a.Holders() {
		la, _ := a.Held(h.ID)
		lb, _ := b.Held(h.ID)
		require.Equal(t, la, lb, "holder %v", h)
	}
}

// TestRestoreRejectsInconsistentRecords: txn.md E11/E12 — two records whose
// locks conflict cannot both be pending; Restore says so with a typed error
// naming both sides, and restores nothing of the second.
func TestRestoreRejectsInconsistentRecords(t *testing.T) {
	cases := []struct {
		name   string
		first  []Lock
		second []Lock
	}{
		{"W over R", []Lock{rl("k")}, []Lock{rl("a"), wl("k")}},
		{"W over W", []Lock{wl("k")}, []Lock{wl("k")}},
		{"R under W", []Lock{wl("k")}, []Lock{rl("k")}},
		{"SW in SR", []Lock{srl("a", "m")}, []Lock{swl("b")}},
		{"SR over SW", []Lock{swl("b")}, []Lock{srl("", "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := New()
			require.NoError(t, tb.Restore(txn(7), tc.first))
			err := tb.Restore(txn(3), tc.second)
			require.ErrorIs(t, err, ErrInconsistent)
			var ce *ConflictError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, txn(3), ce.Holder)
			require.Equal(t, []Holder{txn(7)}, ce.Conflicts)
			require.Equal(t, []Holder{txn(7)}, tb.Holders())
			require.NoError(t, checkTable(tb))
		})
	}
}
