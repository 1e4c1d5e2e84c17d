package txntest

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/txntest/elle"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Options describe one run of the transaction simulator.
type Options struct {
	Seed   uint64
	Groups int
	F      int
	// Workload is "bank" or "append".
	Workload string
	// Keys is the number of accounts or list keys.
	Keys int
	// Clients correct clients run TxnsPerClient transactions each, Callers
	// at a time.
	Clients, TxnsPerClient, Callers int
	// MultiGroupPct is the share of transfers whose two accounts are in
	// different groups.
	MultiGroupPct int
	// ByzantineClients act ByzantineActs times each, drawn from ByzKinds.
	ByzantineClients, ByzantineActs int
	// Faulty maps a group to its Byzantine replicas (at most F each).
	Faulty map[int]map[int]bfttest.Behavior
	// Crashing lists correct replicas (group, slot) that crash and restart.
	Crashing [][2]int
	Crash    bfttest.CrashPlan
	PowerCut bool

	Net        bfttest.NetConfig
	HealAt     int64
	Partitions bool
	ExecLag    int64
	// LivenessBound: every correct client's transactions end within this
	// long after the heal (microseconds).
	LivenessBound int64
	Trace         io.Writer
}

// Result is what a run found.
type Result struct {
	Seed       uint64
	Violations []string
	// Transactions the correct clients ran, committed, and checked by X1.
	Txns, Committed, Checked int
	Anomalies                int
	Recoveries               int
	Abandoned                int
	SimTime                  int64
	Summary                  string
	Coverage                 bfttest.Coverage
}

// Failed reports whether a checker found a violation.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// Sim is one running transaction simulation.
type Sim struct {
	opts      Options
	c         *Cluster
	w         *bfttest.World
	rec       *history.Recorder
	keys      keyspace
	clients   []*simClient
	byz       []*ByzClient
	tag       int64
	transfers int
	byzEnd    int64 // the time of the last Byzantine act
	cov       bfttest.Coverage
	res       Result
}

type simClient struct {
	conns *Conns
	core  *coord.Core
	work  *workload
	ready bool
}

func (s *Sim) nextTag() int64 { s.tag++; return s.tag }

// observer counts what the coordinators report (coord.Observer).
type observer Sim

func (o *observer) trace(format string, args ...any) {
	if o.opts.Trace != nil {
		fmt.Fprintf(o.opts.Trace, "%8.3fs %s\n", float64(o.w.Now())/1e6, fmt.Sprintf(format, args...))
	}
}

func (o *observer) Sent(id txn.TxnID, t *txn.Txn) {
	if o.opts.Trace == nil {
		return
	}
	var ops []string
	for _, op := range t.Ops {
		ops = append(ops, fmt.Sprintf("%v %q", op.Kind, op.Key))
	}
	o.trace("txn %x sent by %x nonce %d groups %v: %s", id[:4], t.Owner, t.Nonce, t.GroupIDs(), strings.Join(ops, ", "))
}
func (o *observer) Decided(id txn.TxnID, d txn.Decision, recovered bool) {
	o.trace("txn %x decided %v (recovered %v)", id[:4], d, recovered)
	if recovered {
		o.res.Recoveries++
	}
}
func (o *observer) Finished(id txn.TxnID, nonce uint64) {
	o.trace("txn %x finished (nonce %d)", id[:4], nonce)
}

// logger is a correct client's log (its coordinator's anomalies) on the
// trace, if there is one.
func (s *Sim) logger(idx int) *slog.Logger {
	if s.opts.Trace == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(s.opts.Trace, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.String("sim", fmt.Sprintf("%.3fs", float64(s.w.Now())/1e6))
			}
			return a
		}})).With("client", idx)
}

// Run runs one simulation and checks it.
func Run(opts Options) Result {
	s, err := NewSim(opts)
	if err != nil {
		return Result{Seed: opts.Seed, Violations: []string{"setup: " + err.Error()}}
	}
	defer s.w.Close()
	s.run()
	return s.result()
}

