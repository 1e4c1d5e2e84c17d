package bfttest

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// Options describe one simulation run of one group.
type Options struct {
	Seed    uint64
	F       int
	Ed25519 bool

	Clients        int
	CallsPerClient int
	// Callers per client (concurrent calls); InFlight bounds its envelopes.
	Callers, InFlight int
	ClientTimeout     int64 // microseconds

	Net    NetConfig
	HealAt int64 // microseconds: the network is reliable and partitions end from here
	// Partitions: random partitions before HealAt.
	Partitions bool

	// Faulty maps replica slots to Byzantine behaviours; Twins, if >= 0,
	// runs that slot as two instances of one key. Together at most F.
	Faulty map[int]Behavior
	Twins  int
	// Crashing lists correct replicas that crash and restart (benign: they
	// do not count against F) with plan Crash.
	Crashing []int
	Crash    CrashPlan
	// PowerCut cuts the power of every replica at once, once.
	PowerCut bool
	// ByzantineClients is how many Byzantine clients run beside the correct ones.
	ByzantineClients int
	// ExecLag bounds how long the executor may take for one job, so that
	// execution lags behind commit.
	ExecLag int64

	TickEvery     int64 // microseconds per node tick
	LivenessBound int64 // microseconds after HealAt by which every call must complete
	// Configure adjusts each replica's core configuration.
	Configure func(*bft.Config)
	// App is the application: "log" (default) or "noop".
	App string

	Trace io.Writer
}

// Result is what a run found.
type Result struct {
	Seed       uint64
	Violations []string
	Issued     int
	Accepted   int
	SimTime    int64 // microseconds
	Events     uint64
	Summary    string
	Core       bft.Stats
	Coverage   Coverage
	// AfterHeal is how long after the heal the last call completed.
	AfterHeal int64
}

// Failed reports whether a checker found a violation.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// SimConfig returns the core configuration the simulator uses for replica
// i: small checkpoint interval and log window so that garbage collection,
// watermarks and state transfer happen often, and short timeouts.
func SimConfig(i, f int) bft.Config {
	c := bft.DefaultConfig(bft.ReplicaID(i), f)
	c.ClusterID = "sim"
	c.CheckpointInterval = 4
	c.LogWindow = 8
	c.PipelineWindow = 3
	c.MaxBatchRequests = 8
	c.ClientWindow = 4
	c.MaxRequestBytes = 4096
	c.RequestTimeout = 50 // 500 ms at 10 ms ticks
	c.ViewChangeTimeout = 50
	c.MaxViewChangeTimeout = 800
	c.StatusInterval = 10
	c.MaxFetchBatches = 8
	return c
}

// Sim is one running simulation of one group.
type Sim struct {
	opts    Options
	w       *World
	g       *Group
	clients []*SimClient
	byz     []*ByzClient
	cov     Coverage
	core    bft.Stats
	// afterHeal is how long after the heal the last call completed.
	afterHeal int64
}

// Run runs one simulation to completion and checks it.
func Run(opts Options) Result {
	s := NewSim(opts)
	defer s.w.Close()
	s.Run()
	return s.Result()
}

// NewSim builds a simulation without running it.
func NewSim(opts Options) *Sim {
	if opts.TickEvery == 0 {
		opts.TickEvery = 10_000
	}
	if opts.ClientTimeout == 0 {
		opts.ClientTimeout = 1_000_000
	}
	if opts.LivenessBound == 0 {
		opts.LivenessBound = 120_000_000
	}
	if opts.Callers == 0 {
		opts.Callers = 1
	}
	if opts.InFlight == 0 {
		opts.InFlight = 1
	}
	if opts.Twins == 0 && opts.Faulty == nil {
		opts.Twins = -1
	}
	s := &Sim{opts: opts}
	s.w = NewWorld(opts.Seed, opts.Net, opts.HealAt, opts.Trace)
	s.w.execLag = opts.ExecLag
	newApp := func() host.Application { return host.LogApp{} }
	if opts.App == "noop" {
		newApp = func() host.Application { return host.NoopApp{} }
	}
	s.g = s.w.AddGroup(GroupConfig{F: opts.F, Ed25519: opts.Ed25519, NewApp: newApp, Configure: opts.Configure,
		Faulty: opts.Faulty, Twins: opts.Twins, Cov: &s.cov})
	for _, i := range opts.Crashing {
		plan := opts.Crash
		s.g.Replicas[i].plan = &plan
	}
	for i := 0; i < opts.Clients; i++ {
		s.clients = append(s.clients, NewSimClient(s.g, i, opts.CallsPerClient, opts.Callers, opts.InFlight, opts.ClientTimeout))
	}
	for i := 0; i < opts.ByzantineClients; i++ {
		s.byz = append(s.byz, NewByzClient(s.g, 1000+i, 40))
	}
	return s
}

