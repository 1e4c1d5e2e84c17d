package coord

import (
	"bytes"
	"container/heap"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

// The test world drives Cores exactly as production does, on a seeded
// scheduler with a simulated clock: every group is four replicas (f=1), each
// a real partition.Engine on its own pebble store (vfs.NewMem), executing the
// same batches in the same order (so every step also checks that correct
// replicas agree byte for byte); replies carry real Ed25519 signatures where
// the engine asks for them; and every client talks to each group through the
// production group client's Core (pkg/bft/client: envelopes, the window,
// retransmission on timeout, f+1 matching replies with valid signatures —
// K2). Ordering inside a group is a sequencer, not PBFT: the first replica
// that receives an envelope orders it for the group. What the tests control:
// network delays, lost messages, Byzantine replicas (their replies pass
// through a function), groups that hold their requests (a slow group), and
// clients that crash and restart.

const worldCluster = "coord-test"

type world struct {
	t      testing.TB
	now    time.Time
	seq    uint64
	events eventHeap
	rng    *rand.Rand

	keys   *txn.Keys
	dom    *txn.Domain
	privs  map[bft.GroupID][]ed25519.PrivateKey
	admin  ed25519.PrivateKey
	pmap   *oracle.Map
	limits txn.Limits
	groups []*wgroup

	// minDelay..maxDelay is the one-way delay of every message; drop the
	// probability that a message is lost.
	minDelay, maxDelay time.Duration
	drop               float64
	clients            []*wclient
	// cut drops every message to and from these clients (by id): a
	// partitioned or crashed process.
	cut map[string]bool
	// calls logs every call the groups executed, in order.
	calls []callRec
}

// callRec is one call a group executed.
type callRec struct {
	at      time.Time
	g       bft.GroupID
	client  bft.ClientID
	kind    txn.CallKind
	payload []byte
}

type event struct {
	at       time.Time
	seq      uint64
	f        func()
	canceled bool
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func (w *world) after(d time.Duration, f func()) func() {
	w.seq++
	e := &event{at: w.now.Add(d), seq: w.seq, f: f}
	heap.Push(&w.events, e)
	return func() { e.canceled = true }
}

// step runs the next event; false if there is none.
func (w *world) step() bool {
	for w.events.Len() > 0 {
		e := heap.Pop(&w.events).(*event)
		if e.canceled {
			continue
		}
		w.now = e.at
		e.f()
		return true
	}
	return false
}

// runUntil runs events until cond holds; it fails the test if limit of
// simulated time passes first.
func (w *world) runUntil(what string, limit time.Duration, cond func() bool) {
	w.t.Helper()
	deadline := w.now.Add(limit)
	for !cond() {
		if !w.now.Before(deadline) || !w.step() {
			w.t.Fatalf("%s: not reached after %s of simulated time (now %s)", what, limit, w.now.Sub(time.Unix(1_000_000, 0)))
		}
	}
}

// runFor runs every event of the next d of simulated time.
func (w *world) runFor(d time.Duration) {
	deadline := w.now.Add(d)
	for w.events.Len() > 0 && !w.events[0].at.After(deadline) {
		w.step()
	}
	w.now = deadline
}

func (w *world) delay() time.Duration {
	if w.maxDelay <= w.minDelay {
		return w.minDelay
	}
	return w.minDelay + time.Duration(w.rng.Int64N(int64(w.maxDelay-w.minDelay)))
}

func (w *world) lost() bool { return w.drop > 0 && w.rng.Float64() < w.drop }

func seedKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32))
}

// Keys: group 0 holds first bytes < 0x80 (and 'a'..'z'), group 1 the rest.
var (
	k0  = []byte("a0")
	k0b = []byte("a1")
	k1  = []byte{0x90, 'x'}
	k1b = []byte{0x91, 'y'}
)