// NewSim builds a simulation.
func NewSim(opts Options) (*Sim, error) {
	if opts.Groups == 0 {
		opts.Groups = 2
	}
	if opts.F == 0 {
		opts.F = 1
	}
	if opts.Keys == 0 {
		opts.Keys = 8
	}
	if opts.Callers == 0 {
		opts.Callers = 1
	}
	if opts.Workload == "" {
		opts.Workload = "bank"
	}
	if opts.LivenessBound == 0 {
		opts.LivenessBound = 120_000_000
	}
	s := &Sim{opts: opts}
	c, err := NewCluster(ClusterConfig{Seed: opts.Seed, Groups: opts.Groups, F: opts.F, Net: opts.Net, HealAt: opts.HealAt,
		ExecLag: opts.ExecLag, Faulty: opts.Faulty, Trace: opts.Trace, Cov: &s.cov})
	if err != nil {
		return nil, err
	}
	s.c, s.w = c, c.W
	s.rec = history.NewRecorder(s.w.Now)
	for i := 0; i < opts.Keys; i++ {
		if opts.Workload == "bank" {
			s.keys.keys = append(s.keys.keys, accountKey(s, i))
		} else {
			s.keys.keys = append(s.keys.keys, GroupKey(i%opts.Groups, opts.Groups, fmt.Sprintf("list-%03d", i)))
		}
	}
	s.keys.initial = 100
	for _, gs := range opts.Crashing {
		c.Groups[gs[0]].Replicas[gs[1]].SetCrashPlan(opts.Crash)
	}
	return s, nil
}

// connect makes a correct client: its group clients and its coordinator.
func (s *Sim) connect(idx int) (*simClient, error) {
	conns := s.c.Connect(idx, 4, 500_000)
	core, err := coord.NewCore(coord.Config{Owner: conns.ID(), Keys: s.c.Keys, Map: s.c.Map, Limits: s.c.Limits,
		Seed: s.opts.Seed*1000 + uint64(idx), Observer: (*observer)(s), Logger: s.logger(idx)}, conns)
	if err != nil {
		return nil, err
	}
	return &simClient{conns: conns, core: core}, nil
}

func (s *Sim) run() {
	w, o := s.w, s.opts
	s.c.Start(10_000)
	if o.PowerCut {
		w.SchedulePowerCut()
	}
	if o.Partitions {
		for _, g := range s.c.Groups {
			w.SchedulePartitions(g.ID, g.N)
		}
	}
	for i := 0; i < o.Clients; i++ {
		sc, err := s.connect(i)
		if err != nil {
			w.Violation("setup: %v", err)
			return
		}
		sc.work = &workload{s: s, idx: i, core: sc.core, total: o.TxnsPerClient, left: o.TxnsPerClient}
		s.clients = append(s.clients, sc)
	}
	for i := 0; i < o.ByzantineClients; i++ {
		b := NewByzClient(s.c, 1000+i, func() [][]byte { return s.keys.keys })
		s.byz = append(s.byz, b)
		for k := 0; k < o.ByzantineActs; k++ {
			at := w.Rand().Int64N(o.HealAt + 2_000_000)
			if at > s.byzEnd {
				s.byzEnd = at
			}
			w.At(at, func() { b.Act("") })
		}
	}
	// Every client process ticks its group clients (retransmission, C4).
	var tick func()
	tick = func() {
		for _, sc := range s.clients {
			sc.conns.Tick()
		}
		for _, b := range s.byz {
			b.conns.Tick()
		}
		w.After(10_000, tick)
	}
	w.After(10_000, tick)

	// Set-up (the bank's accounts), then the workload.
	s.setup(func() {
		for _, sc := range s.clients {
			sc := sc
			sc.core.Startup(func(err error) {
				if err != nil {
					w.Violation("client start-up: %v", err)
					return
				}
				sc.ready = true
				for k := 0; k < o.Callers; k++ {
					w.After(w.Rand().Int64N(50_000), sc.work.start)
				}
			})
		}
	})
	deadline := o.HealAt + o.LivenessBound
	// The sweep comes after the workload and after the last Byzantine act
	// (and the second its calls take to land).
	for n := 0; len(w.Violations()) == 0 && w.Step(deadline); n++ {
		if n%64 == 0 && s.workDone() && w.Now() > s.byzEnd+1_000_000 && s.byzIdle() {
			break
		}
	}
	// A Byzantine client's calls may still be retransmitted (to a group
	// that was down, with the client's doubling timeout) and land after
	// the sweep has passed the keys they lock: stop them now. Calls
	// answered are all that can have executed.
	for _, b := range s.byz {
		b.Stop()
	}
	if len(w.Violations()) > 0 {
		return
	}
	if !s.workDone() {
		var left []string
		for i, sc := range s.clients {
			if sc.work.done < sc.work.total {
				left = append(left, fmt.Sprintf("client %d: %d/%d (%+v)", i, sc.work.done, sc.work.total, sc.core.Stats()))
			}
		}
		w.Violation("liveness: transactions incomplete %v at %dms (heal at %dms)", left, w.Now()/1000, o.HealAt/1000)
		return
	}
	s.sweep()
}