// World returns the simulation's world.
func (s *Sim) World() *World { return s.w }

// Group returns the simulated group.
func (s *Sim) Group() *Group { return s.g }

// Run runs the simulation until every correct client is done (and the
// replicas settled) or the liveness bound passes.
func (s *Sim) Run() {
	w, g := s.w, s.g
	g.Start()
	for _, r := range g.Instances() {
		r := r
		var tick func()
		tick = func() {
			r.tick()
			w.After(s.opts.TickEvery, tick)
		}
		w.After(s.opts.TickEvery+int64(r.id), tick)
		if r.plan != nil {
			r.plan.schedule(r)
		}
	}
	if s.opts.PowerCut {
		w.schedulePowerCut()
	}
	if s.opts.Partitions {
		w.SchedulePartitions(g.ID, g.N)
	}
	for _, c := range s.clients {
		c.Start(s.opts.TickEvery)
	}
	for _, c := range s.byz {
		c.Start()
	}
	deadline := s.opts.HealAt + s.opts.LivenessBound
	for n := 0; len(w.violations) == 0 && w.Step(deadline); n++ {
		if n%64 == 0 && s.clientsDone() {
			break
		}
	}
	if len(w.violations) == 0 && !s.clientsDone() {
		var missing []string
		for _, c := range s.clients {
			if !c.Done() {
				missing = append(missing, fmt.Sprintf("client %d: %d/%d (outstanding %d, queued %d)", c.idx, c.accepted, c.total, c.core.Outstanding(), c.core.Queued()))
			}
		}
		w.Violation("liveness: calls incomplete %v after the network healed at %dms: %s", missing, s.opts.HealAt/1000, g.Describe())
	}
	s.afterHeal = w.now - s.opts.HealAt
	if len(w.violations) == 0 {
		s.settle()
	}
	if len(w.violations) == 0 {
		s.drain()
	}
	if len(w.violations) == 0 {
		s.checkDurability()
	}
	s.collect()
}

func (s *Sim) clientsDone() bool {
	for _, c := range s.clients {
		if !c.Done() {
			return false
		}
	}
	return true
}

// settle runs the world on until every correct replica that is up has
// executed as far as the most advanced one (catch-up after the heal, G3).
func (s *Sim) settle() {
	w := s.w
	deadline := w.now + 60_000_000
	for n := 0; w.Step(deadline); n++ {
		if n%64 == 0 && s.settled() {
			return
		}
		if len(w.violations) > 0 {
			return
		}
	}
	if !s.settled() {
		w.Violation("liveness: correct replicas did not catch up within 60s after the clients finished: %s", s.g.Describe())
	}
}

// drain runs on, for at most DrainBound of simulated time, while a correct
// replica holds a prepared or committed batch it has not executed
// (bft.Node.Unexecuted): after a power cut, a batch committed before the
// cut waits in the log for the retransmitted COMMITs (seeds 6770, 9137),
// and an append acknowledged from it must be found. A batch that prepared
// at some replica but can never commit without a view change (its requests
// already executed, so no request timer runs) may wait for ever, and need
// not execute: nothing in it was acknowledged (an acknowledgement needs
// f+1 executions, hence a commit at 2f+1 replicas whose COMMITs are
// durable and retransmitted).
func (s *Sim) drain() {
	w := s.w
	deadline := w.now + DrainBound
	for n := 0; w.Step(deadline); n++ {
		if n%64 == 0 && !s.g.Unexecuted() && s.settled() {
			return
		}
		if len(w.violations) > 0 {
			return
		}
	}
	// Executing what drained may have put some replicas ahead of others:
	// let them catch up again (G3).
	s.settle()
}

func (s *Sim) settled() bool {
	var top bft.SeqNum
	for _, r := range s.g.Instances() {
		if r.up && r.correct() {
			if e := r.Node().LastExecuted(); e > top {
				top = e
			}
		}
	}
	for _, r := range s.g.Instances() {
		if r.correct() && (!r.up || r.Node().LastExecuted() < top || r.busy) {
			return false
		}
	}
	return true
}