// newWorld builds nGroups groups of four replicas; opts adjust the world
// (limits, partition map) before the groups start.
func newWorld(t testing.TB, nGroups int, seed uint64, opts ...func(*world)) *world {
	t.Helper()
	w := &world{
		t: t, now: time.Unix(1_000_000, 0), rng: rand.New(rand.NewPCG(seed, 7)),
		privs: map[bft.GroupID][]ed25519.PrivateKey{}, limits: txn.DefaultLimits(),
		minDelay: time.Millisecond, maxDelay: 3 * time.Millisecond, cut: map[string]bool{},
	}
	pubs := map[bft.GroupID][]ed25519.PublicKey{}
	sb := byte(1)
	for g := range nGroups {
		for range 4 {
			k := seedKey(sb)
			sb++
			w.privs[bft.GroupID(g)] = append(w.privs[bft.GroupID(g)], k)
			pubs[bft.GroupID(g)] = append(pubs[bft.GroupID(g)], k.Public().(ed25519.PublicKey))
		}
	}
	w.admin = seedKey(200)
	var err error
	w.keys, err = txn.NewKeys(worldCluster, pubs, []ed25519.PublicKey{w.admin.Public().(ed25519.PublicKey)})
	require.NoError(t, err)
	w.dom = w.keys.Domain()
	w.pmap, err = oracle.FromCluster(&cluster.Cluster{Partitions: cluster.SplitFirstByte(nGroups)})
	require.NoError(t, err)
	for _, o := range opts {
		o(w)
	}
	for g := range nGroups {
		gr := &wgroup{w: w, id: bft.GroupID(g), bdom: bft.NewDomain(worldCluster, bft.GroupID(g)),
			ordered: map[reqKey]bool{}, low: map[string]uint64{}}
		for i := range 4 {
			r := &wreplica{g: gr, idx: i, priv: w.privs[gr.id][i], fs: vfs.NewMem(), cache: map[reqKey]*bftpb.Reply{}}
			r.open(t)
			gr.replicas = append(gr.replicas, r)
		}
		w.groups = append(w.groups, gr)
	}
	return w
}

func (w *world) group(g bft.GroupID) *wgroup { return w.groups[g] }

// ---- groups and replicas ----

type reqKey struct {
	client string
	ts     uint64
}

type wgroup struct {
	w        *world
	id       bft.GroupID
	bdom     bft.Domain
	replicas []*wreplica
	seq      bft.SeqNum
	ordered  map[reqKey]bool
	low      map[string]uint64
	// hold keeps requests from being ordered until released (a slow or
	// partitioned group); held keeps them meanwhile.
	hold bool
	held []*bftpb.Request
	// executed counts the calls the group executed, by call kind.
	executed map[txn.CallKind]int
}

type wreplica struct {
	g     *wgroup
	idx   int
	priv  ed25519.PrivateKey
	fs    vfs.FS
	store *storage.Engine
	eng   *partition.Engine
	cache map[reqKey]*bftpb.Reply
	// byz, if set, transforms the replica's replies (a Byzantine replica);
	// returning nil makes it silent.
	byz func(*bftpb.Reply) *bftpb.Reply
}

func (r *wreplica) open(t testing.TB) {
	t.Helper()
	var err error
	r.store, err = storage.Open(fmt.Sprintf("/g%dr%d", r.g.id, r.idx), storage.Options{FS: r.fs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.store.Close() })
	w := r.g.w
	r.eng, err = partition.New(partition.Config{Group: r.g.id, Keys: w.keys, InitialMap: w.pmap, Limits: w.limits})
	require.NoError(t, err)
	require.NoError(t, r.eng.Restored(r.store))
}

// receive is an envelope arriving at replica to of the group.
func (g *wgroup) receive(to int, req *bftpb.Request) {
	k := reqKey{string(req.Client), req.Timestamp}
	if g.ordered[k] {
		// Executed already: the replica re-sends its cached reply (C2, C4).
		if rep := g.replicas[to].cache[k]; rep != nil {
			g.send(g.replicas[to], rep)
		}
		return
	}
	if g.hold {
		for _, h := range g.held {
			if string(h.Client) == string(req.Client) && h.Timestamp == req.Timestamp {
				return
			}
		}
		g.held = append(g.held, req)
		return
	}
	g.order(req)
}