// setup inserts the bank's accounts (one transaction each, by client 0's
// coordinator) and records them as writes in the history.
func (s *Sim) setup(then func()) {
	if s.opts.Workload != "bank" || len(s.clients) == 0 {
		then()
		return
	}
	sc := s.clients[0]
	left := len(s.keys.keys)
	sc.core.Startup(func(err error) {
		if err != nil {
			s.w.Violation("setup start-up: %v", err)
			return
		}
		for _, k := range s.keys.keys {
			k := k
			tag := s.nextTag()
			ops := []txn.Op{{Kind: txn.OpInsert, Key: k, Value: encodeBalance(s.keys.initial, tag)}}
			h := s.rec.Invoke(-1, history.Write(string(k), tag))
			var try func()
			try = func() {
				sc.core.Start(ops, coord.Options{}, func(_ *coord.Result, err error) {
					if err != nil {
						// Before the heal a set-up insert may time out or abort
						// on a Byzantine client's pending write: retry it; it
						// inserts once (insert needs the key absent).
						var ab *coord.AbortedError
						if errors.As(err, &ab) && errors.Is(err, txn.ErrKeyExists) {
							s.complete(h, history.Info, nil)
							left--
							if left == 0 {
								then()
							}
							return
						}
						s.w.After(50_000, try)
						return
					}
					s.complete(h, history.OK, []history.MicroOp{history.Write(string(k), tag)})
					left--
					if left == 0 {
						then()
					}
				})
			}
			try()
		}
	})
}

// byzIdle reports whether every Byzantine client has its answers: no call
// outstanding or queued at any group.
func (s *Sim) byzIdle() bool {
	for _, b := range s.byz {
		if !b.Idle() {
			return false
		}
	}
	return true
}

func (s *Sim) workDone() bool {
	for _, sc := range s.clients {
		if sc.work.done < sc.work.total {
			return false
		}
	}
	return true
}

