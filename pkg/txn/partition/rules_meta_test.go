package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

func (g *group) metaVersion() uint64 {
	v, err := g.replicas[0].store.Get(storage.Metadata, txn.MetaVersionKey)
	require.NoError(g.w.t, err)
	ver, err := txn.DecodeVersion(v)
	require.NoError(g.w.t, err)
	return ver
}

// commitMeta runs a metadata transaction through every group to commit.
func commitMeta(t *testing.T, w *world, c *client, m *tx) {
	t.Helper()
	for g, res := range c.sendAll(m) {
		requireVote(t, res, txn.Commit, txn.ReasonNone, "group", g)
	}
	for _, a := range c.finish(m, w.commitCert(m)) {
		require.Equal(t, txn.Commit, a.Decision, "%s", a)
	}
}

// txn.md M1: metadata changes only through transactions that involve every
// group; M5: signed by a listed admin key, checked in Validate.
func TestRuleM1M5MetadataTransactionsInvolveEveryGroupAndNeedAnAdmin(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	b := txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta()
	partial := c.buildAt(b, []txn.GroupVersion{{Group: 0}})
	_, err := g.call(c.id, partial.call())
	require.ErrorIs(t, err, txn.ErrInvalid)
	require.ErrorContains(t, err, "involves every group")

	m := metaTxn(w, c, 0, b)
	_, err = g.call(c.id, txn.NewTxnCall(m.enc, nil))
	require.ErrorIs(t, err, txn.ErrSignature, "no admin signature")
	stranger := txn.SignAdmin(w.dom, m.id, seedKey(201))
	_, err = g.call(c.id, txn.NewTxnCall(m.enc, stranger))
	require.ErrorIs(t, err, txn.ErrSignature, "not a listed admin")
	otherID := txn.SignAdmin(w.dom, partial.id, w.admin)
	_, err = g.call(c.id, txn.NewTxnCall(m.enc, otherID))
	require.ErrorIs(t, err, txn.ErrSignature, "signature over another id")
	data := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")))
	_, err = g.call(c.id, txn.NewTxnCall(data.enc, txn.SignAdmin(w.dom, data.id, w.admin)))
	require.ErrorIs(t, err, txn.ErrInvalid, "an admin signature on a data transaction")

	commitMeta(t, w, c, m)
	v, err := g.replicas[0].store.Get(storage.Metadata, []byte("table/t"))
	require.NoError(t, err)
	require.Equal(t, []byte("{}"), v)
}

// txn.md M5: the reserved metadata keys are written by the engine only,
// except the partition map, with `write` and a valid map.
func TestRuleM5ReservedMetadataKeys(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	for name, b := range map[string]*txn.Builder{
		"version write":    txn.NewBuilder().Write(txn.MetaVersionKey, txn.EncodeVersion(7)).Meta(),
		"map delete":       txn.NewBuilder().Delete(txn.MetaPartitionsKey).Meta(),
		"other reserved":   txn.NewBuilder().Insert([]byte("\x00mine"), []byte("x")).Meta(),
		"malformed map":    txn.NewBuilder().Write(txn.MetaPartitionsKey, []byte("junk")).Meta(),
		"map of strangers": txn.NewBuilder().Write(txn.MetaPartitionsKey, mustHash(t, 0, 7).Encode()).Meta(),
	} {
		_, err := g.call(c.id, metaTxn(w, c, 0, b).call())
		require.Error(t, err, name)
	}
	// Anyone may read them, at any group (metadata is in every group).
	res := w.groups[1].mustCall(c.id, c.buildAt(txn.NewBuilder().Read(txn.MetaVersionKey).Meta(), []txn.GroupVersion{{Group: 1}}).call())
	require.Equal(t, []txn.Read{{Op: 0, Present: true, Value: txn.EncodeVersion(0)}}, res.Reads)
}

func mustHash(t *testing.T, gs ...bft.GroupID) *oracle.Map {
	m, err := oracle.Hash(gs)
	require.NoError(t, err)
	return m
}