// release lets a held group order what it holds.
func (g *wgroup) release() {
	g.hold = false
	held := g.held
	g.held = nil
	for _, req := range held {
		g.receive(0, req)
	}
}

// order executes one envelope at every replica, as one batch, and sends
// every replica's reply.
func (g *wgroup) order(req *bftpb.Request) {
	t := g.w.t
	k := reqKey{string(req.Client), req.Timestamp}
	if req.Timestamp <= g.low[k.client] {
		return // below the client's low watermark: never executes (C2)
	}
	g.low[k.client] = max(g.low[k.client], req.Low)
	g.ordered[k] = true
	if debugWorld {
		fmt.Printf("%s order g%d client %x ts %d low %d\n", g.w.now.Format("05.000000"), g.id, []byte(req.Client)[:2], req.Timestamp, req.Low)
	}
	payloads, err := envelope.DecodeCalls(req.Payload)
	if err != nil {
		for _, r := range g.replicas {
			rep := host.Rejection(&g.bdom, bft.ReplicaID(r.idx), req, err)
			r.cache[k] = rep
			g.send(r, rep)
		}
		return
	}
	// As host.Loop.apply does: a call Validate rejects fails alone, with its
	// reason as its outcome; the envelope's other calls execute.
	calls := make([]host.Call, 0, len(payloads))
	reasons := make([]string, len(payloads))
	for i, p := range payloads {
		if err := g.replicas[0].eng.Validate(p); err != nil {
			reasons[i] = err.Error()
			continue
		}
		calls = append(calls, host.Call{Client: bft.ClientID(req.Client), Timestamp: req.Timestamp, Index: i, Payload: p})
		if g.executed == nil {
			g.executed = map[txn.CallKind]int{}
		}
		if len(p) > 0 {
			g.executed[txn.CallKind(p[0])]++
			g.w.calls = append(g.w.calls, callRec{at: g.w.now, g: g.id, client: bft.ClientID(req.Client), kind: txn.CallKind(p[0]), payload: p})
		}
	}
	g.seq++
	var first [][]byte
	for i, r := range g.replicas {
		b := r.store.NewIndexedBatch()
		res, err := r.eng.Execute(g.seq, calls, b)
		require.NoError(t, err)
		require.NoError(t, r.store.Commit(b, false))
		require.NoError(t, b.Close())
		if i == 0 {
			first = res
		} else {
			require.Equal(t, first, res, "replica %d of group %d computed other results", i, g.id)
		}
		rep := &bftpb.Reply{Client: req.Client, Timestamp: req.Timestamp, Replica: uint32(r.idx),
			Status: bftpb.ReplyStatus_REPLY_STATUS_OK, Result: envelope.EncodeExecuted(res, reasons)}
		if sign := host.SignBytesOf(r.eng, rep); sign != nil {
			sigs := make([][]byte, len(sign))
			for j, m := range sign {
				if m != nil {
					sigs[j] = ed25519.Sign(r.priv, m)
				}
			}
			rep.Signatures = envelope.EncodeResults(sigs)
		}
		r.cache[k] = rep
		g.send(r, rep)
	}
}

// send delivers a replica's reply to its client after the network delay
// (unless lost, or the replica is Byzantine and says otherwise).
func (g *wgroup) send(r *wreplica, rep *bftpb.Reply) {
	w := g.w
	if r.byz != nil {
		cp := &bftpb.Reply{View: rep.View, Client: rep.Client, Timestamp: rep.Timestamp, Replica: rep.Replica,
			Status: rep.Status, Result: bytes.Clone(rep.Result), Signatures: bytes.Clone(rep.Signatures)}
		if rep = r.byz(cp); rep == nil {
			return
		}
	}
	if w.lost() || w.cut[string(rep.Client)] {
		return
	}
	var c *wclient // the latest process with this key
	for _, cl := range w.clients {
		if string(cl.id) == string(rep.Client) {
			c = cl
		}
	}
	if c == nil {
		return
	}
	gen := c.gen
	w.after(w.delay(), func() {
		if c.gen != gen || c.cores[g.id] == nil {
			return // the client restarted: the old incarnation's replies go nowhere
		}
		core := c.cores[g.id]
		core.Deliver(rep, w.now)
		core.Flush(w.now)
	})
}

