package partition

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// The test harness drives engines directly: a pebble store on vfs.NewMem per
// replica, several replicas per group executing the same batches (so every
// step also checks determinism: identical result bytes and identical state
// digests), calls built as a client would, votes signed with test keys.

const testCluster = "tc"

// Keys with group 0 holding first bytes < 0x80 and group 1 the rest.
var (
	lowKey  = []byte{0x10}
	lowKey2 = []byte{0x11}
	highKey = []byte{0x90}
)

type world struct {
	t      testing.TB
	keys   *txn.Keys
	dom    *txn.Domain
	privs  map[bft.GroupID][]ed25519.PrivateKey
	admin  ed25519.PrivateKey
	pmap   *oracle.Map
	groups map[bft.GroupID]*group
	limits txn.Limits
}

type group struct {
	w        *world
	id       bft.GroupID
	replicas []*testReplica
	seq      bft.SeqNum
}

type testReplica struct {
	fs     vfs.FS
	dir    string
	store  *storage.Engine
	engine *Engine
}

func seedKey(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

// newWorld builds a cluster of nGroups groups of four replicas (f=1) and runs
// replicasPerGroup engines per group.
func newWorld(t testing.TB, nGroups, replicasPerGroup int) *world {
	return newWorldWith(t, nGroups, replicasPerGroup, txn.DefaultLimits())
}

func newWorldWith(t testing.TB, nGroups, replicasPerGroup int, limits txn.Limits) *world {
	t.Helper()
	w := &world{t: t, privs: map[bft.GroupID][]ed25519.PrivateKey{}, groups: map[bft.GroupID]*group{}, limits: limits}
	pubs := map[bft.GroupID][]ed25519.PublicKey{}
	seed := byte(1)
	for g := range nGroups {
		for range 4 {
			k := seedKey(seed)
			seed++
			w.privs[bft.GroupID(g)] = append(w.privs[bft.GroupID(g)], k)
			pubs[bft.GroupID(g)] = append(pubs[bft.GroupID(g)], k.Public().(ed25519.PublicKey))
		}
	}
	w.admin = seedKey(200)
	var err error
	w.keys, err = txn.NewKeys(testCluster, pubs, []ed25519.PublicKey{w.admin.Public().(ed25519.PublicKey)})
	require.NoError(t, err)
	w.dom = w.keys.Domain()
	w.pmap, err = oracle.FromCluster(&cluster.Cluster{Partitions: cluster.SplitFirstByte(nGroups)})
	require.NoError(t, err)
	for g := range nGroups {
		gr := &group{w: w, id: bft.GroupID(g)}
		for i := range replicasPerGroup {
			fs := vfs.NewMem()
			r := &testReplica{fs: fs, dir: fmt.Sprintf("/g%dr%d", g, i)}
			r.open(t, w, gr.id)
			gr.replicas = append(gr.replicas, r)
		}
		w.groups[gr.id] = gr
		gr.exec() // the runtime's first batch writes the initial metadata
	}
	return w
}

func (w *world) config(g bft.GroupID) Config {
	return Config{Group: g, Keys: w.keys, InitialMap: w.pmap, Limits: w.limits}
}

func (r *testReplica) open(t testing.TB, w *world, g bft.GroupID) {
	t.Helper()
	var err error
	r.store, err = storage.Open(r.dir, storage.Options{FS: r.fs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.store.Close() })
	r.engine, err = New(w.config(g))
	require.NoError(t, err)
	require.NoError(t, r.engine.Restored(r.store))
}

// restart closes and reopens a replica's store and engine (E11).
func (r *testReplica) restart(t testing.TB, w *world, g bft.GroupID) {
	t.Helper()
	require.NoError(t, r.store.Close())
	r.open(t, w, g)
}

func (g *group) sums() [][storage.SumSize]byte {
	var out [][storage.SumSize]byte
	for _, r := range g.replicas {
		s, err := r.store.Sum()
		require.NoError(g.w.t, err)
		out = append(out, s)
	}
	return out
}

// exec runs calls as one committed batch at every replica of the group,
// after Validate (as the runtime does before ordering: a rejected call is
// answered with the error). It checks that every replica returns the same
// bytes and reaches the same state digest, and returns replica 0's results.
func (g *group) exec(calls ...host.Call) [][]byte {
	g.w.t.Helper()
	g.seq++
	var first [][]byte
	for i, r := range g.replicas {
		b := r.store.NewIndexedBatch()
		res, err := r.engine.Execute(g.seq, calls, b)
		require.NoError(g.w.t, err)
		require.NoError(g.w.t, r.store.Commit(b, true))
		require.NoError(g.w.t, b.Close())
		if i == 0 {
			first = res
			continue
		}
		require.Equal(g.w.t, first, res, "replica %d of group %d returned different results", i, g.id)
	}
	sums := g.sums()
	for i := 1; i < len(sums); i++ {
		require.Equal(g.w.t, sums[0], sums[i], "replica %d of group %d diverged", i, g.id)
	}
	return first
}

// validate runs Validate at every replica and requires them to agree.
func (g *group) validate(payload []byte) error {
	var first error
	for i, r := range g.replicas {
		err := r.engine.Validate(payload)
		if i == 0 {
			first = err
			continue
		}
		require.Equal(g.w.t, fmt.Sprint(first), fmt.Sprint(err), "Validate differs across replicas")
	}
	return first
}

// call validates and executes one call from client; it returns the decoded
// result, or the validation error.
func (g *group) call(client bft.ClientID, payload []byte) (*txn.Result, error) {
	g.w.t.Helper()
	if err := g.validate(payload); err != nil {
		return nil, err
	}
	raw := g.exec(host.Call{Client: client, Payload: payload})[0]
	res, err := txn.DecodeResult(raw)
	require.NoError(g.w.t, err)
	if s := g.replicas[0].engine.SignBytes(raw); s != nil {
		require.True(g.w.t, res.Signed)
	}
	return res, nil
}

// mustCall is call that requires Validate to accept.
func (g *group) mustCall(client bft.ClientID, payload []byte) *txn.Result {
	g.w.t.Helper()
	res, err := g.call(client, payload)
	require.NoError(g.w.t, err)
	return res
}

// client is a transaction owner.
type client struct {
	w     *world
	priv  ed25519.PrivateKey
	id    bft.ClientID
	nonce uint64
	wm    uint64
}

func (w *world) client(seed byte) *client {
	k := seedKey(seed)
	return &client{w: w, priv: k, id: bft.ClientID(k.Public().(ed25519.PublicKey))}
}

// tx is a built transaction with its encoding and id.
type tx struct {
	t     *txn.Txn
	enc   []byte
	id    txn.TxnID
	admin *txn.AdminSig
}

// build makes a transaction of c with the next nonce, routed by the map,
// at metadata version 0 unless versions says otherwise.
func (c *client) build(b *txn.Builder) *tx {
	c.w.t.Helper()
	gs := txn.InvolvedGroups(b.Ops(), c.w.pmap)
	var gvs []txn.GroupVersion
	for _, g := range gs {
		gvs = append(gvs, txn.GroupVersion{Group: g})
	}
	return c.buildAt(b, gvs)
}

func (c *client) buildAt(b *txn.Builder, gvs []txn.GroupVersion) *tx {
	c.w.t.Helper()
	t, err := b.Build(txn.Header{Owner: c.id, Nonce: c.nonce, Watermark: c.wm}, gvs, c.w.limits)
	require.NoError(c.w.t, err)
	c.nonce++
	return c.w.wrap(t)
}

func (w *world) wrap(t *txn.Txn) *tx {
	enc := t.Encode()
	x := &tx{t: t, enc: enc, id: w.dom.ID(enc)}
	if t.WritesMetadata() {
		x.admin = txn.SignAdmin(w.dom, x.id, w.admin)
	}
	return x
}

// allGroups returns every group at version v (a metadata transaction).
func (w *world) allGroups(v uint64) []txn.GroupVersion {
	var gvs []txn.GroupVersion
	for _, g := range w.keys.Groups() {
		gvs = append(gvs, txn.GroupVersion{Group: g, Version: v})
	}
	return gvs
}

func (x *tx) call() []byte { return txn.NewTxnCall(x.enc, x.admin) }

// votes are f+1 signed votes of group g's replicas 0 and 1 (or those given).
func (w *world) votes(id txn.TxnID, g bft.GroupID, dec txn.Decision, replicas ...bft.ReplicaID) txn.GroupSigs {
	if len(replicas) == 0 {
		replicas = []bft.ReplicaID{0, 1}
	}
	gs := txn.GroupSigs{Group: g}
	for _, r := range replicas {
		var s txn.ReplicaSig
		s.Replica = r
		s.Sig = ed25519.Sign(w.privs[g][r], w.dom.VoteBytes(id, g, dec))
		gs.Sigs = append(gs.Sigs, s)
	}
	return gs
}

func (w *world) acks(id txn.TxnID, g bft.GroupID, dec txn.Decision) txn.GroupSigs {
	gs := txn.GroupSigs{Group: g}
	for _, r := range []bft.ReplicaID{1, 2} {
		var s txn.ReplicaSig
		s.Replica = r
		s.Sig = ed25519.Sign(w.privs[g][r], w.dom.AckBytes(id, g, dec))
		gs.Sigs = append(gs.Sigs, s)
	}
	return gs
}

// commitCert is a COMMIT certificate over every declared group.
func (w *world) commitCert(x *tx) txn.Certificate {
	c := txn.Certificate{Decision: txn.Commit}
	for _, gv := range x.t.Groups {
		c.Parts = append(c.Parts, w.votes(x.id, gv.Group, txn.Commit))
	}
	return c
}

func (w *world) abortCert(x *tx, g bft.GroupID) txn.Certificate {
	return txn.Certificate{Decision: txn.Abort, Parts: []txn.GroupSigs{w.votes(x.id, g, txn.Abort)}}
}

// sendAll delivers a transaction from its owner to every declared group and
// returns the votes by group.
func (c *client) sendAll(x *tx) map[bft.GroupID]*txn.Result {
	out := map[bft.GroupID]*txn.Result{}
	for _, gv := range x.t.Groups {
		out[gv.Group] = c.w.groups[gv.Group].mustCall(c.id, x.call())
	}
	return out
}

// finish sends the outcome with a certificate to every declared group.
func (c *client) finish(x *tx, cert txn.Certificate) map[bft.GroupID]*txn.Result {
	out := map[bft.GroupID]*txn.Result{}
	for _, gv := range x.t.Groups {
		out[gv.Group] = c.w.groups[gv.Group].mustCall(c.id, txn.NewOutcomeCall(x.enc, x.admin, cert))
	}
	return out
}

func requireVote(t testing.TB, res *txn.Result, dec txn.Decision, reason txn.Reason, msg ...any) {
	t.Helper()
	require.Equal(t, txn.ResultVote, res.Kind, "%s %v", res, msg)
	require.Equal(t, dec, res.Decision, "%s %v", res, msg)
	require.Equal(t, reason, res.Reason, "%s %v", res, msg)
}

// get reads a user key at replica 0 of a group.
func (g *group) get(key []byte) ([]byte, bool) {
	v, err := g.replicas[0].store.Get(storage.UserData, key)
	if err != nil {
		require.ErrorIs(g.w.t, err, storage.ErrNotFound)
		return nil, false
	}
	return v, true
}

func (g *group) engine() *Engine { return g.replicas[0].engine }
