package bfttest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Env is an interaction environment for scenario tests: the simulator's
// replicas (the production event loop on pebble), clients (the production
// client core) and checkers, but a network the test drives by hand — every
// message waits in a queue until the test delivers or drops it, and time
// moves only when the test ticks. Executions complete at once. Scenarios
// are written as datadriven scripts (testdata/scenarios/*.txt); see Run.
type Env struct {
	sim      *Sim
	reported int
}

type queueKind int

const (
	kindReplica queueKind = iota
	kindRequest
	kindReply
)

type queued struct {
	kind     queueKind
	group    *Group
	from, to int
	dst      *SimReplica
	sink     ReplySink
	b        []byte
	msg      *bftpb.Message // decoded, for replica messages
	run      func()         // delivers a reply
}

type manualNet struct {
	queue []*queued
	// cut links (replica to replica); messages across them are dropped.
	cut map[[2]int]bool
}

func (m *manualNet) enqueue(q *queued) {
	if q.kind == kindReplica {
		if m.cut[[2]int{q.from, q.to}] {
			return
		}
		q.msg = &bftpb.Message{}
		if err := proto.Unmarshal(q.b, q.msg); err != nil {
			panic(err)
		}
	}
	if q.kind == kindReply {
		rep := &bftpb.Reply{}
		if err := proto.Unmarshal(q.b, rep); err == nil {
			for i, c := range clientsOf(q.group) {
				if c.id == bft.ClientID(rep.Client) {
					q.to = i
				}
			}
		}
	}
	m.queue = append(m.queue, q)
}

func clientsOf(g *Group) []*SimClient { return g.envClients }

// NewEnv creates a group of 3f+1 replicas and the given number of clients
// with the simulator's configuration (adjusted by configure, if not nil).
// faulty assigns behaviours to replicas.
func NewEnv(f, clients int, configure func(*bft.Config), faulty map[int]Behavior) *Env {
	s := NewSim(Options{Seed: 1, F: f, Clients: clients, CallsPerClient: 1 << 30, Callers: 0,
		Configure: configure, Faulty: faulty, Twins: -1, HealAt: 1 << 62})
	s.w.manual = &manualNet{cut: make(map[[2]int]bool)}
	s.g.envClients = s.clients
	s.g.Start()
	return &Env{sim: s}
}

// Close releases every replica's store.
func (e *Env) Close() { e.sim.w.Close() }

// Violations returns what the checkers found so far.
func (e *Env) Violations() []string { return e.sim.w.violations }

// Node returns replica i's node (nil while it is down).
func (e *Env) Node(i int) *bft.Node { return e.sim.g.Replicas[i].Node() }

// Request makes client c issue one new call and sends its envelope to the
// given replicas (the client's usual target, the primary it believes in, if
// none).
func (e *Env) Request(c int, to []int) error {
	if c < 0 || c >= len(e.sim.clients) {
		return fmt.Errorf("no client %d", c)
	}
	cl := e.sim.clients[c]
	if cl.core.Outstanding() > 0 {
		return fmt.Errorf("client %d still has a request outstanding (use retransmit)", c)
	}
	m := e.sim.w.manual
	before := len(m.queue)
	cl.total = cl.issued + 1
	cl.call()
	if len(to) == 0 {
		return nil
	}
	// The core sent it to the primary it believes in: retarget.
	sent := m.queue[before:]
	m.queue = m.queue[:before]
	for _, q := range sent {
		if q.kind != kindRequest {
			m.queue = append(m.queue, q)
			continue
		}
		req := &bftpb.Request{}
		if err := proto.Unmarshal(q.b, req); err != nil {
			return err
		}
		for _, r := range to {
			e.sim.g.SendRequest(r, req)
		}
	}
	return nil
}

// Retransmit re-sends client c's outstanding envelopes to the given
// replicas (all if none), as a client does after its timeout (C4).
func (e *Env) Retransmit(c int, to []int) int {
	cl := e.sim.clients[c]
	n := 0
	for _, req := range cl.core.OutstandingRequests() {
		for r := 0; r < e.sim.g.N; r++ {
			if contains(to, r) {
				e.sim.g.SendRequest(r, req)
				n++
			}
		}
	}
	return n
}