// userValue reads a user key at replica 0 of the group.
func (g *wgroup) userValue(key []byte) ([]byte, bool) {
	v, err := g.replicas[0].store.Get(storage.UserData, key)
	if err != nil {
		require.ErrorIs(g.w.t, err, storage.ErrNotFound)
		return nil, false
	}
	return v, true
}

// sums returns every replica's state digest.
func (g *wgroup) sums() [][storage.SumSize]byte {
	var out [][storage.SumSize]byte
	for _, r := range g.replicas {
		s, err := r.store.Sum()
		require.NoError(g.w.t, err)
		out = append(out, s)
	}
	return out
}

// ---- clients ----

// wclient is a client process: a key, one group-client Core per group, and
// (for correct clients) a coordinator Core over them.
type wclient struct {
	w     *world
	priv  ed25519.PrivateKey
	id    bft.ClientID
	gen   int
	cores map[bft.GroupID]*client.Core
	core  *Core
	cfg   Config
	// stopTick stops the group clients' ticker.
	stopTick func()
	started  bool
	rawOnly  bool
	// mangle, if set, rewrites the results the group client accepted before
	// the core sees them: a group with more than f faulty replicas, or a
	// broken Env.
	mangle func(g bft.GroupID, res *client.Result)
	// onceDone, if set, runs after the next raw call (a short-lived
	// inspector process).
	onceDone func()
	flushing map[bft.GroupID]bool
}

// newClient adds a client process with the key of seed; with a coordinator
// core (cfg adjusts its configuration) unless raw.
func (w *world) newClient(seed byte, configure func(*Config)) *wclient {
	c := &wclient{w: w, priv: seedKey(seed)}
	c.id = bft.ClientID(c.priv.Public().(ed25519.PublicKey))
	w.clients = append(w.clients, c)
	c.cfg = Config{Owner: c.id, Keys: w.keys, Map: w.pmap, Limits: w.limits, Seed: uint64(seed),
		Tuning: Tuning{RecoveryGrace: 50 * time.Millisecond}, Logger: debugLogger}
	if configure != nil {
		configure(&c.cfg)
	}
	c.boot()
	return c
}

// newRaw adds a client process without a coordinator: a Byzantine or
// hand-driven owner that sends calls with raw.
func (w *world) newRaw(seed byte) *wclient {
	c := &wclient{w: w, priv: seedKey(seed), rawOnly: true}
	c.id = bft.ClientID(c.priv.Public().(ed25519.PublicKey))
	w.clients = append(w.clients, c)
	c.boot()
	return c
}

