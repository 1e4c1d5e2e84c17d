package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// movedMap is the world's two-group map with [0x70, 0x80) — empty in these
// tests — reassigned from group 0 to group 1 (M3 allows moving empty spans).
func movedMap(t *testing.T) *oracle.Map {
	m, err := oracle.New([]oracle.Range{
		{Start: []byte{}, Groups: []bft.GroupID{0}},
		{Start: []byte{0x70}, Groups: []bft.GroupID{1}},
		{Start: []byte{0x80}, Groups: []bft.GroupID{1}},
	})
	require.NoError(t, err)
	return m
}

func asAdmin(w *world, rec *recorder, m *Metrics) func(*Config) {
	return func(cfg *Config) {
		observe(rec, m)(cfg)
		cfg.Admin = w.admin
	}
}

func (w *world) metaVersion(g bft.GroupID) uint64 {
	v, err := w.group(g).replicas[0].store.Get(storage.Metadata, txn.MetaVersionKey)
	require.NoError(w.t, err)
	ver, err := txn.DecodeVersion(v)
	require.NoError(w.t, err)
	return ver
}

// txn.md M1, M5 (client side): a metadata transaction involves every group,
// carries the admin's signature, and moves the client's own metadata view
// (version and map) when it commits.
func TestM5MetadataTransactionIsAdminSignedAndInvolvesEveryGroup(t *testing.T) {
	w := newWorld(t, 2, 20)
	rec := newRecorder(w)
	admin := w.newClient(70, asAdmin(w, rec, nil))
	plain := w.newClient(50, nil)
	_, err := plain.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.ErrorIs(t, err, ErrNoAdminKey)

	res, err := admin.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.NoError(t, err)
	require.Equal(t, txn.KindMeta, res.Kind)
	require.Equal(t, []bft.GroupID{0, 1}, res.Groups)
	calls := w.callsFor(txn.CallTxn, res.ID)
	require.Len(t, calls, 2)
	call, err := txn.DecodeCall(calls[0].payload)
	require.NoError(t, err)
	require.NotNil(t, call.Admin)
	require.NoError(t, w.keys.VerifyAdmin(res.ID, call.Admin))
	w.settle()
	require.Equal(t, uint64(1), w.metaVersion(0))
	require.Equal(t, uint64(1), w.metaVersion(1))
	m, v := admin.core.Map()
	require.Equal(t, uint64(1), v)
	require.True(t, m.Equal(movedMap(t)))
	// Its next data transaction routes by the new map at version 1, at once.
	res, err = admin.do(txn.NewBuilder().Insert([]byte("q1"), []byte("v")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, []bft.GroupID{1}, res.Groups)
	require.Equal(t, uint64(1), rec.sent[len(rec.sent)-1].t.Groups[0].Version)
}

// txn.md K1, M2: a client whose metadata version is stale gets an abort
// naming the group's version; it reads the group's metadata, adopts the
// newer map and retries with the new version.
func TestK1StaleMetadataRefreshesTheMapAndRetries(t *testing.T) {
	w := newWorld(t, 2, 21)
	admin := w.newClient(70, asAdmin(w, nil, nil))
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	_, err := admin.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.NoError(t, err)
	w.settle()
	res, err := c.do(txn.NewBuilder().Insert(k0b, []byte("v")))
	require.NoError(t, err)
	require.Equal(t, 2, res.Attempts)
	require.Equal(t, 1.0, counter(t, m, "retries", "stale_metadata"))
	require.Equal(t, 1.0, counter(t, m, "refreshes"))
	mp, v := c.core.Map()
	require.Equal(t, uint64(1), v)
	require.True(t, mp.Equal(movedMap(t)))
	// K1: every data transaction carries, for each involved group, the
	// version held: 0 before, 1 after the refresh.
	first, last := rec.sent[0].t, rec.sent[len(rec.sent)-1].t
	require.Equal(t, []txn.GroupVersion{{Group: 0, Version: 0}}, first.Groups)
	require.Equal(t, []txn.GroupVersion{{Group: 0, Version: 1}}, last.Groups)
	require.Empty(t, anomalies(m))
}

// txn.md K1, T5: a client whose map routes a key to the wrong group gets a
// "wrong groups" abort; it reads that group's map and retries where the new
// map says.
func TestK1WrongGroupsRefreshesTheMapAndReroutes(t *testing.T) {
	w := newWorld(t, 2, 22)
	admin := w.newClient(70, asAdmin(w, nil, nil))
	m := NewMetrics(nil)
	c := w.newClient(50, observe(nil, m))
	_, err := admin.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.NoError(t, err)
	w.settle()
	res, err := c.do(txn.NewBuilder().Insert([]byte("q1"), []byte("v")))
	require.NoError(t, err)
	require.Equal(t, []bft.GroupID{1}, res.Groups, "rerouted by the new map")
	require.Equal(t, 1.0, counter(t, m, "retries", "wrong_groups"))
	_, ok := w.group(1).userValue([]byte("q1"))
	require.True(t, ok)
	// And a multi-group transaction spanning the moved span works at once.
	res, err = c.do(txn.NewBuilder().Read([]byte("q1")).Read(k0))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
}

// txn.md K1, M2 with Options.PinVersion (the SQL layer's statements are
// planned against a catalog at one metadata version): the transaction
// declares the pinned version, not the one the client holds; a stale abort
// is reported to the caller after one attempt, with the client's map
// refreshed, instead of being re-sent at the new version.
func TestK1PinnedVersionReportsStaleMetadataToTheCaller(t *testing.T) {
	w := newWorld(t, 2, 25)
	admin := w.newClient(70, asAdmin(w, nil, nil))
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(rec, m))
	_, err := admin.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.NoError(t, err)
	w.settle()

	res, err := c.doWith(txn.NewBuilder().Insert(k0b, []byte("v")), Options{PinVersion: true, MetadataVersion: 0})
	require.ErrorIs(t, err, txn.ErrStaleMetadata)
	require.Equal(t, 1, res.Attempts, "not re-sent at the new version")
	require.Equal(t, uint64(1), res.Abort.Version)
	inserts := 0
	for _, s := range rec.sent {
		if s.t.Ops[0].Kind == txn.OpInsert {
			inserts++
		}
	}
	require.Equal(t, 1, inserts, "the refresh read is the only other transaction")
	_, ok := w.group(0).userValue(k0b)
	require.False(t, ok)
	mp, v := c.core.Map()
	require.Equal(t, uint64(1), v, "the client learned the version and refreshed its map")
	require.True(t, mp.Equal(movedMap(t)))

	// Pinned at the current version it commits, declaring that version.
	res, err = c.doWith(txn.NewBuilder().Insert(k0b, []byte("v")), Options{PinVersion: true, MetadataVersion: 1})
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, []txn.GroupVersion{{Group: 0, Version: 1}}, rec.sent[len(rec.sent)-1].t.Groups)

	// A client that holds an older version than the pin declares the pin.
	fresh := w.newClient(51, observe(rec, nil))
	res, err = fresh.doWith(txn.NewBuilder().Read(k0b), Options{PinVersion: true, MetadataVersion: 1})
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, []byte("v"), res.Ops[0].Value)
	require.Equal(t, []txn.GroupVersion{{Group: 0, Version: 1}}, rec.sent[len(rec.sent)-1].t.Groups)
}

