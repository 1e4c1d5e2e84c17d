package bft_test

// A small harness for the rule-level tests (rules_*_test.go): a group of
// n = 3f+1 bft.Nodes driven by hand. Each test either runs the whole group
// over a hand-driven network (deliver what matches a filter, drop the rest)
// or drives one node with messages it forges with the group's keys, so a
// test can put a replica in exactly the state a rule of ../shared/pbft.md
// talks about and look at what it does.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

const (
	tK       = 4  // checkpoint interval K
	tL       = 8  // log window L
	tW       = 4  // client window W
	tReqTO   = 10 // request timeout (ticks)
	tVCTO    = 10 // view-change timeout T (ticks)
	tMaxFut  = 4  // MaxFutureViews
	tCluster = "rules"
)

// testConfig is DefaultConfig with small settings. StatusInterval is huge
// so that no periodic status or retransmission disturbs a test that does
// not ask for it.
func testConfig(keys *bfttest.Keys, id, f int) bft.Config {
	cfg := bft.DefaultConfig(bft.ReplicaID(id), f)
	cfg.ClusterID = tCluster
	cfg.Group = 1
	cfg.CheckpointInterval = tK
	cfg.LogWindow = tL
	cfg.PipelineWindow = 4
	cfg.MaxBatchRequests = 16
	cfg.MaxBatchBytes = 1 << 16
	cfg.MaxRequestBytes = 1024
	cfg.ClientWindow = tW
	cfg.MaxPendingRequests = 1000
	cfg.RequestTimeout = tReqTO
	cfg.ViewChangeTimeout = tVCTO
	cfg.MaxViewChangeTimeout = 1 << 20
	cfg.StatusInterval = 1 << 30
	cfg.MaxFutureViews = tMaxFut
	cfg.MaxFetchBatches = 8
	cfg.Signer = keys.ReplicaSigner(id)
	return cfg
}

// rep is one replica's host: its node, application and durable store.
type rep struct {
	c    *cluster
	id   int
	cfg  bft.Config
	node *bft.Node
	app  *bfttest.App

	// Durable store (P1, P2).
	hs      *bftpb.HardState
	records map[string]*bftpb.LogRecord

	// manualExec: executions wait in pendingExec until the test runs them.
	manualExec  bool
	pendingExec []bft.Execution

	// Outputs since the last reset.
	msgs     []bft.Outbound
	replies  []*bftpb.Reply
	execs    []bft.Execution
	targets  []*bft.StateTarget
	deletes  []bft.KeyRange
	readies  []bft.Ready
	hsStates []*bftpb.HardState

	// p1 lists messages this node signed and sent without having persisted
	// them: the first time in the same Ready, later (retransmissions) in
	// the same or an earlier one (P1).
	p1 []string
	// sentKeys are the record keys of the signed messages sent so far.
	sentKeys map[string]bool
}

type envelope struct {
	from, to int
	msg      *bftpb.Message
}

// cluster is a group of replicas and a hand-driven network.
type cluster struct {
	t       testing.TB
	f, n    int
	keys    *bfttest.Keys
	checker *bft.Checker
	dom     bft.Domain
	reps    []*rep
	queue   []envelope
	clients []bft.ClientID
	ts      map[bft.ClientID]uint64
	// net: when false, messages the nodes send are discarded instead of
	// queued (single-node tests forge everything themselves).
	net bool
	// validate is the application's stateless validation used by the checker.
	validate func([]byte) error
}

type opt func(*bft.Config)