// boot starts (or restarts) the process: fresh group clients and a fresh
// coordinator core, which runs its start-up query (W3).
func (c *wclient) boot() {
	w := c.w
	c.gen++
	if c.stopTick != nil {
		c.stopTick()
	}
	c.cores = map[bft.GroupID]*client.Core{}
	c.flushing = map[bft.GroupID]bool{}
	for _, g := range w.groups {
		conns := make([]client.Conn, len(g.replicas))
		for i := range conns {
			conns[i] = wconn{g: g, to: i}
		}
		keys := make([]ed25519.PublicKey, len(g.replicas))
		for i, r := range g.replicas {
			keys[i] = r.priv.Public().(ed25519.PublicKey)
		}
		c.cores[g.id] = client.NewCore(client.CoreConfig{
			ID: c.id, F: 1, N: 4, Domain: g.bdom,
			Sign:        func(msg []byte) []byte { return ed25519.Sign(c.priv, msg) },
			VerifyReply: func(*bftpb.Reply) bool { return true },
			SignBytes:   w.dom.SignBytes,
			VerifySignature: func(r bft.ReplicaID, msg, sig []byte) bool {
				return int(r) < len(keys) && ed25519.Verify(keys[r], msg, sig)
			},
			Window: 16, InFlight: 4, Timeout: 40 * time.Millisecond, MaxEnvelopeCalls: 64, MaxEnvelopeBytes: 1 << 20,
		}, conns, w.now)
	}
	gen := c.gen
	var tick func()
	stopped := false
	tick = func() {
		if stopped || c.gen != gen {
			return
		}
		for _, g := range w.groups {
			c.cores[g.id].Tick(w.now)
			c.cores[g.id].Flush(w.now)
		}
		w.after(10*time.Millisecond, tick)
	}
	w.after(10*time.Millisecond, tick)
	c.stopTick = func() { stopped = true }
	if c.rawOnly {
		return
	}
	var err error
	c.core, err = NewCore(c.cfg, (*wenv)(c))
	require.NoError(w.t, err)
	c.started = false
	c.core.Startup(func(err error) {
		require.NoError(w.t, err)
		c.started = true
	})
}

// crash stops the process: its group clients and core are gone (their
// replies go nowhere); boot starts a new incarnation.
func (c *wclient) crash() {
	c.gen++
	c.core = nil
	c.cores = map[bft.GroupID]*client.Core{}
	if c.stopTick != nil {
		c.stopTick()
	}
}

type wconn struct {
	g  *wgroup
	to int
}

func (cn wconn) Send(r *bftpb.Request) bool {
	if debugWorld {
		fmt.Printf("%s send g%d to %d client %x ts %d cut %v\n", cn.g.w.now.Format("05.000000"), cn.g.id, cn.to, []byte(r.Client)[:2], r.Timestamp, cn.g.w.cut[string(r.Client)])
	}
	w := cn.g.w
	if w.lost() || w.cut[string(r.Client)] {
		return true
	}
	w.after(w.delay(), func() { cn.g.receive(cn.to, r) })
	return true
}
func (wconn) Replies() <-chan *bftpb.Reply { return nil }
func (wconn) Close() error                 { return nil }

// wenv is a client as the core's Env.
type wenv wclient

func (e *wenv) Invoke(g bft.GroupID, payload []byte, done func(client.Result)) {
	c := (*wclient)(e)
	w := c.w
	core := c.cores[g]
	gen := c.gen
	core.Submit(payload, w.now, func(res client.Result) {
		// Completions come back as their own events, as in production (the
		// Client posts them to its loop).
		w.after(0, func() {
			if c.gen == gen {
				if c.mangle != nil {
					c.mangle(g, &res)
				}
				done(res)
			}
		})
	})
	// Calls submitted in one instant leave together, as the production
	// group client's loop drains every call queued before it flushes: the
	// calls of concurrent transactions share envelopes.
	if !c.flushing[g] {
		c.flushing[g] = true
		w.after(0, func() {
			c.flushing[g] = false
			if c.gen == gen {
				core.Flush(w.now)
			}
		})
	}
}

func (e *wenv) AfterFunc(d time.Duration, f func()) func() {
	c := (*wclient)(e)
	gen := c.gen
	return c.w.after(d, func() {
		if c.gen == gen {
			f()
		}
	})
}

func (e *wenv) Now() time.Time { return e.w.now }

// ---- running transactions ----

// outcome is what a caller got.
type outcome struct {
	h    Handle
	done bool
	res  *Result
	err  error
}

// start starts a transaction at a correct client.
func (c *wclient) start(b *txn.Builder, opts Options) *outcome {
	o := &outcome{}
	o.h = c.core.Start(b.Ops(), opts, func(res *Result, err error) {
		require.False(c.w.t, o.done, "done called twice")
		o.done, o.res, o.err = true, res, err
	})
	return o
}

