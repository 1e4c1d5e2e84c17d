package bfttest

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// Group is one simulated replica group: n = 3f+1 replicas (a Twins slot has
// two instances), their keys, the production Checker every delivery passes
// through, and the group's share of the checkers' state.
type Group struct {
	w       *World
	ID      int
	F, N    int
	Keys    *Keys
	checker *bft.Checker
	dom     *bft.Domain
	// newApp makes the application of a replica incarnation.
	newApp func() host.Application
	// configure adjusts each replica's core configuration.
	configure func(*bft.Config)

	// Replicas holds one instance per slot; twins holds a slot's second
	// instance (Twins: the same key, run twice).
	Replicas []*SimReplica
	twins    map[int]*SimReplica

	// clients receive replies by client id.
	clients map[bft.ClientID]ReplySink

	// Checker state: what correct replicas executed.
	agreed    map[bft.SeqNum]bft.Digest
	cpDigests map[bft.SeqNum][]byte
	// signed holds the canonical bytes of every request a client signed:
	// correct replicas execute nothing else (validity).
	signed map[string]bool
	// callResults holds, per call identity the workload chose, the result
	// correct replicas computed; clients compare what they accept.
	callResults map[string][]byte
	byCall      map[callID][]byte
	uniqueCalls bool
	cov         *Coverage
	// issuedList holds signed requests for replays and for Byzantine
	// replicas that build valid batches.
	issuedList []*bftpb.Request
	// envClients are the clients of a scenario environment (replies name
	// them by index).
	envClients []*SimClient
	// coreStats sums the core counters of replica incarnations that ended.
	coreStats bft.Stats
	// coordinated is the shared memory of Coordinated replicas.
	coordinated map[[2]uint64][]byte
	// oracle records what correct replicas signed (adversary_mut_oracle.go).
	oracle *oracle
}

// ReplySink is a simulated client: it receives the replies of its group.
type ReplySink interface {
	DeliverReply(g *Group, rep *bftpb.Reply)
}

// GroupConfig describes a group to add to a world.
type GroupConfig struct {
	F       int
	Ed25519 bool
	// Keys, if set, are the group's keys (made beforehand, e.g. because
	// other groups' applications check this group's signatures); otherwise
	// AddGroup makes them.
	Keys *Keys
	// Clients is the shared client key registry (nil: a new one).
	Clients *ClientKeys
	NewApp  func() host.Application
	// Configure adjusts each replica's core configuration (after SimConfig).
	Configure func(*bft.Config)
	// Faulty maps slots to Byzantine behaviours.
	Faulty map[int]Behavior
	// Twins, if >= 0, runs that slot as two instances with one key.
	Twins int
	// RepeatedCalls: the workload sends the same call bytes more than once
	// (transactions re-sent for recovery), so results are compared per call
	// identity only.
	RepeatedCalls bool
	Cov           *Coverage
}

// AddGroup adds a group of 3f+1 replicas to the world; Start starts them.
func (w *World) AddGroup(gc GroupConfig) *Group {
	id := len(w.groups)
	n := 3*gc.F + 1
	g := &Group{
		w: w, ID: id, F: gc.F, N: n, Keys: gc.Keys, newApp: gc.NewApp,
		configure: gc.Configure, twins: make(map[int]*SimReplica), clients: make(map[bft.ClientID]ReplySink),
		agreed: make(map[bft.SeqNum]bft.Digest), cpDigests: make(map[bft.SeqNum][]byte),
		signed: make(map[string]bool), callResults: make(map[string][]byte), byCall: make(map[callID][]byte),
		uniqueCalls: !gc.RepeatedCalls, cov: gc.Cov,
	}
	if g.cov == nil {
		g.cov = &Coverage{}
	}
	if g.Keys == nil {
		g.Keys = NewGroupKeys(id, n, gc.Ed25519, gc.Clients)
	}
	base := g.coreConfig(0)
	chk, err := bft.NewChecker(bft.CheckerConfigFrom(base, g.Keys, g.validate))
	if err != nil {
		panic(err)
	}
	g.checker, g.dom = chk, chk.Domain()
	for i := 0; i < n; i++ {
		r := newSimReplica(g, i, 0)
		if b := gc.Faulty[i]; b != nil {
			r.behavior = b
		}
		g.Replicas = append(g.Replicas, r)
	}
	if gc.Twins >= 0 && gc.Twins < n {
		a := g.Replicas[gc.Twins]
		b := newSimReplica(g, gc.Twins, 1)
		a.twin, b.twin = b, a
		a.behavior, b.behavior = twinBehavior{}, twinBehavior{}
		g.twins[gc.Twins] = b
	}
	w.groups = append(w.groups, g)
	return g
}

// validate is the application's stateless validation of an envelope.
func (g *Group) validate(payload []byte) error {
	return host.ValidateEnvelope(g.newApp(), nil, payload)
}

