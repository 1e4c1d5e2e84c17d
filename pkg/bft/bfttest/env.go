package bfttest

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Env is an interaction environment for scenario tests: the simulator's
// replicas, clients, stores and checkers, but a network the test drives by
// hand — every message waits in a queue until the test delivers or drops
// it, and time moves only when the test ticks. Scenarios are written as
// datadriven scripts (testdata/scenarios/*.txt); see RunCommand.
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
	from, to int
	b        []byte
	msg      *bftpb.Message // decoded, for replica messages
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
	m.queue = append(m.queue, q)
}

// NewEnv creates a group of 3f+1 replicas and the given number of clients
// with the simulator's configuration (adjusted by configure, if not nil).
// faulty assigns behaviours to replicas.
func NewEnv(f, clients int, configure func(*bft.Config), faulty map[int]Behavior) *Env {
	s := newSim(Options{Seed: 1, F: f, Clients: clients, RequestsPerClient: 1 << 30, Outstanding: 1, PayloadSize: 8,
		Configure: configure, Faulty: faulty, HealAt: 1 << 62})
	s.manual = &manualNet{cut: make(map[[2]int]bool)}
	for _, r := range s.replicas {
		r.start()
		if r.behavior != nil {
			r.behavior.Init(r)
		}
	}
	return &Env{sim: s}
}

// Violations returns what the checkers found so far.
func (e *Env) Violations() []string { return e.sim.violations }

// Node returns replica i's node (nil while it is down).
func (e *Env) Node(i int) *bft.Node { return e.sim.replicas[i].node }

// Request makes client c issue one new request and sends it to the given
// replicas (the client's usual target, the primary it believes in, if none).
func (e *Env) Request(c int, to []int) error {
	cl := e.sim.clients[c]
	if len(cl.outstanding) >= e.sim.opts.Outstanding {
		return fmt.Errorf("client %d still has a request outstanding (use retransmit)", c)
	}
	cl.total = cl.issued + 1
	before := len(e.sim.manual.queue)
	ts := cl.nextTs
	cl.issue()
	if len(to) == 0 {
		return nil
	}
	// issue queued it for the believed primary: retarget.
	e.sim.manual.queue = e.sim.manual.queue[:before]
	for _, r := range to {
		e.sim.sendRequest(r, cl.outstanding[ts].req)
	}
	return nil
}

// Retransmit re-sends client c's outstanding requests to the given replicas
// (all if none), as a client does after its timeout (C4).
func (e *Env) Retransmit(c int, to []int) int {
	cl := e.sim.clients[c]
	n := 0
	for _, call := range cl.outstanding {
		for _, r := range e.sim.replicas {
			if contains(to, r.id) {
				e.sim.sendRequest(r.id, call.req)
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
func (e *Env) Deliver(f Filter) int {
	n := 0
	for {
		m := e.sim.manual
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
			e.sim.replicas[q.to].deliver(q.b)
		case kindRequest:
			e.sim.replicas[q.to].deliverRequest(q.b)
		case kindReply:
			e.sim.clients[q.to].deliver(q.b)
		}
		if n > 1_000_000 {
			panic("bfttest: delivery does not quiesce")
		}
	}
}

// Copy queues a copy of each matching replica message for replica dest (a
// message relayed by someone else, or a Byzantine sender's copy), and
// returns how many it copied.
func (e *Env) Copy(f Filter, dest int) int {
	m := e.sim.manual
	var add []*queued
	for _, q := range m.queue {
		if q.kind == kindReplica && f.match(q) {
			c := *q
			c.to = dest
			add = append(add, &c)
		}
	}
	m.queue = append(m.queue, add...)
	return len(add)
}

// Drop discards matching queued messages and returns how many.
func (e *Env) Drop(f Filter) int {
	m := e.sim.manual
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
// across replicas; simulator events that fall due (state transfers) run.
func (e *Env) Tick(replicas []int, n int) {
	for i := 0; i < n; i++ {
		e.sim.now += e.sim.opts.TickEvery
		e.runDue()
		for _, r := range e.sim.replicas {
			if contains(replicas, r.id) {
				r.tick()
			}
		}
	}
}

// runDue runs scheduled simulator events whose time has come.
func (e *Env) runDue() {
	for e.sim.events.Len() > 0 && e.sim.events[0].at <= e.sim.now {
		ev := heap.Pop(&e.sim.events).(*event)
		ev.run()
	}
}

// Crash stops replica i; Restart brings it back from its store.
func (e *Env) Crash(i int) { e.sim.replicas[i].crash() }

// Restart restarts replica i from its durable store.
func (e *Env) Restart(i int) { e.sim.replicas[i].start() }

// Cut drops every message between the replicas in a and those in b, both
// ways, until Heal.
func (e *Env) Cut(a, b []int) {
	for _, x := range a {
		for _, y := range b {
			e.sim.manual.cut[[2]int{x, y}] = true
			e.sim.manual.cut[[2]int{y, x}] = true
		}
	}
}

// Heal removes every cut.
func (e *Env) Heal() { e.sim.manual.cut = make(map[[2]int]bool) }

// Queue describes the queued messages, one per line.
func (e *Env) Queue() string {
	var b strings.Builder
	counts := map[string]int{}
	var keys []string
	for _, q := range e.sim.manual.queue {
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

// Status describes every replica and client.
func (e *Env) Status() string {
	var b strings.Builder
	for _, r := range e.sim.replicas {
		if !r.up {
			fmt.Fprintf(&b, "r%d: down (executed %d)\n", r.id, r.app.LastExecuted)
			continue
		}
		v, vc := r.node.View()
		state := "normal"
		if vc {
			state = "view-changing"
		}
		fmt.Fprintf(&b, "r%d: view %d %s, h %d, executed %d, state %x\n", r.id, v, state, r.node.LowWatermark(), r.node.LastExecuted(), r.app.Digest()[:4])
	}
	for _, c := range e.sim.clients {
		fmt.Fprintf(&b, "client %d: %d accepted, %d outstanding\n", c.idx, c.doneCount, len(c.outstanding))
	}
	return b.String()
}

// Executed describes what replica i executed: seq and batch size per
// sequence number, as recorded by the agreement checker.
func (e *Env) Executed() string {
	seqs := make([]bft.SeqNum, 0, len(e.sim.agreed))
	for s := range e.sim.agreed {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	var b strings.Builder
	for _, s := range seqs {
		fmt.Fprintf(&b, "seq %d: %s\n", s, e.sim.agreed[s])
	}
	return b.String()
}

// Stats prints the core counters scenarios assert on.
func (e *Env) Stats() string {
	var b strings.Builder
	for _, r := range e.sim.replicas {
		if !r.up {
			fmt.Fprintf(&b, "r%d: down\n", r.id)
			continue
		}
		st := r.node.Stats()
		fmt.Fprintf(&b, "r%d: view-changes %d, new-views %d, equivocations %d, state-transfers %d, committed-fetched %d, stable-checkpoints %d, conflicts %d\n",
			r.id, st.ViewChanges, st.NewViews, st.Equivocations, st.StateTransfers, st.CommittedFetched, st.StableCheckpoints, st.Dropped[3])
	}
	return b.String()
}