func newCluster(t testing.TB, f int, opts ...opt) *cluster {
	t.Helper()
	n := 3*f + 1
	c := &cluster{t: t, f: f, n: n, keys: bfttest.NewKeys(n, false), ts: make(map[bft.ClientID]uint64), net: true}
	for i := 0; i < 8; i++ {
		c.clients = append(c.clients, c.keys.NewClient(i))
	}
	for i := 0; i < n; i++ {
		cfg := testConfig(c.keys, i, f)
		for _, o := range opts {
			o(&cfg)
		}
		node, err := bft.NewNode(cfg, nil)
		if err != nil {
			t.Fatalf("NewNode(%d): %v", i, err)
		}
		c.reps = append(c.reps, &rep{c: c, id: i, cfg: cfg, node: node, app: bfttest.NewApp(), records: make(map[string]*bftpb.LogRecord)})
	}
	c.dom = bft.NewDomain(tCluster, 1)
	ch, err := bft.NewChecker(bft.CheckerConfigFrom(c.reps[0].cfg, c.keys, func(p []byte) error {
		if c.validate != nil {
			return c.validate(p)
		}
		return nil
	}))
	if err != nil {
		t.Fatalf("NewChecker: %v", err)
	}
	c.checker = ch
	return c
}

func (c *cluster) node(i int) *bft.Node { return c.reps[i].node }

// ---------------------------------------------------------------------------
// Driving one replica.

// drain runs the host's Ready loop (doc.go) until the node has nothing to do.
func (r *rep) drain() {
	for guard := 0; r.node.HasReady(); guard++ {
		if guard > 10000 {
			r.c.t.Fatalf("r%d: Ready loop does not quiesce", r.id)
		}
		rd := r.node.Ready()
		r.readies = append(r.readies, rd)
		// 1. Persist.
		if rd.HardState != nil {
			r.hs = proto.Clone(rd.HardState).(*bftpb.HardState)
			r.hsStates = append(r.hsStates, r.hs)
		}
		for _, rec := range rd.Records {
			if !bytes.Equal(rec.Key, bft.RecordKey(rec.Record)) {
				r.c.t.Errorf("r%d: record key %x is not RecordKey %x", r.id, rec.Key, bft.RecordKey(rec.Record))
			}
			r.records[string(rec.Key)] = proto.Clone(rec.Record).(*bftpb.LogRecord)
		}
		r.checkPersisted(rd)
		for _, del := range rd.Deletes {
			r.deletes = append(r.deletes, del)
			for k := range r.records {
				if k >= string(del.Start) && k < string(del.End) {
					delete(r.records, k)
				}
			}
		}
		// 2. Send.
		r.msgs = append(r.msgs, rd.Messages...)
		r.replies = append(r.replies, rd.Replies...)
		if r.c.net {
			for _, out := range rd.Messages {
				for to := 0; to < r.c.n; to++ {
					if to == r.id || (!out.Broadcast && to != int(out.To)) {
						continue
					}
					r.c.queue = append(r.c.queue, envelope{from: r.id, to: to, msg: proto.Clone(out.Msg).(*bftpb.Message)})
				}
			}
		}
		// 3. Execute.
		r.execs = append(r.execs, rd.Executions...)
		if r.manualExec {
			r.pendingExec = append(r.pendingExec, rd.Executions...)
		} else {
			for i := range rd.Executions {
				r.execute(&rd.Executions[i])
			}
		}
		// 4. State transfer.
		if rd.StateTarget != nil {
			r.targets = append(r.targets, rd.StateTarget)
		}
		r.node.Advance()
	}
}

// execute runs one execution on the reference application and reports it.
func (r *rep) execute(ex *bft.Execution) {
	results := r.app.Execute(ex)
	if err := r.node.Executed(ex.Seq, results, r.app.Digest()); err != nil {
		r.c.t.Fatalf("r%d: Executed(%d): %v", r.id, ex.Seq, err)
	}
}

// runPending executes the executions held back by manualExec.
func (r *rep) runPending() {
	p := r.pendingExec
	r.pendingExec = nil
	for i := range p {
		r.execute(&p[i])
	}
	r.drain()
}