// checkDurability: nothing a client saw accepted is lost, and nothing
// executed twice, in the store of any correct replica — whatever power
// cuts hit (X4-style, DESIGN.md §8): every accepted append's token sits at
// the position its returned length names, and appears once.
func (s *Sim) checkDurability() {
	if s.opts.App == "noop" {
		return
	}
	for _, r := range s.g.Instances() {
		if !r.correct() || !r.up {
			continue
		}
		logs := map[string][][]byte{}
		for i := 0; i < 4; i++ {
			key := fmt.Sprintf("k%d", i)
			entries, err := host.ReadLog(r.engine, key)
			if err != nil {
				s.w.Violation("durability: %s cannot read log %s: %v", r.name(), key, err)
				return
			}
			logs[key] = entries
			seen := map[string]bool{}
			for _, e := range entries {
				if seen[string(e)] {
					s.w.Violation("exactly-once: %s holds token %q twice in log %s", r.name(), e, key)
					return
				}
				seen[string(e)] = true
			}
		}
		for _, c := range s.clients {
			for _, a := range c.acks {
				log := logs[a.key]
				if a.length == 0 || a.length > uint64(len(log)) || string(log[a.length-1]) != a.token {
					s.w.Violation("durability: %s lost client %d's accepted append %q at position %d of %s (log has %d entries)",
						r.name(), c.idx, a.token, a.length, a.key, len(log))
					return
				}
			}
		}
	}
}

func (s *Sim) collect() {
	s.core = s.g.coreStats
	for _, r := range s.g.Instances() {
		if r.up {
			st := r.Node().Stats()
			s.core = addStats(s.core, st)
		}
	}
	s.cov.ViewChanges += s.core.ViewChanges
	s.cov.NewViews += s.core.NewViews
	s.cov.NewViewsAboveExecuted += s.core.NewViewsAboveExecuted
	s.cov.StateTransfers += s.core.StateTransfers
}

// Result summarizes the run.
func (s *Sim) Result() Result {
	w := s.w
	res := Result{Seed: s.opts.Seed, Violations: w.violations, SimTime: w.now, Events: w.order, AfterHeal: s.afterHeal,
		Core: s.core, Coverage: s.cov}
	var lat []int64
	for _, c := range s.clients {
		res.Issued += c.issued
		res.Accepted += c.accepted
		lat = append(lat, c.latencies...)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50 := int64(0)
	if len(lat) > 0 {
		p50 = lat[len(lat)/2]
	}
	var faults []string
	for i, b := range s.opts.Faulty {
		faults = append(faults, fmt.Sprintf("r%d:%s", i, b.Name()))
	}
	if s.opts.Twins >= 0 {
		faults = append(faults, fmt.Sprintf("r%d:twins", s.opts.Twins))
	}
	sort.Strings(faults)
	res.Summary = fmt.Sprintf("seed %d: f=%d faults=%v crashing=%v powercut=%v loss=%.2f partitions=%v heal=%dms: %d/%d accepted, p50 %dms, %d lost, %d bad snapshots, sim %dms",
		s.opts.Seed, s.opts.F, faults, s.opts.Crashing, s.opts.PowerCut, s.opts.Net.LossRate, s.opts.Partitions, s.opts.HealAt/1000,
		res.Accepted, res.Issued, p50/1000, w.lost, w.badSnapshots, w.now/1000)
	return res
}

// Describe summarizes the replicas (for failing runs).
func (s *Sim) Describe() string { return strings.TrimSpace(s.g.Describe()) }

func addStats(a, b bft.Stats) bft.Stats {
	for i := range a.Dropped {
		a.Dropped[i] += b.Dropped[i]
	}
	a.Equivocations += b.Equivocations
	a.RequestTimeouts += b.RequestTimeouts
	a.ViewChanges += b.ViewChanges
	a.NewViews += b.NewViews
	a.BatchesProposed += b.BatchesProposed
	a.RequestsProposed += b.RequestsProposed
	a.BatchesExecuted += b.BatchesExecuted
	a.RequestsExecuted += b.RequestsExecuted
	a.StableCheckpoints += b.StableCheckpoints
	a.StateTransfers += b.StateTransfers
	a.Fetches += b.Fetches
	a.CommittedFetched += b.CommittedFetched
	a.NewViewsAboveExecuted += b.NewViewsAboveExecuted
	return a
}
