package partition

import (
	"context"
	"io"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

type lockSnapshot struct {
	h     holder
	locks []lock
}

func lockState(e *Engine) []lockSnapshot {
	var out []lockSnapshot
	for _, h := range e.locks.Holders() {
		locks, ok := e.locks.Held(h.ID)
		if !ok {
			panic("holder without locks")
		}
		out = append(out, lockSnapshot{h: h, locks: locks})
	}
	return out
}

// busyGroup0 leaves group 0 with pending transactions of several shapes and a
// queued metadata transaction.
func busyGroup0(t *testing.T, w *world) (*client, []*tx, *tx) {
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2", "c", "3")
	var ps []*tx
	ps = append(ps, pend(t, w, c, txn.NewBuilder().ReadRange(k("a"), nil, 2)))       // stopped early: SR [a, b]
	ps = append(ps, pend(t, w, c, txn.NewBuilder().Write(k("c"), []byte("x"))))      // W
	ps = append(ps, pend(t, w, c, txn.NewBuilder().Insert(k("d"), []byte("y"))))     // SW + W
	ps = append(ps, pend(t, w, c, txn.NewBuilder().CmpAbsent(k("q")).Read(k("zz")))) // R on absent keys
	m := metaTxn(w, c, 0, txn.NewBuilder().Insert([]byte("table/t"), []byte("{}")).Meta())
	require.Equal(t, txn.ResultQueued, w.groups[0].mustCall(c.id, m.call()).Kind)
	return c, ps, m
}

// txn.md E11: pending and queued records persist with the exact lock sets
// and delivery order; after a restart Restored rebuilds the lock table
// verbatim, and execution goes on exactly as without the restart.
func TestRuleE11RestartRebuildsTheLockTableVerbatim(t *testing.T) {
	w := newWorld(t, 2, 2)
	c, ps, m := busyGroup0(t, w)
	g := w.groups[0]
	before := lockState(g.replicas[0].engine)
	require.Len(t, before, len(ps))
	g.replicas[1].restart(t, w, 0) // replica 1 restarts, replica 0 does not
	require.Equal(t, before, lockState(g.replicas[1].engine))
	require.NotNil(t, g.replicas[1].engine.queued)
	require.Equal(t, m.id, g.replicas[1].engine.queued.id)
	require.Equal(t, len(ps), g.replicas[1].engine.pending)

	// Both replicas answer alike from here on (exec checks bytes and digests).
	requireBlockedBy(t, single(w, c, txn.NewBuilder().Insert(k("ab"), []byte("z"))), ps)
	for _, p := range ps {
		c.finish(p, w.commitCert(p))
	}
	requireVote(t, g.mustCall(c.id, m.call()), txn.Commit, txn.ReasonNone)
}

// txn.md E11: the lock table comes from the records, never from the data: a
// chunk's span depends on keys that may have changed since.
func TestRuleE11LocksAreRestoredFromRecordsNotRecomputedFromData(t *testing.T) {
	w := newWorld(t, 2, 1)
	c := w.client(1)
	seed(t, w, c, "a", "1", "b", "2")
	pend(t, w, c, txn.NewBuilder().ReadRange(k("a"), nil, 1)) // SR [a, a] and R on a
	r := w.groups[0].replicas[0]
	before := lockState(r.engine)
	// Change the data under the record, out of band: recomputing the
	// read-range now would lock [a, +inf) and no key.
	b := r.store.NewBatch()
	require.NoError(t, b.Delete(storage.UserData, k("a")))
	require.NoError(t, b.Delete(storage.UserData, k("b")))
	require.NoError(t, r.store.Commit(b, true))
	r.restart(t, w, 0)
	require.Equal(t, before, lockState(r.engine))
}

// txn.md E11: state transfer — a fresh replica that installs a checkpoint
// exported by another rebuilds the same lock table and state, and the two
// execute on in lockstep.
func TestRuleE11StateTransferRebuildsTheLockTable(t *testing.T) {
	w := newWorld(t, 2, 1)
	c, ps, m := busyGroup0(t, w)
	g := w.groups[0]
	src := g.replicas[0]
	snap, err := src.store.NewSnapshot()
	require.NoError(t, err)
	var chunks []storage.Chunk
	require.NoError(t, snap.Export(context.Background(), 1<<10, func(ch storage.Chunk) error {
		chunks = append(chunks, ch.Clone())
		return nil
	}))
	sum := snap.Sum()
	require.NoError(t, snap.Close())
	require.Greater(t, len(chunks), 1)

	dst := &testReplica{fs: vfs.NewMem(), dir: "/fresh"}
	dst.open(t, w, 0)
	i := 0
	require.NoError(t, dst.store.InstallCheckpoint(context.Background(), func() (storage.Chunk, error) {
		if i == len(chunks) {
			return storage.Chunk{}, io.EOF
		}
		i++
		return chunks[i-1], nil
	}, sum))
	require.NoError(t, dst.engine.Restored(dst.store))
	require.Equal(t, lockState(src.engine), lockState(dst.engine))
	require.Equal(t, m.id, dst.engine.queued.id)
	g.replicas = append(g.replicas, dst)

	requireBlockedBy(t, single(w, c, txn.NewBuilder().Write(k("c"), []byte("z"))), ps)
	for _, p := range ps {
		c.finish(p, w.commitCert(p))
	}
	requireVote(t, g.mustCall(c.id, m.call()), txn.Commit, txn.ReasonNone)
}

// txn.md E12: a storage error on the execution path is a local fault:
// Execute returns an error and no result.
func TestRuleE12StorageErrorIsALocalFault(t *testing.T) {
	w := newWorld(t, 2, 1)
	c := w.client(1)
	r := w.groups[0].replicas[0]
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")))
	b := r.store.NewIndexedBatch()
	require.NoError(t, b.Close())
	res, err := r.engine.Execute(99, []host.Call{{Client: c.id, Payload: x.call()}}, b)
	require.Error(t, err)
	require.ErrorIs(t, err, storage.ErrClosed)
	require.Nil(t, res)

	// A store that fails under the engine: the engine is closed.
	b = r.store.NewIndexedBatch()
	require.NoError(t, r.store.Close())
	res, err = r.engine.Execute(99, []host.Call{{Client: c.id, Payload: x.call()}}, b)
	require.Error(t, err)
	require.Nil(t, res)
}

// requireBlockedBy checks a "stale metadata" abort naming the pending
// transactions a queued metadata transaction waits for, in delivery order.
func requireBlockedBy(t *testing.T, res *txn.Result, ps []*tx) {
	t.Helper()
	requireVote(t, res, txn.Abort, txn.ReasonStaleMetadata)
	require.Len(t, res.Named, len(ps))
	for i, p := range ps {
		require.Equal(t, p.enc, res.Named[i].Txn)
	}
}