// checkPersisted is the P1 check of one Ready: every PRE-PREPARE, PREPARE,
// COMMIT, CHECKPOINT, VIEW-CHANGE and NEW-VIEW the node signed that leaves in
// it is in the store once the Ready's records are written, and a
// VIEW-CHANGE leaves only with the view change in the hard state.
func (r *rep) checkPersisted(rd bft.Ready) {
	inReady := make(map[string]bool, len(rd.Records))
	for _, rec := range rd.Records {
		inReady[string(rec.Key)] = true
	}
	if r.sentKeys == nil {
		r.sentKeys = make(map[string]bool)
	}
	for _, out := range rd.Messages {
		rec, signer, ok := ownRecord(out.Msg)
		if !ok || signer != uint32(r.id) {
			continue
		}
		key := string(bft.RecordKey(rec))
		got := r.records[key]
		if got == nil {
			r.p1 = append(r.p1, fmt.Sprintf("%s sent without its record", describe(out.Msg)))
			continue
		}
		if !r.sentKeys[key] && !inReady[key] {
			r.p1 = append(r.p1, fmt.Sprintf("%s first sent in a Ready without its record", describe(out.Msg)))
		}
		r.sentKeys[key] = true
		if !sameSigned(got, rec) {
			r.p1 = append(r.p1, fmt.Sprintf("%s sent, but the record under its key differs", describe(out.Msg)))
		}
		if vc := out.Msg.GetViewChange(); vc != nil {
			if r.hs == nil || r.hs.View < vc.View {
				r.p1 = append(r.p1, fmt.Sprintf("VIEW-CHANGE(%d) sent with hard state view %d", vc.View, r.hs.GetView()))
			}
		}
	}
}

// ownRecord returns the log record a sent message corresponds to and its signer.
func ownRecord(m *bftpb.Message) (*bftpb.LogRecord, uint32, bool) {
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: b.PrePrepare}}, b.PrePrepare.Replica, true
	case *bftpb.Message_Prepare:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_Prepare{Prepare: b.Prepare}}, b.Prepare.Replica, true
	case *bftpb.Message_Commit:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_Commit{Commit: b.Commit}}, b.Commit.Replica, true
	case *bftpb.Message_Checkpoint:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_Checkpoint{Checkpoint: b.Checkpoint}}, b.Checkpoint.Replica, true
	case *bftpb.Message_ViewChange:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_ViewChange{ViewChange: b.ViewChange}}, b.ViewChange.Replica, true
	case *bftpb.Message_NewView:
		return &bftpb.LogRecord{Record: &bftpb.LogRecord_NewView{NewView: b.NewView}}, b.NewView.Replica, true
	}
	return nil, 0, false
}

// sameSigned compares the signed content of two records (a PRE-PREPARE's
// body is not signed and may be absent from one of them).
func sameSigned(a, b *bftpb.LogRecord) bool {
	if pa, pb := a.GetPrePrepare(), b.GetPrePrepare(); pa != nil && pb != nil {
		return pa.View == pb.View && pa.Seq == pb.Seq && bytes.Equal(pa.Digest, pb.Digest) && bytes.Equal(pa.Signature, pb.Signature)
	}
	return proto.Equal(a, b)
}

func describe(m *bftpb.Message) string {
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		return fmt.Sprintf("PRE-PREPARE(v%d s%d)", b.PrePrepare.View, b.PrePrepare.Seq)
	case *bftpb.Message_Prepare:
		return fmt.Sprintf("PREPARE(v%d s%d r%d)", b.Prepare.View, b.Prepare.Seq, b.Prepare.Replica)
	case *bftpb.Message_Commit:
		return fmt.Sprintf("COMMIT(v%d s%d r%d)", b.Commit.View, b.Commit.Seq, b.Commit.Replica)
	case *bftpb.Message_Checkpoint:
		return fmt.Sprintf("CHECKPOINT(s%d r%d)", b.Checkpoint.Seq, b.Checkpoint.Replica)
	case *bftpb.Message_ViewChange:
		return fmt.Sprintf("VIEW-CHANGE(v%d r%d)", b.ViewChange.View, b.ViewChange.Replica)
	case *bftpb.Message_NewView:
		return fmt.Sprintf("NEW-VIEW(v%d)", b.NewView.View)
	}
	return fmt.Sprintf("%T", m.Body)
}

