package bfttest

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Options describe one simulation run.
type Options struct {
	Seed    uint64
	F       int
	Ed25519 bool

	Clients           int
	RequestsPerClient int
	Outstanding       int // per client, at most the client window
	PayloadSize       int
	ClientTimeout     int64 // microseconds

	Net    Network
	HealAt int64 // microseconds: the network is reliable and partitions end from here
	// Partitions: random partitions before HealAt.
	Partitions bool

	// Faulty maps replica index to its behaviour (at most F of them).
	Faulty map[int]Behavior
	// ByzantineClients is how many of the clients misbehave (their own
	// requests still count for liveness: each has one timestamp that
	// completes with one of its payloads).
	ByzantineClients int
	// TransferDelay is the extra time a state transfer takes, at most.
	TransferDelay int64

	TickEvery     int64 // microseconds per node tick
	LivenessBound int64 // microseconds after HealAt by which every request must complete
	// Configure adjusts each replica's core configuration.
	Configure func(*bft.Config)

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
	// Core counters summed over the replicas (at the end of the run; a
	// replica that restarted counts from its restart).
	Core bft.Stats
	// AfterHeal is how long after the heal the last request completed.
	AfterHeal int64
}

// Failed reports whether a checker found a violation.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// Sim is one running simulation.
type Sim struct {
	opts    Options
	rng     *rand.Rand
	now     int64
	order   uint64
	events  eventQueue
	net     Network
	keys    *Keys
	checker *bft.Checker
	dom     *bft.Domain

	window      uint64 // the client window W
	manual      *manualNet
	replicas    []*replica
	clients     []*client
	clientIndex map[bft.ClientID]int

	// Checker state.
	issued     map[reqKey][][]byte
	issuedList []*bftpb.Request // signed requests, for Byzantine replicas to reuse
	agreed     map[bft.SeqNum]bft.Digest
	cpDigests  map[bft.SeqNum][]byte
	results    map[reqKey][]byte
	violations []string
	latencies  []int64
	stats      struct {
		lost, rejected, badReplies, badSnapshots, accepted int
	}
}

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
	c.RequestTimeout = 50 // 500 ms at 10 ms ticks
	c.ViewChangeTimeout = 50
	c.MaxViewChangeTimeout = 800
	c.StatusInterval = 10
	c.MaxFetchBatches = 8
	return c
}

// Run runs one simulation to completion and checks it.
func Run(opts Options) Result {
	s := newSim(opts)
	s.run()
	return s.result()
}

func newSim(opts Options) *Sim {
	if opts.TickEvery == 0 {
		opts.TickEvery = 10_000
	}
	if opts.ClientTimeout == 0 {
		opts.ClientTimeout = 1_000_000
	}
	if opts.LivenessBound == 0 {
		opts.LivenessBound = 120_000_000
	}
	if opts.Outstanding == 0 {
		opts.Outstanding = 1
	}
	n := 3*opts.F + 1
	s := &Sim{
		opts:        opts,
		rng:         rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		net:         opts.Net,
		keys:        NewKeys(n, opts.Ed25519),
		clientIndex: make(map[bft.ClientID]int),
		issued:      make(map[reqKey][][]byte),
		agreed:      make(map[bft.SeqNum]bft.Digest),
		cpDigests:   make(map[bft.SeqNum][]byte),
		results:     make(map[reqKey][]byte),
	}
	base := SimConfig(0, opts.F)
	if opts.Configure != nil {
		opts.Configure(&base)
	}
	chk, err := bft.NewChecker(bft.CheckerConfigFrom(base, s.keys, nil))
	if err != nil {
		panic(err)
	}
	s.checker = chk
	s.window = base.ClientWindow
	s.dom = chk.Domain()
	for i := 0; i < n; i++ {
		cfg := SimConfig(i, opts.F)
		if opts.Configure != nil {
			opts.Configure(&cfg)
		}
		cfg.ID = bft.ReplicaID(i)
		cfg.Signer = s.keys.ReplicaSigner(i)
		if opts.Trace != nil {
			cfg.Logger = traceLogger{s}
		}
		r := &replica{sim: s, id: i, cfg: cfg, hs: nil, records: make(map[string]*bftpb.LogRecord), app: NewApp(), snapshots: make(map[bft.SeqNum]*App)}
		if b := opts.Faulty[i]; b != nil {
			r.behavior = b
		}
		s.replicas = append(s.replicas, r)
	}
	for i := 0; i < opts.Clients; i++ {
		id := s.keys.NewClient(i)
		s.clientIndex[id] = i
		c := &client{sim: s, idx: i, id: id, signer: s.keys.ClientSigner(id), total: opts.RequestsPerClient, byzantine: i < opts.ByzantineClients,
			nextTs: 1 + uint64(s.rng.IntN(1000))*1000, outstanding: make(map[uint64]*pendingCall)}
		s.clients = append(s.clients, c)
	}
	return s
}