// coreConfig is replica i's core configuration.
func (g *Group) coreConfig(i int) bft.Config {
	cfg := SimConfig(i, g.F)
	cfg.Group = bft.GroupID(g.ID)
	if g.configure != nil {
		g.configure(&cfg)
	}
	cfg.ID = bft.ReplicaID(i)
	cfg.Signer = g.Keys.ReplicaSigner(i)
	if g.w.trace != nil {
		cfg.Logger = traceLogger{g.w}
	}
	return cfg
}

// Domain returns the group's signing domain.
func (g *Group) Domain() *bft.Domain { return g.dom }

// Checker returns the group's production checker.
func (g *Group) Checker() *bft.Checker { return g.checker }

// Window returns the client window W.
func (g *Group) Window() int { return int(g.coreConfig(0).ClientWindow) }

// Instances returns every replica instance, twins included.
func (g *Group) Instances() []*SimReplica {
	out := append([]*SimReplica(nil), g.Replicas...)
	for i := 0; i < g.N; i++ {
		if t := g.twins[i]; t != nil {
			out = append(out, t)
		}
	}
	return out
}

// Unexecuted reports whether a correct replica of the group that is up holds
// a prepared or committed batch it has not executed (bft.Node.Unexecuted):
// what the simulators' drain waits for, at most DrainBound.
func (g *Group) Unexecuted() bool {
	for _, r := range g.Instances() {
		if r.up && r.correct() && r.Node().Unexecuted() {
			return true
		}
	}
	return false
}

// DrainBound bounds how long, in simulated microseconds, a simulator waits
// after settling for unexecuted batches to execute (Sim.drain): many status
// intervals, so retransmitted COMMITs arrive well within it.
const DrainBound = 10_000_000

// Start starts every replica.
func (g *Group) Start() {
	for _, r := range g.Instances() {
		r.start()
		if r.behavior != nil {
			r.behavior.Init(r)
		}
	}
}

// Register makes a client reachable by its id.
func (g *Group) Register(id bft.ClientID, sink ReplySink) { g.clients[id] = sink }

// targets returns the instances of slot to that a message from slot from
// reaches: a Twins slot's instances each reach only their side of the
// group until the network heals.
func (g *Group) targets(from, to int) []*SimReplica {
	r := g.Replicas[to]
	if r.twin == nil {
		return []*SimReplica{r}
	}
	if from < 0 || !g.w.Chaotic() {
		return []*SimReplica{r, r.twin}
	}
	for _, inst := range []*SimReplica{r, r.twin} {
		if inst.reaches(from) {
			return []*SimReplica{inst}
		}
	}
	return nil
}

// sendReplicaMsg carries an encoded message from replica instance src to
// slot to.
func (g *Group) sendReplicaMsg(src *SimReplica, to int, b []byte) {
	if src.twin != nil && g.w.Chaotic() && !src.reaches(to) {
		return // a twin talks only to its side
	}
	for _, dst := range g.targets(src.id, to) {
		dst := dst
		if g.w.manual != nil {
			g.w.manual.enqueue(&queued{kind: kindReplica, group: g, from: src.id, to: to, dst: dst, b: b})
			continue
		}
		if g.w.LinkCut(g.ID, src.id, to) {
			g.w.lost++
			continue
		}
		g.w.deliver(func() { dst.deliver(b) })
	}
}

// SendRequest carries a client request to slot to.
func (g *Group) SendRequest(to int, req *bftpb.Request) {
	b, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	for _, dst := range g.targets(-1, to) {
		dst := dst
		if g.w.manual != nil {
			g.w.manual.enqueue(&queued{kind: kindRequest, group: g, to: to, dst: dst, b: b})
			continue
		}
		g.w.deliver(func() { dst.deliverRequest(b) })
	}
}

// sendReply carries a reply to its client.
func (g *Group) sendReply(rep *bftpb.Reply) {
	sink := g.clients[bft.ClientID(rep.Client)]
	if sink == nil {
		return
	}
	b, err := proto.Marshal(rep)
	if err != nil {
		panic(err)
	}
	deliver := func() {
		r := &bftpb.Reply{}
		if err := proto.Unmarshal(b, r); err == nil {
			sink.DeliverReply(g, r)
		}
	}
	if g.w.manual != nil {
		g.w.manual.enqueue(&queued{kind: kindReply, group: g, from: int(rep.Replica), sink: sink, b: b, run: deliver})
		return
	}
	g.w.deliver(deliver)
}

// NoteSigned records a request a client signed (validity checker).
func (g *Group) NoteSigned(signedBytes []byte) { g.signed[string(signedBytes)] = true }

// Describe summarizes every replica.
func (g *Group) Describe() string {
	s := ""
	for _, r := range g.Instances() {
		s += r.describe() + "; "
	}
	return s
}

func (g *Group) String() string { return fmt.Sprintf("g%d", g.ID) }