// reset forgets the outputs collected so far.
func (r *rep) reset() {
	r.msgs, r.replies, r.execs, r.targets, r.deletes, r.readies, r.hsStates = nil, nil, nil, nil, nil, nil, nil
}

// step checks m as the host does (it must pass the checker) and steps it
// into replica to.
func (c *cluster) step(to int, m *bftpb.Message) {
	c.t.Helper()
	if err := c.checker.Message(m); err != nil {
		c.t.Fatalf("checker rejects %s from %d: %v", describe(m), m.From, err)
	}
	c.stepRaw(to, m)
}

// stepRaw steps m into replica to without the checker.
func (c *cluster) stepRaw(to int, m *bftpb.Message) {
	r := c.reps[to]
	r.node.Step(m)
	r.drain()
}

// propose hands a client request to replica to, as a host does.
func (c *cluster) propose(to int, req *bftpb.Request) error {
	c.t.Helper()
	if err := c.checker.Request(req); err != nil {
		c.t.Fatalf("checker rejects request: %v", err)
	}
	r := c.reps[to]
	err := r.node.Propose(req)
	r.drain()
	return err
}

// tick ticks replica i n times, draining after each tick.
func (c *cluster) tick(i, n int) {
	r := c.reps[i]
	for k := 0; k < n; k++ {
		r.node.Tick()
		r.drain()
	}
}

// ---------------------------------------------------------------------------
// The network.

type filter func(e envelope) bool

func all(envelope) bool { return true }

func isType(names ...string) filter {
	return func(e envelope) bool {
		for _, n := range names {
			if typeName(e.msg) == n {
				return true
			}
		}
		return false
	}
}

func (f filter) and(g filter) filter { return func(e envelope) bool { return f(e) && g(e) } }

func toR(ids ...int) filter {
	return func(e envelope) bool {
		for _, i := range ids {
			if e.to == i {
				return true
			}
		}
		return false
	}
}

func fromR(ids ...int) filter {
	return func(e envelope) bool {
		for _, i := range ids {
			if e.from == i {
				return true
			}
		}
		return false
	}
}

func typeName(m *bftpb.Message) string { return bftpb.KindName(m) }

// deliver delivers matching queued messages, and those their delivery
// produces, until none match; every one must pass the checker.
func (c *cluster) deliver(f filter) int {
	c.t.Helper()
	n := 0
	for {
		i := 0
		for ; i < len(c.queue) && !f(c.queue[i]); i++ {
		}
		if i == len(c.queue) {
			return n
		}
		e := c.queue[i]
		c.queue = append(c.queue[:i], c.queue[i+1:]...)
		n++
		if n > 100000 {
			c.t.Fatalf("delivery does not quiesce")
		}
		c.step(e.to, e.msg)
	}
}

// drop discards matching queued messages.
func (c *cluster) drop(f filter) int {
	kept := c.queue[:0]
	n := 0
	for _, e := range c.queue {
		if f(e) {
			n++
			continue
		}
		kept = append(kept, e)
	}
	c.queue = kept
	return n
}

// settle delivers everything until the network is quiet.
func (c *cluster) settle() { c.deliver(all) }

// ---------------------------------------------------------------------------
// Forging signed requests and protocol messages.

// request makes a request of client ci with timestamp ts and low watermark
// low, signed by the client.
func (c *cluster) request(ci int, ts, low uint64, payload string) *bftpb.Request {
	id := c.clients[ci]
	r := &bftpb.Request{Client: []byte(id), Timestamp: ts, Low: low, Payload: bfttest.Op(uint64(ci), []byte(payload))}
	r.Signature = c.keys.ClientSigner(id).Sign(c.dom.RequestBytes(r))
	return r
}