// sweep reads every key in one read-only transaction, after the workload:
// its reads conflict with any write a Byzantine client left pending, so the
// sweeper recovers them all (K4, X3), and the final read goes into the
// history, so a committed write the stores lost shows as an anomaly (X4).
func (s *Sim) sweep() {
	w := s.w
	sc, err := s.connect(500)
	if err != nil {
		w.Violation("sweeper: %v", err)
		return
	}
	s.clients = append(s.clients, sc)
	var ops []txn.Op
	var mops []history.MicroOp
	for _, k := range s.keys.keys {
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: k})
		mops = append(mops, history.Read(string(k)))
	}
	byz := ByzKeys(s.c)
	var final *coord.Result
	attempts := 0
	// retry runs a step until it commits (conflicts recover what blocks it).
	retry := func(step func(next func()), next func()) {
		var try func()
		try = func() {
			attempts++
			if attempts > 200 {
				return
			}
			step(next)
		}
		try()
	}
	// 1. Touch the Byzantine keys: read them, then write each (write or
	// insert, guarded), so every transaction a Byzantine client left
	// pending or holding locks there conflicts with the sweeper and is
	// recovered (K4).
	var touchRead, touchWrite, finalRead func(next func())
	var touched *coord.Result
	touchRead = func(next func()) {
		var rops []txn.Op
		for _, k := range byz {
			rops = append(rops, txn.Op{Kind: txn.OpRead, Key: k})
		}
		sc.core.Start(rops, coord.Options{MaxRetries: 20}, func(res *coord.Result, err error) {
			if err != nil {
				w.After(100_000, func() { retry(touchRead, next) })
				return
			}
			touched = res
			next()
		})
	}
	touchWrite = func(next func()) {
		var wops []txn.Op
		for i, k := range byz {
			r := touched.Ops[i]
			if r.Present {
				wops = append(wops, txn.Op{Kind: txn.OpCmp, Key: k, Value: r.Value}, txn.Op{Kind: txn.OpWrite, Key: k, Value: []byte("swept")})
			} else {
				wops = append(wops, txn.Op{Kind: txn.OpCmp, Key: k, Absent: true}, txn.Op{Kind: txn.OpInsert, Key: k, Value: []byte("swept")})
			}
		}
		sc.core.Start(wops, coord.Options{MaxRetries: 20}, func(_ *coord.Result, err error) {
			if err != nil {
				// The guard may fail on a write the recovery committed: read again.
				w.After(100_000, func() { retry(touchRead, func() { retry(touchWrite, next) }) })
				return
			}
			next()
		})
	}
	// 2. Write every workload key as it is (cmp and write of the same
	// value, invisible to the history) and try to delete every absent one
	// (it aborts "not found" after taking its locks): a Byzantine client's
	// transaction left pending with only read locks on workload keys
	// conflicts with these writes and is recovered (K4).
	var rewrite func(next func())
	rewrite = func(next func()) {
		sc.core.Start(ops, coord.Options{MaxRetries: 20}, func(res *coord.Result, err error) {
			if err != nil {
				w.After(100_000, func() { retry(rewrite, next) })
				return
			}
			left, again := len(s.keys.keys), false
			for i, k := range s.keys.keys {
				r := res.Ops[i]
				wops := []txn.Op{{Kind: txn.OpDelete, Key: k}}
				if r.Present {
					wops = []txn.Op{{Kind: txn.OpCmp, Key: k, Value: r.Value}, {Kind: txn.OpWrite, Key: k, Value: r.Value}}
				}
				sc.core.Start(wops, coord.Options{MaxRetries: 20}, func(_ *coord.Result, err error) {
					if err != nil {
						(*observer)(s).trace("sweeper: rewrite of %q: %v", k, err)
					}
					if err != nil && !errors.Is(err, txn.ErrKeyNotFound) && !again {
						// Someone wrote it meanwhile (a recovered write), or
						// it still conflicts: a group names one pending
						// transaction per abort (E3), the one delivered
						// first, so a key many abandoned transactions hold
						// takes one recovery per retry and may outlast the
						// coordinator's retries. Again, until it goes through.
						again = true
						w.After(100_000, func() { retry(rewrite, next) })
					}
					if left--; left == 0 && !again {
						next()
					}
				})
			}
		})
	}
	// 3. Read every workload key (recorded): a committed write the stores
	// lost shows in the history as an anomaly (X4).
	finalRead = func(next func()) {
		h := s.rec.Invoke(500, mops...)
		sc.core.Start(ops, coord.Options{MaxRetries: 20}, func(res *coord.Result, err error) {
			if err != nil {
				s.complete(h, outcome(err), nil)
				w.After(100_000, func() { retry(finalRead, next) })
				return
			}
			var obs []history.MicroOp
			for i, k := range s.keys.keys {
				m, ok := s.observe(string(k), res.Ops[i])
				if !ok {
					s.complete(h, history.Info, nil)
					return
				}
				obs = append(obs, m)
			}
			s.complete(h, history.OK, obs)
			final = res
			next()
		})
	}
	try := func() {
		retry(touchRead, func() {
			retry(touchWrite, func() {
				retry(rewrite, func() {
					retry(finalRead, func() {})
				})
			})
		})
	}
	sc.core.Startup(func(err error) {
		if err != nil {
			w.Violation("sweeper start-up: %v", err)
			return
		}
		try()
	})
	deadline := w.Now() + 60_000_000
	for n := 0; w.Step(deadline); n++ {
		if n%64 == 0 && final != nil && s.idle() {
			break
		}
		if len(w.Violations()) > 0 {
			return
		}
	}
	if final == nil {
		w.Violation("liveness: the sweeper's read of every key did not commit in 60s (%d attempts)", attempts)
		return
	}
	if !s.idle() {
		w.Violation("liveness: clients still terminating transactions 60s after the sweep")
		return
	}
	s.settle()
	if len(w.Violations()) > 0 {
		return
	}
	s.drain()
	if len(w.Violations()) > 0 {
		return
	}
	s.check(final)
}