func (s *Sim) run() {
	for _, r := range s.replicas {
		r.start()
		if r.behavior != nil {
			r.behavior.Init(r)
		}
		r := r
		var tick func()
		tick = func() {
			r.tick()
			s.after(s.opts.TickEvery, tick)
		}
		s.after(s.opts.TickEvery+int64(r.id), tick)
	}
	if s.opts.Partitions {
		s.schedulePartitions()
	}
	for _, c := range s.clients {
		c := c
		s.after(int64(s.rng.IntN(50_000)), c.issue)
	}
	deadline := s.opts.HealAt + s.opts.LivenessBound
	for s.events.Len() > 0 && len(s.violations) == 0 {
		e := heap.Pop(&s.events).(*event)
		s.now = e.at
		if s.now > deadline {
			break
		}
		e.run()
		if s.allDone() {
			break
		}
	}
	if len(s.violations) == 0 && !s.allDone() {
		var missing []string
		for _, c := range s.clients {
			if c.doneCount < c.total {
				missing = append(missing, fmt.Sprintf("client %d: %d/%d", c.idx, c.doneCount, c.total))
			}
		}
		s.violation("liveness: requests incomplete %v after the network healed at %dms: %s", missing, s.opts.HealAt/1000, s.describe())
	}
}

func (s *Sim) allDone() bool {
	for _, c := range s.clients {
		if c.doneCount < c.total {
			return false
		}
	}
	return true
}

// schedulePartitions cuts the group into random sides a few times before
// the network heals.
func (s *Sim) schedulePartitions() {
	t := int64(0)
	for t < s.opts.HealAt {
		start := t + s.rng.Int64N(s.opts.HealAt/3+1)
		end := start + 200_000 + s.rng.Int64N(2_000_000)
		if start >= s.opts.HealAt {
			break
		}
		if end > s.opts.HealAt {
			end = s.opts.HealAt
		}
		side := make([]bool, len(s.replicas))
		for i := range side {
			side[i] = s.rng.IntN(2) == 0
		}
		s.at(start, func() { s.partition(side) })
		s.at(end, s.healPartition)
		t = end
	}
}

func (s *Sim) scheduleRestart(r *replica) {
	down := 100_000 + s.rng.Int64N(3_000_000)
	if !s.chaotic() {
		down = 100_000
	}
	s.after(down, func() {
		if !r.up {
			r.start()
		}
	})
}

func (s *Sim) describe() string {
	var b strings.Builder
	for _, r := range s.replicas {
		if !r.up {
			fmt.Fprintf(&b, "r%d down; ", r.id)
			continue
		}
		v, vc := r.node.View()
		fmt.Fprintf(&b, "r%d view %d changing=%v h=%d exec=%d; ", r.id, v, vc, r.node.LowWatermark(), r.node.LastExecuted())
	}
	return b.String()
}

func (s *Sim) result() Result {
	res := Result{Seed: s.opts.Seed, Violations: s.violations, SimTime: s.now, Events: s.order, AfterHeal: s.now - s.opts.HealAt}
	for _, r := range s.replicas {
		if r.up {
			res.Core = addStats(res.Core, r.node.Stats())
		}
	}
	for _, c := range s.clients {
		res.Issued += c.issued
		res.Accepted += c.doneCount
	}
	sort.Slice(s.latencies, func(i, j int) bool { return s.latencies[i] < s.latencies[j] })
	p50 := int64(0)
	if len(s.latencies) > 0 {
		p50 = s.latencies[len(s.latencies)/2]
	}
	var faults []string
	for i, b := range s.opts.Faulty {
		faults = append(faults, fmt.Sprintf("r%d:%s", i, b.Name()))
	}
	sort.Strings(faults)
	res.Summary = fmt.Sprintf("seed %d: f=%d faults=%v loss=%.2f partitions=%v heal=%dms: %d/%d accepted, p50 %dms, %d lost, %d rejected, %d bad replies, %d bad snapshots, sim %dms",
		s.opts.Seed, s.opts.F, faults, s.opts.Net.LossRate, s.opts.Partitions, s.opts.HealAt/1000, res.Accepted, res.Issued,
		p50/1000, s.stats.lost, s.stats.rejected, s.stats.badReplies, s.stats.badSnapshots, s.now/1000)
	return res
}

func (s *Sim) tracef(format string, args ...any) {
	if s.opts.Trace != nil {
		fmt.Fprintf(s.opts.Trace, "%8.3fs ", float64(s.now)/1e6)
		fmt.Fprintf(s.opts.Trace, format, args...)
		fmt.Fprintln(s.opts.Trace)
	}
}

type traceLogger struct{ s *Sim }

func (l traceLogger) Debugf(format string, args ...any) { l.s.tracef(format, args...) }
func (l traceLogger) Warnf(format string, args ...any)  { l.s.tracef("WARN "+format, args...) }

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
	return a
}