// next makes the next request of client ci (timestamps 1, 2, ...; low 0).
func (c *cluster) next(ci int) *bftpb.Request {
	id := c.clients[ci]
	c.ts[id]++
	return c.request(ci, c.ts[id], 0, fmt.Sprintf("op-%d", c.ts[id]))
}

func (c *cluster) batch(reqs ...*bftpb.Request) *bftpb.Batch {
	return &bftpb.Batch{Requests: reqs}
}

func (c *cluster) digest(b *bftpb.Batch) []byte {
	d := c.dom.BatchDigest(b)
	return d[:]
}

func (c *cluster) nullDigest() []byte { return c.digest(&bftpb.Batch{}) }

func (c *cluster) sign(i int, b []byte) []byte { return c.keys.ReplicaSigner(i).Sign(b) }

// prePrepare is PRE-PREPARE(v, s, digest(b)) with body b, signed by signer.
func (c *cluster) prePrepare(v, s uint64, b *bftpb.Batch, signer int) *bftpb.PrePrepare {
	pp := &bftpb.PrePrepare{View: v, Seq: s, Digest: c.digest(b), Replica: uint32(signer), Batch: b}
	pp.Signature = c.sign(signer, c.dom.PrePrepareBytes(pp))
	return pp
}

// ppHeader is a PRE-PREPARE without body for digest d.
func (c *cluster) ppHeader(v, s uint64, d []byte, signer int) *bftpb.PrePrepare {
	pp := &bftpb.PrePrepare{View: v, Seq: s, Digest: d, Replica: uint32(signer)}
	pp.Signature = c.sign(signer, c.dom.PrePrepareBytes(pp))
	return pp
}

func (c *cluster) prepare(v, s uint64, d []byte, i int) *bftpb.Prepare {
	p := &bftpb.Prepare{View: v, Seq: s, Digest: d, Replica: uint32(i)}
	p.Signature = c.sign(i, c.dom.PrepareBytes(p))
	return p
}

func (c *cluster) commit(v, s uint64, d []byte, i int) *bftpb.Commit {
	m := &bftpb.Commit{View: v, Seq: s, Digest: d, Replica: uint32(i)}
	m.Signature = c.sign(i, c.dom.CommitBytes(m))
	return m
}

func (c *cluster) checkpoint(s uint64, d []byte, i int) *bftpb.Checkpoint {
	m := &bftpb.Checkpoint{Seq: s, StateDigest: d, Replica: uint32(i)}
	m.Signature = c.sign(i, c.dom.CheckpointBytes(m))
	return m
}

func (c *cluster) checkpointCert(s uint64, d []byte, ids ...int) *bftpb.CheckpointCert {
	cert := &bftpb.CheckpointCert{Seq: s, StateDigest: d}
	for _, i := range ids {
		cert.Checkpoints = append(cert.Checkpoints, c.checkpoint(s, d, i))
	}
	return cert
}

// preparedCert is a prepared certificate for (v, s, d): the primary's
// PRE-PREPARE header and PREPAREs from the given backups.
func (c *cluster) preparedCert(v, s uint64, d []byte, backups ...int) *bftpb.PreparedCert {
	pc := &bftpb.PreparedCert{PrePrepare: c.ppHeader(v, s, d, int(bft.PrimaryOf(bft.View(v), c.n)))}
	for _, i := range backups {
		pc.Prepares = append(pc.Prepares, c.prepare(v, s, d, i))
	}
	return pc
}

// viewChange is VIEW-CHANGE(v, s_c, C, P, i), signed by i.
func (c *cluster) viewChange(v uint64, i int, stable *bftpb.CheckpointCert, prepared ...*bftpb.PreparedCert) *bftpb.ViewChange {
	vc := &bftpb.ViewChange{View: v, Replica: uint32(i), Prepared: prepared}
	if stable != nil {
		vc.StableSeq, vc.StableDigest, vc.CheckpointCert = stable.Seq, stable.StateDigest, stable.Checkpoints
	}
	vc.Signature = c.sign(i, c.dom.ViewChangeBytes(vc))
	return vc
}

