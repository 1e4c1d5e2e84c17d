package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// pend delivers a two-group transaction (its operations plus a read of a
// group-1 key) to both groups and requires commit votes: it is then pending
// at group 0 with its locks held.
func pend(t *testing.T, w *world, c *client, b *txn.Builder) *tx {
	t.Helper()
	x := c.build(b.Read(highKey))
	require.Len(t, x.t.Groups, 2)
	for g, res := range c.sendAll(x) {
		requireVote(t, res, txn.Commit, txn.ReasonNone, "group", g)
	}
	return x
}

// single runs a single-group transaction at group 0.
func single(w *world, c *client, b *txn.Builder) *txn.Result {
	x := c.build(b)
	require.Equal(w.t, []txn.GroupVersion{{Group: 0}}, x.t.Groups, "not a single-group transaction")
	return w.groups[0].mustCall(c.id, x.call())
}

func requireConflictWith(t *testing.T, res *txn.Result, x *tx) {
	t.Helper()
	requireVote(t, res, txn.Abort, txn.ReasonConflict)
	require.Len(t, res.Named, 1)
	require.Equal(t, x.enc, res.Named[0].Txn, "the named pending transaction")
}

// txn.md L1: R–R share; R–W and W–W conflict. L5: cmp and read take R,
// write takes W; an absent read still locks its key (T1).
func TestRuleL1KeyLocks(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2")
	reader := pend(t, w, c, txn.NewBuilder().Read(k("a")).CmpAbsent(k("c")).Read(k("z")))
	writer := pend(t, w, c, txn.NewBuilder().Write(k("b"), []byte("3")))

	requireVote(t, single(w, c, txn.NewBuilder().Read(k("a"))), txn.Commit, txn.ReasonNone, "R–R share")
	requireConflictWith(t, single(w, c, txn.NewBuilder().Write(k("a"), []byte("x"))), reader)
	requireConflictWith(t, single(w, c, txn.NewBuilder().Insert(k("z"), []byte("x"))), reader) // absent read locks
	requireConflictWith(t, single(w, c, txn.NewBuilder().Insert(k("c"), []byte("x"))), reader) // cmp takes R
	requireConflictWith(t, single(w, c, txn.NewBuilder().Read(k("b"))), writer)
	requireConflictWith(t, single(w, c, txn.NewBuilder().Cmp(k("b"), []byte("2"))), writer)
	requireConflictWith(t, single(w, c, txn.NewBuilder().Write(k("b"), []byte("4"))), writer)
}

// txn.md L2: SR on the span a read-range covers, SW on the key an insert or
// delete touches; SR–SR share, SW–SW share, SR–SW conflict where they
// overlap.
func TestRuleL2StructuralLocks(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1", "e", "5")
	scan := pend(t, w, c, txn.NewBuilder().ReadRange(k("b"), k("d"), 10))
	requireConflictWith(t, single(w, c, txn.NewBuilder().Insert(k("c"), []byte("x"))), scan)
	requireVote(t, single(w, c, txn.NewBuilder().Insert(k("d"), []byte("x"))), txn.Commit, txn.ReasonNone, "the range's end is exclusive")
	requireVote(t, single(w, c, txn.NewBuilder().ReadRange(k("a"), k("z"), 10)), txn.Commit, txn.ReasonNone, "SR–SR share")

	ins := pend(t, w, c, txn.NewBuilder().Insert(k("m"), []byte("x")))
	pend(t, w, c, txn.NewBuilder().Insert(k("n"), []byte("y"))) // SW–SW share
	requireConflictWith(t, single(w, c, txn.NewBuilder().ReadRange(k("l"), k("o"), 10)), ins)
	del := pend(t, w, c, txn.NewBuilder().Delete(k("e")))
	requireConflictWith(t, single(w, c, txn.NewBuilder().ReadRange(k("e"), k("f"), 10)), del)
}