// idle reports whether every correct client has terminated everything.
func (s *Sim) idle() bool {
	for _, sc := range s.clients {
		if !sc.core.Idle() {
			return false
		}
	}
	return true
}

// settle runs on until every correct replica of every group that is up has
// executed as far as the most advanced one of its group.
func (s *Sim) settle() {
	w := s.w
	deadline := w.Now() + 60_000_000
	for n := 0; w.Step(deadline); n++ {
		if n%64 == 0 && s.settled() {
			return
		}
	}
	if !s.settled() {
		var b strings.Builder
		for _, g := range s.c.Groups {
			b.WriteString(g.Describe())
		}
		w.Violation("liveness: correct replicas did not catch up within 60s: %s", b.String())
	}
}

// drain runs on, for at most bfttest.DrainBound of simulated time, while a correct
// replica that is up holds a prepared or committed batch it has not
// executed (bft.Node.Unexecuted), then settles again: after a power cut a
// batch committed before the cut waits for the retransmitted COMMITs (seed
// 881), and its effects (a release, an outcome) must be in the records
// checked. A batch prepared somewhere that can never commit without a view
// change (its requests already executed, so no request timer runs) may
// wait for ever, and need not execute: nothing in it was acknowledged.
// bfttest's Sim.drain is the same.
func (s *Sim) drain() {
	w := s.w
	deadline := w.Now() + bfttest.DrainBound
	for n := 0; w.Step(deadline); n++ {
		if n%64 == 0 && !s.unexecuted() && s.settled() {
			break
		}
		if len(w.Violations()) > 0 {
			return
		}
	}
	s.settle()
}

func (s *Sim) unexecuted() bool {
	for _, g := range s.c.Groups {
		if g.Unexecuted() {
			return true
		}
	}
	return false
}

func (s *Sim) settled() bool {
	for _, g := range s.c.Groups {
		var top bft.SeqNum
		for _, r := range g.Instances() {
			if r.Up() && r.Correct() && r.Node().LastExecuted() > top {
				top = r.Node().LastExecuted()
			}
		}
		for _, r := range g.Instances() {
			if r.Correct() && (!r.Up() || r.Node().LastExecuted() < top || !r.Idle()) {
				return false
			}
		}
	}
	return true
}