// oEntry is one element of a NEW-VIEW's O.
type oEntry struct {
	seq    uint64
	digest []byte
}

// expectedO recomputes O from V, independently of the core (V4).
func (c *cluster) expectedO(vcs []*bftpb.ViewChange) []oEntry {
	var minS uint64
	for _, vc := range vcs {
		if vc.StableSeq > minS {
			minS = vc.StableSeq
		}
	}
	maxS := minS
	type best struct {
		view   uint64
		digest []byte
	}
	chosen := map[uint64]best{}
	for _, vc := range vcs {
		for _, pc := range vc.Prepared {
			pp := pc.PrePrepare
			if pp.Seq <= minS {
				continue
			}
			if pp.Seq > maxS {
				maxS = pp.Seq
			}
			if b, ok := chosen[pp.Seq]; !ok || pp.View > b.view {
				chosen[pp.Seq] = best{pp.View, pp.Digest}
			}
		}
	}
	var o []oEntry
	for s := minS + 1; s <= maxS; s++ {
		if b, ok := chosen[s]; ok {
			o = append(o, oEntry{s, b.digest})
		} else {
			o = append(o, oEntry{s, c.nullDigest()})
		}
	}
	return o
}

// newView is NEW-VIEW(v, V, O) signed by signer, with O as given.
func (c *cluster) newView(v uint64, vcs []*bftpb.ViewChange, o []oEntry, signer int) *bftpb.NewView {
	nv := &bftpb.NewView{View: v, ViewChanges: vcs, Replica: uint32(signer)}
	for _, e := range o {
		nv.PrePrepares = append(nv.PrePrepares, c.ppHeader(v, e.seq, e.digest, signer))
	}
	nv.Signature = c.sign(signer, c.dom.NewViewBytes(nv))
	return nv
}

// msg wraps a body into a Message from replica from.
func msg(from int, body any) *bftpb.Message {
	m := &bftpb.Message{From: uint32(from)}
	switch b := body.(type) {
	case *bftpb.Request:
		m.Body = &bftpb.Message_Request{Request: b}
	case *bftpb.PrePrepare:
		m.Body = &bftpb.Message_PrePrepare{PrePrepare: b}
	case *bftpb.Prepare:
		m.Body = &bftpb.Message_Prepare{Prepare: b}
	case *bftpb.Commit:
		m.Body = &bftpb.Message_Commit{Commit: b}
	case *bftpb.Checkpoint:
		m.Body = &bftpb.Message_Checkpoint{Checkpoint: b}
	case *bftpb.ViewChange:
		m.Body = &bftpb.Message_ViewChange{ViewChange: b}
	case *bftpb.NewView:
		m.Body = &bftpb.Message_NewView{NewView: b}
	case *bftpb.Status:
		m.Body = &bftpb.Message_Status{Status: b}
	case *bftpb.Fetch:
		m.Body = &bftpb.Message_Fetch{Fetch: b}
	case *bftpb.CommittedBatch:
		m.Body = &bftpb.Message_CommittedBatch{CommittedBatch: b}
	case *bftpb.BatchBody:
		m.Body = &bftpb.Message_BatchBody{BatchBody: b}
	case *bftpb.CheckpointCert:
		m.Body = &bftpb.Message_CheckpointCert{CheckpointCert: b}
	default:
		panic(fmt.Sprintf("msg: %T", body))
	}
	return m
}

// ---------------------------------------------------------------------------
// Looking at outputs.