// txn.md M2, K1: every data transaction carries cmp(metadata-version, v) per
// group; a stale version aborts ("stale metadata") with the group's version;
// every metadata change increments the version in every group.
func TestRuleM2MetadataVersion(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	res := w.groups[0].mustCall(c.id, c.buildAt(txn.NewBuilder().Insert(k("a"), []byte("1")), []txn.GroupVersion{{Group: 0, Version: 3}}).call())
	requireVote(t, res, txn.Abort, txn.ReasonStaleMetadata)
	require.Zero(t, res.Version)

	commitMeta(t, w, c, metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta()))
	for _, g := range w.groups {
		require.Equal(t, uint64(1), g.metaVersion(), "group %d", g.id)
	}
	res = single(w, c, txn.NewBuilder().Insert(k("a"), []byte("1")))
	requireVote(t, res, txn.Abort, txn.ReasonStaleMetadata)
	require.Equal(t, uint64(1), res.Version)
	res = w.groups[0].mustCall(c.id, c.buildAt(txn.NewBuilder().Insert(k("a"), []byte("1")), []txn.GroupVersion{{Group: 0, Version: 1}}).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	// A second metadata transaction built on the old version fails its cmp.
	stale := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/u"), []byte("{}")).Meta())
	requireVote(t, w.groups[0].mustCall(c.id, stale.call()), txn.Abort, txn.ReasonStaleMetadata)
}

// txn.md M4: a metadata transaction that conflicts only with pending data
// transactions is queued, answering "queued" and naming them; later data
// transactions abort ("stale metadata") naming the same blockers; a second
// metadata transaction aborts instead of waiting; when the blockers
// terminate the queue drains and the metadata transaction votes.
func TestRuleM4MetadataTransactionQueuesBehindPendingDataTransactions(t *testing.T) {
	w := newWorld(t, 2, 3)
	c := w.client(1)
	g := w.groups[0]
	blocker := pend(t, w, c, txn.NewBuilder().Insert(k("a"), []byte("1")))
	m := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta())
	res := g.mustCall(c.id, m.call())
	require.Equal(t, txn.ResultQueued, res.Kind)
	require.Equal(t, []txn.Named{{Txn: blocker.enc}}, res.Named)
	require.Equal(t, txn.ResultQueued, g.mustCall(w.client(2).id, m.call()).Kind, "re-delivery: still queued")

	res = single(w, c, txn.NewBuilder().Insert(k("b"), []byte("1")))
	requireVote(t, res, txn.Abort, txn.ReasonStaleMetadata)
	require.Equal(t, []txn.Named{{Txn: blocker.enc}}, res.Named)

	m2 := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/u"), []byte("{}")).Meta())
	res = g.mustCall(c.id, m2.call())
	requireVote(t, res, txn.Abort, txn.ReasonConflict)
	require.Equal(t, m.enc, res.Named[0].Txn)
	require.Equal(t, m.admin, res.Named[0].Admin, "a named metadata transaction carries its admin signature")

	// The blocker terminates: the queue drains and m votes commit.
	c.finish(blocker, w.commitCert(blocker))
	require.Nil(t, g.engine().queued)
	res = g.mustCall(c.id, m.call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	require.True(t, res.Signed)
	requireVote(t, w.groups[1].mustCall(c.id, m.call()), txn.Commit, txn.ReasonNone)
	for _, a := range c.finish(m, w.commitCert(m)) {
		require.Equal(t, txn.Commit, a.Decision)
	}
	require.Equal(t, uint64(1), g.metaVersion())
}

// txn.md M4: two metadata transactions never wait for each other: one that
// conflicts with a pending metadata transaction aborts.
func TestRuleM4MetadataTransactionsNeverWaitForEachOther(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	m := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta())
	requireVote(t, w.groups[0].mustCall(c.id, m.call()), txn.Commit, txn.ReasonNone) // pending, holds W on the version
	m2 := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/u"), []byte("{}")).Meta())
	res := w.groups[0].mustCall(c.id, m2.call())
	requireVote(t, res, txn.Abort, txn.ReasonConflict)
	require.Equal(t, m.enc, res.Named[0].Txn)
	require.Nil(t, w.groups[0].engine().queued)
}