// txn.md K1: refreshes are bounded: a client allowed none gives up with
// the stale-metadata abort rather than looping.
func TestK1RefreshesAreBounded(t *testing.T) {
	w := newWorld(t, 2, 23)
	admin := w.newClient(70, asAdmin(w, nil, nil))
	c := w.newClient(50, func(cfg *Config) { cfg.Tuning.MaxRefreshes = -1 })
	_, err := admin.do(txn.NewBuilder().Write(txn.MetaPartitionsKey, movedMap(t).Encode()).Meta())
	require.NoError(t, err)
	w.settle()
	res, err := c.do(txn.NewBuilder().Insert(k0b, []byte("v")))
	require.ErrorIs(t, err, txn.ErrStaleMetadata)
	require.Equal(t, uint64(1), res.Abort.Version, "the group's version")
	require.Equal(t, 1, res.Attempts)
}

// txn.md M4, K4: a metadata transaction that conflicts only with pending
// data transactions is queued; the admin client polls it, recovers the
// pending transaction the queue names (its owner abandoned it), and the
// metadata transaction then drains and commits. A data transaction sent
// meanwhile is told "stale metadata" naming the same blocker, and commits
// after the change with the refreshed version.
func TestM4QueuedMetadataTransactionWaitsAndRecoversItsBlockers(t *testing.T) {
	w := newWorld(t, 2, 24)
	am := NewMetrics(nil)
	admin := w.newClient(70, asAdmin(w, nil, am))
	cm := NewMetrics(nil)
	c := w.newClient(50, func(cfg *Config) {
		observe(nil, cm)(cfg)
		cfg.Tuning.RecoveryGrace = time.Hour // only the admin recovers
	})
	byz := w.newRaw(60)
	_, uid := byz.abandon(txn.NewBuilder().Insert(k0, []byte("u0")).Insert(k1, []byte("u1")), 0)
	om := admin.start(txn.NewBuilder().Insert([]byte("schema/t"), []byte("def")).Meta(), Options{})
	w.runUntil("the metadata transaction queued", time.Minute, func() bool { return len(w.callsBy(txn.CallTxn, admin.id)) >= 2 })
	od := c.start(txn.NewBuilder().Insert(k0b, []byte("d")), Options{})
	w.runUntil("outcomes", time.Minute, func() bool { return om.done && od.done })
	require.NoError(t, om.err)
	require.Equal(t, 1, om.res.Attempts, "queued, not aborted")
	require.Greater(t, len(w.callsFor(txn.CallTxn, om.res.ID)), 2, "re-delivered while queued (polls)")
	require.NoError(t, od.err)
	require.GreaterOrEqual(t, counter(t, cm, "retries", "stale_metadata"), 1.0)
	w.settleOwn()
	w.runFor(time.Second)
	require.Equal(t, 1.0, counter(t, am, "recoveries", "committed"))
	require.NotEmpty(t, w.callsFor(txn.CallOutcome, uid))
	for _, g := range []bft.GroupID{0, 1} {
		require.Equal(t, uint64(1), w.metaVersion(g))
	}
	v, _ := w.group(0).userValue(k0)
	require.Equal(t, []byte("u0"), v)
	_, v2 := c.core.Map()
	require.Equal(t, uint64(1), v2)
	require.Empty(t, anomalies(am))
	require.Empty(t, anomalies(cm))
}
