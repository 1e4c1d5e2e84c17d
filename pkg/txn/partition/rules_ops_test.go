package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Keys of group 0 (first byte < 0x80) used by the operation tests.
func k(s string) []byte { return append([]byte{0x20}, s...) }

func seed(t *testing.T, w *world, c *client, kv ...string) {
	t.Helper()
	b := txn.NewBuilder()
	for i := 0; i < len(kv); i += 2 {
		b.Insert(k(kv[i]), []byte(kv[i+1]))
	}
	requireVote(t, w.groups[0].mustCall(c.id, c.build(b).call()), txn.Commit, txn.ReasonNone)
}

// txn.md T1: cmp(k, v) tests equality with the committed value and returns
// nothing; cmp(k, absent) succeeds iff k does not exist. E4: a failed
// comparison votes abort naming the operation.
func TestRuleT1CmpComparesEqualityOrAbsence(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1")
	g := w.groups[0]
	res := g.mustCall(c.id, c.build(txn.NewBuilder().Cmp(k("a"), []byte("1")).CmpAbsent(k("b"))).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Empty(t, res.Reads, "cmp returns nothing")

	res = g.mustCall(c.id, c.build(txn.NewBuilder().Cmp(k("a"), []byte("1")).Cmp(k("a"), []byte("2"))).call())
	requireVote(t, res, txn.Abort, txn.ReasonCompare)
	require.Equal(t, 1, res.Op)
	res = g.mustCall(c.id, c.build(txn.NewBuilder().CmpAbsent(k("a"))).call())
	requireVote(t, res, txn.Abort, txn.ReasonCompare)
	require.Equal(t, 0, res.Op)
	res = g.mustCall(c.id, c.build(txn.NewBuilder().Cmp(k("b"), []byte{})).call())
	requireVote(t, res, txn.Abort, txn.ReasonCompare, "an empty value is not absence")
}

// txn.md T1: read returns the value or "absent".
func TestRuleT1ReadReturnsValueOrAbsent(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1")
	res := w.groups[0].mustCall(c.id, c.build(txn.NewBuilder().Read(k("a")).Read(k("b"))).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Equal(t, []txn.Read{{Op: 0, Present: true, Value: []byte("1")}, {Op: 1}}, res.Reads)
}

// txn.md T1: read-range returns the present entries of [start, end) in key
// order, at most limit; it stopped early iff it returned limit entries.
func TestRuleT1ReadRangeReturnsAtMostLimitEntriesInOrder(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "c", "3", "a", "1", "b", "2", "d", "4")
	res := w.groups[0].mustCall(c.id, c.build(txn.NewBuilder().ReadRange(k("a"), k("d"), 10)).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.Len(t, res.Reads, 1)
	require.Equal(t, []txn.KV{{Key: k("a"), Value: []byte("1")}, {Key: k("b"), Value: []byte("2")}, {Key: k("c"), Value: []byte("3")}}, res.Reads[0].Entries)

	res = w.groups[0].mustCall(c.id, c.build(txn.NewBuilder().ReadRange(k("a"), k("z"), 2)).call())
	require.Equal(t, []txn.KV{{Key: k("a"), Value: []byte("1")}, {Key: k("b"), Value: []byte("2")}}, res.Reads[0].Entries)
}

// txn.md T1, E5: insert only on an absent key, write and delete only on an
// existing one; otherwise abort "key exists" / "not found" naming the
// operation, with nothing applied. Preconditions are checked against the
// committed state, in operation order.
func TestRuleT1E5UpdatePreconditions(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	seed(t, w, c, "a", "1")
	cases := []struct {
		b      *txn.Builder
		reason txn.Reason
		op     int
	}{
		{txn.NewBuilder().Insert(k("z"), []byte("x")).Insert(k("a"), []byte("2")), txn.ReasonKeyExists, 1},
		{txn.NewBuilder().Write(k("a"), []byte("x")).Write(k("b"), []byte("2")), txn.ReasonNotFound, 1},
		{txn.NewBuilder().Delete(k("b")), txn.ReasonNotFound, 0},
		// A transaction never sees its own updates: inserting then writing
		// one key fails the write's precondition.
		{txn.NewBuilder().Insert(k("n"), []byte("x")).Write(k("n"), []byte("y")), txn.ReasonNotFound, 1},
	}
	for i, tc := range cases {
		res := g.mustCall(c.id, c.build(tc.b).call())
		requireVote(t, res, txn.Abort, tc.reason, i)
		require.Equal(t, tc.op, res.Op, i)
	}
	_, ok := g.get(k("z"))
	require.False(t, ok, "nothing of an aborted transaction applies")
	v, _ := g.get(k("a"))
	require.Equal(t, []byte("1"), v)

	requireVote(t, g.mustCall(c.id, c.build(txn.NewBuilder().Write(k("a"), []byte("2")).Insert(k("b"), []byte("3"))).call()), txn.Commit, txn.ReasonNone)
	requireVote(t, g.mustCall(c.id, c.build(txn.NewBuilder().Delete(k("a"))).call()), txn.Commit, txn.ReasonNone)
	_, ok = g.get(k("a"))
	require.False(t, ok)
	v, _ = g.get(k("b"))
	require.Equal(t, []byte("3"), v)
}

// txn.md E4 before E5: comparisons run before the update preconditions.
func TestRuleE4ComparisonsRunBeforePreconditions(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1")
	res := w.groups[0].mustCall(c.id, c.build(txn.NewBuilder().Insert(k("a"), []byte("x")).Cmp(k("a"), []byte("no"))).call())
	requireVote(t, res, txn.Abort, txn.ReasonCompare)
	require.Equal(t, 1, res.Op)
}

// txn.md T1: cmp-range succeeds at a group iff the digest of its present
// entries in the range (keys, values, count) matches the one it carries for
// that group.
func TestRuleT1CmpRangeMatchesTheGroupsDigest(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	seed(t, w, c, "a", "1", "b", "2")
	res := g.mustCall(c.id, c.build(txn.NewBuilder().ReadRange(k("a"), k("c"), 10)).call())
	ents := res.Reads[0].Entries
	guard := func(ents []txn.KV, limit uint32) *txn.Builder {
		return txn.NewBuilder().CmpRange(k("a"), k("c"), limit, []txn.GroupDigest{{Group: 0, Digest: txn.RangeDigest(ents)}})
	}
	requireVote(t, g.mustCall(c.id, c.build(guard(ents, 10)).call()), txn.Commit, txn.ReasonNone)
	requireVote(t, g.mustCall(c.id, c.build(guard(ents[:1], 10)).call()), txn.Abort, txn.ReasonCompare)
	// A range holding more entries than the guard's limit fails.
	requireVote(t, g.mustCall(c.id, c.build(guard(ents[:1], 1)).call()), txn.Abort, txn.ReasonCompare)
	// A value change is seen.
	requireVote(t, g.mustCall(c.id, c.build(txn.NewBuilder().Write(k("b"), []byte("9"))).call()), txn.Commit, txn.ReasonNone)
	requireVote(t, g.mustCall(c.id, c.build(guard(ents, 10)).call()), txn.Abort, txn.ReasonCompare)
}