// txn.md M3, T5: a map change that splits a range or assigns an empty range
// commits, and groups check declared groups against the new map; one that
// would move data a group holds aborts there ("map change").
func TestRuleM3MapChangesSplitOrAssignEmptyRangesOnly(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	seed(t, w, c, "a", "1") // group 0 holds 0x20 'a'
	moved, err := oracle.New([]oracle.Range{{Start: nil, Groups: []bft.GroupID{0}}, {Start: []byte{0x40}, Groups: []bft.GroupID{1}}})
	require.NoError(t, err)
	commitMeta(t, w, c, metaTxn(w, c, 0, txn.NewBuilder().Write(txn.MetaPartitionsKey, moved.Encode()).Meta()))
	w.pmap = moved // the client refreshes its map (K1)

	// T5 against the new map: 0x50 now belongs to group 1.
	key := []byte{0x50}
	res := w.groups[0].mustCall(c.id, c.buildAt(txn.NewBuilder().Insert(key, []byte("x")), []txn.GroupVersion{{Group: 0, Version: 1}}).call())
	requireVote(t, res, txn.Abort, txn.ReasonWrongGroups)
	require.Equal(t, []bft.GroupID{1}, res.Want)
	res = w.groups[1].mustCall(c.id, c.buildAt(txn.NewBuilder().Insert(key, []byte("x")), []txn.GroupVersion{{Group: 1, Version: 1}}).call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)

	// Moving [0x00, 0x40), which holds 0x20 'a' at group 0, aborts there.
	all1, err := oracle.New([]oracle.Range{{Start: nil, Groups: []bft.GroupID{1}}})
	require.NoError(t, err)
	bad := metaTxn(w, c, 1, txn.NewBuilder().Write(txn.MetaPartitionsKey, all1.Encode()).Meta())
	votes := c.sendAll(bad)
	requireVote(t, votes[0], txn.Abort, txn.ReasonMapChange)
	require.Equal(t, 0, votes[0].Op)
	requireVote(t, votes[1], txn.Commit, txn.ReasonNone, "group 1 holds nothing that moves")
	c.finish(bad, w.abortCert(bad, 0))
	require.True(t, w.groups[0].engine().pmap.Equal(moved))
	require.True(t, w.groups[1].engine().pmap.Equal(moved))
}

// txn.md T5: the declared groups must equal the partition map's; a range
// involves every group holding part of it (range partitioning) or every
// group (hash partitioning). A mismatch is a recorded abort vote, not a
// refusal.
func TestRuleT5DeclaredGroupsMustMatchTheMap(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	g := w.groups[0]
	x := c.buildAt(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")), []txn.GroupVersion{{Group: 0}})
	res := g.mustCall(c.id, x.call())
	requireVote(t, res, txn.Abort, txn.ReasonWrongGroups)
	require.Equal(t, []bft.GroupID{0, 1}, res.Want)
	require.NotNil(t, g.record(x.id), "recorded: votes are final")
	// Too many groups is as wrong as too few.
	y := c.buildAt(txn.NewBuilder().Insert(k("a"), []byte("1")), []txn.GroupVersion{{Group: 0}, {Group: 1}})
	requireVote(t, g.mustCall(c.id, y.call()), txn.Abort, txn.ReasonWrongGroups)
	// A range across the boundary involves both groups.
	z := c.buildAt(txn.NewBuilder().ReadRange([]byte{0x70}, []byte{0x90}, 5), []txn.GroupVersion{{Group: 0}})
	requireVote(t, g.mustCall(c.id, z.call()), txn.Abort, txn.ReasonWrongGroups)
	// A cmp-range carries one digest per involved group.
	guard := c.buildAt(txn.NewBuilder().CmpRange(k("a"), k("b"), 5, []txn.GroupDigest{{Group: 0}, {Group: 1}}), []txn.GroupVersion{{Group: 0}})
	requireVote(t, g.mustCall(c.id, guard.call()), txn.Abort, txn.ReasonWrongGroups)
}

// txn.md T5, M3: under hash partitioning a range involves every group.
func TestRuleT5HashPartitionedRangesInvolveEveryGroup(t *testing.T) {
	w := newWorld(t, 2, 2)
	c := w.client(1)
	hashed := mustHash(t, 0, 1)
	commitMeta(t, w, c, metaTxn(w, c, 0, txn.NewBuilder().Write(txn.MetaPartitionsKey, hashed.Encode()).Meta()))
	w.pmap = hashed
	r := c.buildAt(txn.NewBuilder().ReadRange(k("a"), k("b"), 5), []txn.GroupVersion{{Group: 0, Version: 1}})
	requireVote(t, w.groups[0].mustCall(c.id, r.call()), txn.Abort, txn.ReasonWrongGroups)
	both := c.buildAt(txn.NewBuilder().ReadRange(k("a"), k("b"), 5), []txn.GroupVersion{{Group: 0, Version: 1}, {Group: 1, Version: 1}})
	for _, res := range c.sendAll(both) {
		requireVote(t, res, txn.Commit, txn.ReasonNone)
	}
}