// txn.md T1, L2: a read-range that stopped early at its limit locks only
// [start, last returned key], so keys after it stay free.
func TestRuleT1ReadRangeThatStoppedEarlyLocksOnlyUpToItsLastKey(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2")
	chunk := pend(t, w, c, txn.NewBuilder().ReadRange(k("a"), nil, 1))
	requireVote(t, single(w, c, txn.NewBuilder().Delete(k("b"))), txn.Commit, txn.ReasonNone)
	requireVote(t, single(w, c, txn.NewBuilder().Insert(k("c"), []byte("x"))), txn.Commit, txn.ReasonNone)
	requireConflictWith(t, single(w, c, txn.NewBuilder().Write(k("a"), []byte("x"))), chunk)
	// A read-range that did not stop early locks its whole range.
	full := pend(t, w, c, txn.NewBuilder().ReadRange(k("p"), nil, 5))
	requireConflictWith(t, single(w, c, txn.NewBuilder().Insert(k("zz"), []byte("x"))), full)
}

// txn.md L3: a key lock is compatible with any structural lock.
func TestRuleL3KeyLocksIgnoreStructuralLocks(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "q", "1")
	pend(t, w, c, txn.NewBuilder().ReadRange(k("p"), k("r"), 10)) // SR [p, r) and R on q
	// W on an absent key inside the SR span: no conflict, so the write
	// reaches its precondition.
	requireVote(t, single(w, c, txn.NewBuilder().Write(k("pa"), []byte("x"))), txn.Abort, txn.ReasonNotFound)
	pend(t, w, c, txn.NewBuilder().Insert(k("s"), []byte("x"))) // SW and W on s
	requireVote(t, single(w, c, txn.NewBuilder().Read(k("t"))), txn.Commit, txn.ReasonNone)
}

// txn.md L4: a transaction's own locks never conflict with each other.
func TestRuleL4OwnLocksNeverConflict(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1")
	res := single(w, c, txn.NewBuilder().Read(k("a")).Cmp(k("a"), []byte("1")).Write(k("a"), []byte("2")))
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	pend(t, w, c, txn.NewBuilder().ReadRange(k("a"), k("z"), 10).Insert(k("c"), []byte("x")).Delete(k("a")))
}

// txn.md L6, E3: all locks at once or none, never waiting: a transaction
// that conflicts on one key holds none of the others afterwards.
func TestRuleL6AcquisitionIsAllOrNothing(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2")
	holder := pend(t, w, c, txn.NewBuilder().Write(k("b"), []byte("x")))
	requireConflictWith(t, single(w, c, txn.NewBuilder().Write(k("a"), []byte("y")).Write(k("b"), []byte("y"))), holder)
	pend(t, w, c, txn.NewBuilder().Write(k("a"), []byte("z"))) // k(a) was not kept
	require.Equal(t, 2, w.groups[0].engine().locks.Len())
}

// txn.md E3: the abort names the conflicting pending transaction delivered
// first among those it conflicts with — not the first in operation order —
// with its full encoding.
func TestRuleE3NamesTheFirstDeliveredConflictingPendingTransaction(t *testing.T) {
	w := newWorld(t, 2, 3)
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2")
	early := pend(t, w, c, txn.NewBuilder().Write(k("b"), []byte("x")))
	pend(t, w, c, txn.NewBuilder().Write(k("a"), []byte("y")))
	res := single(w, c, txn.NewBuilder().Write(k("a"), []byte("z")).Write(k("b"), []byte("z")))
	requireConflictWith(t, res, early)
	got, err := txn.Decode(res.Named[0].Txn)
	require.NoError(t, err)
	require.True(t, got.Equal(early.t))
}

// txn.md E6: an abort vote terminates at once, keeping no locks and
// buffering nothing; a commit vote makes the transaction pending with its
// locks held and its updates buffered, not applied.
func TestRuleE6AbortKeepsNothingCommitMakesPending(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1")
	g := w.groups[0]
	x := c.build(txn.NewBuilder().Write(k("a"), []byte("2")).Cmp(k("a"), []byte("no")).Read(highKey))
	requireVote(t, g.mustCall(c.id, x.call()), txn.Abort, txn.ReasonCompare)
	require.Zero(t, g.engine().locks.Len(), "an aborted transaction keeps no locks")
	y := pend(t, w, c, txn.NewBuilder().Write(k("a"), []byte("3")))
	v, _ := g.get(k("a"))
	require.Equal(t, []byte("1"), v, "buffered, not applied")
	require.Equal(t, 1, g.engine().locks.Len())
	c.finish(y, w.commitCert(y))
	v, _ = g.get(k("a"))
	require.Equal(t, []byte("3"), v)
	require.Zero(t, g.engine().locks.Len())
}