// do runs a transaction to its outcome.
func (c *wclient) do(b *txn.Builder) (*Result, error) {
	c.w.t.Helper()
	return c.doWith(b, Options{})
}

// doWith runs a transaction with options to its outcome.
func (c *wclient) doWith(b *txn.Builder, opts Options) (*Result, error) {
	c.w.t.Helper()
	o := c.start(b, opts)
	c.w.runUntil("transaction outcome", time.Minute, func() bool { return o.done })
	return o.res, o.err
}

// settle runs until every client's core is idle.
func (w *world) settle() {
	w.t.Helper()
	w.runUntil("every client idle", 5*time.Minute, func() bool {
		for _, c := range w.clients {
			if c.core != nil && !c.core.Idle() {
				return false
			}
		}
		return true
	})
}

// settleOwn runs until every client's own transactions are finished
// (recoveries waiting for their grace period aside).
func (w *world) settleOwn() {
	w.t.Helper()
	w.runUntil("every client's transactions finished", 5*time.Minute, func() bool {
		for _, c := range w.clients {
			if c.core == nil {
				continue
			}
			if s := c.core.Stats(); !s.Ready || s.Requests+s.Unfinished+s.Waiting > 0 {
				return false
			}
		}
		return true
	})
}

// raw sends one call as client c and returns the group's result (for
// Byzantine owners and direct inspection).
func (c *wclient) raw(g bft.GroupID, payload []byte) client.Result {
	c.w.t.Helper()
	var got *client.Result
	(*wenv)(c).Invoke(g, payload, func(res client.Result) { got = &res })
	c.w.runUntil("raw call", time.Minute, func() bool { return got != nil })
	if f := c.onceDone; f != nil {
		c.onceDone = nil
		f()
	}
	return *got
}

// rawResult is raw, decoded.
func (c *wclient) rawResult(g bft.GroupID, payload []byte) *txn.Result {
	c.w.t.Helper()
	res := c.raw(g, payload)
	require.NoError(c.w.t, res.Err)
	out, err := txn.DecodeResult(res.Value)
	require.NoError(c.w.t, err)
	return out
}

// query returns the owner's records at group g (W3).
func (c *wclient) query(g bft.GroupID) *txn.QueryResult {
	return c.rawResult(g, txn.NewQueryCall(0)).Query
}

// build makes a transaction of client c by hand (a Byzantine or abandoning
// owner), routed by the world's map at version 0.
func (c *wclient) build(b *txn.Builder, nonce, watermark uint64) (*txn.Txn, []byte, txn.TxnID) {
	c.w.t.Helper()
	var gvs []txn.GroupVersion
	for _, g := range txn.InvolvedGroups(b.Ops(), c.w.pmap) {
		gvs = append(gvs, txn.GroupVersion{Group: g})
	}
	t, err := b.Build(txn.Header{Owner: c.id, Nonce: nonce, Watermark: watermark}, gvs, c.w.limits)
	require.NoError(c.w.t, err)
	enc := t.Encode()
	return t, enc, c.w.dom.ID(enc)
}

// abandon makes client c (without a coordinator) deliver a transaction to
// every group it involves and then walk away (paper §3.4, a.2): it stays
// pending wherever it voted commit.
func (c *wclient) abandon(b *txn.Builder, nonce uint64) (*txn.Txn, txn.TxnID) {
	c.w.t.Helper()
	t, enc, id := c.build(b, nonce, nonce)
	for _, gv := range t.Groups {
		res := c.rawResult(gv.Group, txn.NewTxnCall(enc, nil))
		require.Equal(c.w.t, txn.ResultVote, res.Kind)
	}
	return t, id
}

// debugLogger, if set, receives the cores' logs.
var debugLogger *slog.Logger

// debugWorld prints every envelope sent and ordered.
var debugWorld = os.Getenv("COORD_WORLD_DEBUG") != ""