// Filter selects queued messages.
type Filter struct {
	From, To []int // replicas (for requests, From is ignored; for replies To is the client)
	Types    []string
	View     *uint64
	Seq      *uint64
}

func contains(xs []int, x int) bool {
	if len(xs) == 0 {
		return true
	}
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TypeName is the name scenario scripts use for a queued message.
func (q *queued) TypeName() string {
	switch q.kind {
	case kindRequest:
		return "request"
	case kindReply:
		return "reply"
	}
	return bftpb.KindName(q.msg)
}

func (q *queued) viewSeq() (view, seq uint64, ok bool) {
	if q.msg == nil {
		return 0, 0, false
	}
	switch b := q.msg.Body.(type) {
	case *bftpb.Message_PrePrepare:
		return b.PrePrepare.View, b.PrePrepare.Seq, true
	case *bftpb.Message_Prepare:
		return b.Prepare.View, b.Prepare.Seq, true
	case *bftpb.Message_Commit:
		return b.Commit.View, b.Commit.Seq, true
	case *bftpb.Message_Checkpoint:
		return 0, b.Checkpoint.Seq, true
	case *bftpb.Message_ViewChange:
		return b.ViewChange.View, 0, true
	case *bftpb.Message_NewView:
		return b.NewView.View, 0, true
	}
	return 0, 0, false
}

func (f Filter) match(q *queued) bool {
	if q.kind != kindRequest && !contains(f.From, q.from) {
		return false
	}
	if !contains(f.To, q.to) {
		return false
	}
	if len(f.Types) > 0 {
		ok := false
		for _, t := range f.Types {
			ok = ok || t == q.TypeName()
		}
		if !ok {
			return false
		}
	}
	if f.View != nil || f.Seq != nil {
		v, s, ok := q.viewSeq()
		if !ok || (f.View != nil && v != *f.View) || (f.Seq != nil && s != *f.Seq) {
			return false
		}
	}
	return true
}

// Deliver delivers matching queued messages, including those the
// deliveries produce, until none match; it returns how many it delivered.
// Executions and state transfers the deliveries start complete at once.
func (e *Env) Deliver(f Filter) int {
	n := 0
	for {
		m := e.sim.w.manual
		i := 0
		for ; i < len(m.queue) && !f.match(m.queue[i]); i++ {
		}
		if i == len(m.queue) {
			return n
		}
		q := m.queue[i]
		m.queue = append(m.queue[:i], m.queue[i+1:]...)
		n++
		switch q.kind {
		case kindReplica:
			q.dst.deliver(q.b)
		case kindRequest:
			q.dst.deliverRequest(q.b)
		case kindReply:
			q.run()
		}
		e.sim.w.RunDue()
		if n > 1_000_000 {
			panic("bfttest: delivery does not quiesce")
		}
	}
}

// Copy queues a copy of each matching replica message for replica dest (a
// message relayed by someone else, or a Byzantine sender's copy), and
// returns how many it copied.
func (e *Env) Copy(f Filter, dest int) int {
	m := e.sim.w.manual
	var add []*queued
	for _, q := range m.queue {
		if q.kind == kindReplica && f.match(q) {
			c := *q
			c.to = dest
			c.dst = e.sim.g.Replicas[dest]
			add = append(add, &c)
		}
	}
	m.queue = append(m.queue, add...)
	return len(add)
}

// Drop discards matching queued messages and returns how many.
func (e *Env) Drop(f Filter) int {
	m := e.sim.w.manual
	kept := m.queue[:0]
	n := 0
	for _, q := range m.queue {
		if f.match(q) {
			n++
			continue
		}
		kept = append(kept, q)
	}
	m.queue = kept
	return n
}

// Tick ticks the given replicas (all if none) n times, one tick at a time
// across replicas; simulator events that fall due run.
func (e *Env) Tick(replicas []int, n int) {
	w := e.sim.w
	for i := 0; i < n; i++ {
		w.now += e.sim.opts.TickEvery
		w.RunDue()
		for _, r := range e.sim.g.Replicas {
			if contains(replicas, r.id) {
				r.tick()
				w.RunDue()
			}
		}
		for _, c := range e.sim.clients {
			c.core.Tick(simTime(w.now))
			c.core.Flush(simTime(w.now))
		}
	}
}

// Crash cuts replica i's power (it keeps what it synced); Restart brings it
// back from its store.
func (e *Env) Crash(i int) {
	r := e.sim.g.Replicas[i]
	if r.up {
		r.crashClone = r.fs.CrashClone(vfs.CrashCloneCfg{})
		r.crash()
	}
}

// Restart restarts replica i from its durable store.
func (e *Env) Restart(i int) {
	if r := e.sim.g.Replicas[i]; !r.up {
		r.start()
		e.sim.w.RunDue()
	}
}

// Cut drops every message between the replicas in a and those in b, both
// ways, until Heal.
func (e *Env) Cut(a, b []int) {
	for _, x := range a {
		for _, y := range b {
			e.sim.w.manual.cut[[2]int{x, y}] = true
			e.sim.w.manual.cut[[2]int{y, x}] = true
		}
	}
}

// Heal removes every cut.
func (e *Env) Heal() { e.sim.w.manual.cut = make(map[[2]int]bool) }

// Queue describes the queued messages, one per line.
func (e *Env) Queue() string {
	var b strings.Builder
	counts := map[string]int{}
	var keys []string
	for _, q := range e.sim.w.manual.queue {
		v, s, ok := q.viewSeq()
		k := fmt.Sprintf("%s %d->%d", q.TypeName(), q.from, q.to)
		if q.kind == kindRequest {
			k = fmt.Sprintf("request client->%d", q.to)
		}
		if ok {
			k += fmt.Sprintf(" v%d s%d", v, s)
		}
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	for _, k := range keys {
		if counts[k] > 1 {
			fmt.Fprintf(&b, "%s x%d\n", k, counts[k])
		} else {
			fmt.Fprintln(&b, k)
		}
	}
	return b.String()
}

// Status describes every replica and client; state is a prefix of the
// store's digest (the LtHash sum checkpoints carry).
func (e *Env) Status() string {
	var b strings.Builder
	for _, r := range e.sim.g.Replicas {
		if !r.up {
			fmt.Fprintf(&b, "r%d: down\n", r.id)
			continue
		}
		n := r.Node()
		v, vc := n.View()
		state := "normal"
		if vc {
			state = "view-changing"
		}
		sum, err := r.engine.Sum()
		if err != nil {
			fmt.Fprintf(&b, "r%d: store error %v\n", r.id, err)
			continue
		}
		fmt.Fprintf(&b, "r%d: view %d %s, h %d, executed %d, state %x\n", r.id, v, state, n.LowWatermark(), n.LastExecuted(), sum[:4])
	}
	for i, c := range e.sim.clients {
		fmt.Fprintf(&b, "client %d: %d accepted, %d outstanding\n", i, c.accepted, c.core.Outstanding())
	}
	return b.String()
}

// Executed describes the agreed log: the batch digest per sequence number
// that correct replicas executed.
func (e *Env) Executed() string {
	g := e.sim.g
	seqs := make([]bft.SeqNum, 0, len(g.agreed))
	for s := range g.agreed {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var b strings.Builder
	for _, s := range seqs {
		fmt.Fprintf(&b, "seq %d: %s\n", s, g.agreed[s])
	}
	return b.String()
}

// Stats prints the core counters scenarios assert on.
func (e *Env) Stats() string {
	var b strings.Builder
	for _, r := range e.sim.g.Replicas {
		if !r.up {
			fmt.Fprintf(&b, "r%d: down\n", r.id)
			continue
		}
		st := r.Node().Stats()
		fmt.Fprintf(&b, "r%d: view-changes %d, new-views %d, equivocations %d, state-transfers %d, committed-fetched %d, stable-checkpoints %d, conflicts %d\n",
			r.id, st.ViewChanges, st.NewViews, st.Equivocations, st.StateTransfers, st.CommittedFetched, st.StableCheckpoints, st.Dropped[3])
	}
	return b.String()
}