// check runs the checkers after a completed run.
func (s *Sim) check(final *coord.Result) {
	w := s.w
	// X2, X3 and agreement over every correct replica's records.
	var views []RecordView
	for _, g := range s.c.Groups {
		for _, r := range g.Instances() {
			if !r.Correct() || !r.Up() {
				continue
			}
			v, err := ReadRecords(bft.GroupID(g.ID), r.ID(), r.Engine())
			if err != nil {
				w.Violation("records of g%dr%d: %v", g.ID, r.ID(), err)
				return
			}
			views = append(views, v)
		}
	}
	for _, v := range CheckRecords(views, true) {
		w.Violation("%s", v)
	}
	// The bank's total, in the sweeper's read and in every correct store.
	if s.opts.Workload == "bank" {
		total := 0
		for i, r := range final.Ops {
			b, _, err := decodeBalance(r.Value)
			if err != nil || !r.Present {
				w.Violation("bank: final read of %s: %q %v", s.keys.keys[i], r.Value, err)
				return
			}
			total += b
		}
		if want := s.keys.initial * len(s.keys.keys); total != want {
			w.Violation("bank: the accounts hold %d after %d transfers, want %d", total, s.transfers, want)
		}
		s.checkStores()
	}
	// X1: strict serializability of the recorded history.
	h := s.rec.History()
	res, err := elle.Check(h, elle.Options{Model: elle.StrictSerializable})
	if err != nil {
		w.Violation("X1: history not checkable: %v", err)
		return
	}
	s.res.Checked = len(h)
	if !res.Valid() {
		s.res.Anomalies = len(res.Anomalies)
		w.Violation("X1: %s", res.String())
	}
}

// checkStores sums the accounts each correct replica stores; replicas of a
// group agree and the groups' sums add up to the total (X4: the stores hold
// what the clients saw committed).
func (s *Sim) checkStores() {
	w := s.w
	total := 0
	for _, g := range s.c.Groups {
		sum := -1
		for _, r := range g.Instances() {
			if !r.Correct() || !r.Up() {
				continue
			}
			got := 0
			for _, k := range s.keys.keys {
				if s.c.Map.KeyGroup(k) != bft.GroupID(g.ID) {
					continue
				}
				v, err := r.Engine().Get(storage.UserData, k)
				if err != nil {
					w.Violation("bank: g%dr%d: %s: %v", g.ID, r.ID(), k, err)
					return
				}
				b, _, err := decodeBalance(v)
				if err != nil {
					w.Violation("bank: g%dr%d: %s: %v", g.ID, r.ID(), k, err)
					return
				}
				got += b
			}
			if sum >= 0 && got != sum {
				w.Violation("bank: replicas of group %d store %d and %d", g.ID, sum, got)
				return
			}
			sum = got
		}
		if sum >= 0 {
			total += sum
		}
	}
	if want := s.keys.initial * len(s.keys.keys); total != want {
		w.Violation("bank: the stores hold %d in all, want %d", total, want)
	}
}

func (s *Sim) result() Result {
	r := s.res
	r.Seed, r.Violations, r.SimTime, r.Coverage = s.opts.Seed, s.w.Violations(), s.w.Now(), s.cov
	for _, sc := range s.clients {
		if sc.work != nil {
			r.Txns += sc.work.done
		}
	}
	for _, b := range s.byz {
		r.Abandoned += b.Abandoned
	}
	r.Committed = s.committed()
	var faults []string
	for g, m := range s.opts.Faulty {
		for i, b := range m {
			faults = append(faults, fmt.Sprintf("g%dr%d:%s", g, i, b.Name()))
		}
	}
	sort.Strings(faults)
	r.Summary = fmt.Sprintf("seed %d: %d groups f=%d %s multi=%d%% clients=%d byz-clients=%d faults=%v crashing=%v powercut=%v heal=%dms: %d txns, %d committed, %d checked, %d recoveries, %d abandoned, sim %dms",
		s.opts.Seed, s.opts.Groups, s.opts.F, s.opts.Workload, s.opts.MultiGroupPct, s.opts.Clients, s.opts.ByzantineClients, faults,
		s.opts.Crashing, s.opts.PowerCut, s.opts.HealAt/1000, r.Txns, r.Committed, r.Checked, r.Recoveries, r.Abandoned, r.SimTime/1000)
	return r
}

func (s *Sim) committed() int {
	n := 0
	for _, op := range s.rec.History() {
		if op.Outcome == history.OK {
			n++
		}
	}
	return n
}