func sentPrePrepares(out []bft.Outbound) []*bftpb.PrePrepare {
	var r []*bftpb.PrePrepare
	for _, o := range out {
		if x := o.Msg.GetPrePrepare(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentPrepares(out []bft.Outbound) []*bftpb.Prepare {
	var r []*bftpb.Prepare
	for _, o := range out {
		if x := o.Msg.GetPrepare(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentCommits(out []bft.Outbound) []*bftpb.Commit {
	var r []*bftpb.Commit
	for _, o := range out {
		if x := o.Msg.GetCommit(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentCheckpoints(out []bft.Outbound) []*bftpb.Checkpoint {
	var r []*bftpb.Checkpoint
	for _, o := range out {
		if x := o.Msg.GetCheckpoint(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentViewChanges(out []bft.Outbound) []*bftpb.ViewChange {
	var r []*bftpb.ViewChange
	for _, o := range out {
		if x := o.Msg.GetViewChange(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentNewViews(out []bft.Outbound) []*bftpb.NewView {
	var r []*bftpb.NewView
	for _, o := range out {
		if x := o.Msg.GetNewView(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

func sentFetches(out []bft.Outbound) []*bftpb.Fetch {
	var r []*bftpb.Fetch
	for _, o := range out {
		if x := o.Msg.GetFetch(); x != nil {
			r = append(r, x)
		}
	}
	return r
}

// forwards are the client requests a replica sent to another replica, with
// their destination.
func forwards(out []bft.Outbound) []bft.Outbound {
	var r []bft.Outbound
	for _, o := range out {
		if o.Msg.GetRequest() != nil {
			r = append(r, o)
		}
	}
	return r
}

func executedSeqs(execs []bft.Execution) []uint64 {
	var r []uint64
	for _, e := range execs {
		r = append(r, uint64(e.Seq))
	}
	return r
}

// dropped returns the node's drop counter for a reason named in DropReasonNames.
func dropped(n *bft.Node, reason string) uint64 {
	for i, name := range bft.DropReasonNames {
		if name == reason {
			return n.Stats().Dropped[i]
		}
	}
	panic("no drop reason " + reason)
}

func seqKey(s uint64) []byte { return binary.BigEndian.AppendUint64([]byte{'s'}, s) }

// inRanges reports whether key lies in one of the ranges.
func inRanges(key []byte, rs []bft.KeyRange) bool {
	for _, r := range rs {
		if bytes.Compare(key, r.Start) >= 0 && bytes.Compare(key, r.End) < 0 {
			return true
		}
	}
	return false
}

// restored is what rep r's store would hand a restarted node (P3).
func (r *rep) restored() *bft.Restored {
	res := &bft.Restored{HardState: r.hs, LastExecuted: r.app.LastExecuted, Clients: r.app.ClientRecords()}
	keys := make([]string, 0, len(r.records))
	for k := range r.records {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		res.Records = append(res.Records, proto.Clone(r.records[k]).(*bftpb.LogRecord))
	}
	return res
}

// restart replaces replica i's node with one restored from its store.
func (c *cluster) restart(i int) {
	c.t.Helper()
	r := c.reps[i]
	node, err := bft.NewNode(r.cfg, r.restored())
	if err != nil {
		c.t.Fatalf("restart r%d: %v", i, err)
	}
	r.node = node
	r.pendingExec = nil
	r.drain()
}

// commitAt drives a backup-free slot to execution at replica i: forged
// PRE-PREPARE from the primary of v, PREPAREs and COMMITs from every other
// replica. It is for tests whose subject comes after execution.
func (c *cluster) commitAt(i int, v, s uint64, b *bftpb.Batch) {
	c.t.Helper()
	p := int(bft.PrimaryOf(bft.View(v), c.n))
	d := c.digest(b)
	if p != i {
		c.step(i, msg(p, c.prePrepare(v, s, b, p)))
	}
	for j := 0; j < c.n; j++ {
		if j != i && j != p {
			c.step(i, msg(j, c.prepare(v, s, d, j)))
		}
	}
	for j := 0; j < c.n; j++ {
		if j != i {
			c.step(i, msg(j, c.commit(v, s, d, j)))
		}
	}
}

func protoEqual(a, b proto.Message) bool { return proto.Equal(a, b) }

func cloneVC(vc *bftpb.ViewChange) *bftpb.ViewChange { return proto.Clone(vc).(*bftpb.ViewChange) }
