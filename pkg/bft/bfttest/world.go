package bfttest

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
)

// World is one simulated world: a seeded random source, a simulated clock
// (microseconds), an event queue and a network that delays, reorders,
// duplicates, loses and partitions messages until HealAt, then only delays
// them. It holds any number of groups of replicas and any number of clients,
// so the transaction simulator builds on the same world as the PBFT one.
//
// Everything happens on the caller's goroutine, one event at a time, in the
// order of (time, scheduling order): a seed determines the whole run.
type World struct {
	rng    *rand.Rand
	now    int64
	order  uint64
	events eventQueue
	net    NetConfig
	healAt int64
	trace  io.Writer
	// execLag bounds how long an executor job may take.
	execLag int64

	groups []*Group
	// cut[g][i][j] cuts the link from replica i to replica j of group g
	// until HealAt (clients are never cut).
	cut [][][]bool
	// manual, if set, queues every message for a scenario script to
	// deliver by hand instead of scheduling it.
	manual *manualNet

	violations []string
	// Stats of the network and the adversary.
	lost, badReplies, badSnapshots int
}

// NetConfig models the links.
type NetConfig struct {
	MinDelay, MaxDelay int64 // microseconds
	LossRate           float64
	DupRate            float64
}

// NewWorld returns an empty world.
func NewWorld(seed uint64, net NetConfig, healAt int64, trace io.Writer) *World {
	return &World{
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		net:    net,
		healAt: healAt,
		trace:  trace,
	}
}

// Now returns the simulated time in microseconds.
func (w *World) Now() int64 { return w.now }

// Rand returns the world's seeded random source.
func (w *World) Rand() *rand.Rand { return w.rng }

// Chaotic reports whether the network still misbehaves (before HealAt).
func (w *World) Chaotic() bool { return w.now < w.healAt }

// HealAt returns the time the network heals.
func (w *World) HealAt() int64 { return w.healAt }

// Groups returns the world's groups.
func (w *World) Groups() []*Group { return w.groups }

// At schedules f at simulated time t (not before now).
func (w *World) At(t int64, f func()) {
	if t < w.now {
		t = w.now
	}
	w.order++
	heap.Push(&w.events, &event{at: t, order: w.order, run: f})
}

// After schedules f d microseconds from now.
func (w *World) After(d int64, f func()) { w.At(w.now+d, f) }

// Step runs the next event; it returns false when none is left or the
// next one is after deadline.
func (w *World) Step(deadline int64) bool {
	if w.events.Len() == 0 || w.events[0].at > deadline {
		return false
	}
	e := heap.Pop(&w.events).(*event)
	w.now = e.at
	e.run()
	return true
}

// RunDue runs every event due at or before now (scenario scripts).
func (w *World) RunDue() {
	for w.events.Len() > 0 && w.events[0].at <= w.now {
		w.Step(w.now)
	}
}

// Delay returns a random link delay.
func (w *World) Delay() int64 {
	n := w.net
	if n.MaxDelay <= n.MinDelay {
		return n.MinDelay
	}
	return n.MinDelay + w.rng.Int64N(n.MaxDelay-n.MinDelay+1)
}

// copies returns how many copies of a message the network delivers: 0
// (lost), 1, or 2 (duplicated).
func (w *World) copies() int {
	if !w.Chaotic() {
		return 1
	}
	if w.rng.Float64() < w.net.LossRate {
		w.lost++
		return 0
	}
	if w.rng.Float64() < w.net.DupRate {
		return 2
	}
	return 1
}

// LinkCut reports whether the link from replica from to replica to of
// group g is cut now.
func (w *World) LinkCut(g, from, to int) bool {
	return w.Chaotic() && w.cut != nil && w.cut[g] != nil && w.cut[g][from][to]
}

// deliver schedules fn once per copy the network delivers, each after its
// own delay (which reorders).
func (w *World) deliver(fn func()) {
	for c := w.copies(); c > 0; c-- {
		w.After(w.Delay(), fn)
	}
}

// Partition cuts group g's replicas into two sides until Heal or HealAt.
func (w *World) Partition(g int, side []bool) {
	if w.cut == nil {
		w.cut = make([][][]bool, len(w.groups))
	}
	n := len(side)
	cut := make([][]bool, n)
	for i := range cut {
		cut[i] = make([]bool, n)
		for j := range cut[i] {
			cut[i][j] = side[i] != side[j]
		}
	}
	w.cut[g] = cut
	w.Tracef("g%d partition %v", g, side)
}

// Heal removes every partition.
func (w *World) Heal() {
	w.cut = nil
	w.Tracef("partitions healed")
}

// SchedulePartitions cuts group g into random sides a few times before the
// network heals.
func (w *World) SchedulePartitions(g, n int) {
	t := int64(0)
	for t < w.healAt {
		start := t + w.rng.Int64N(w.healAt/3+1)
		end := start + 200_000 + w.rng.Int64N(2_000_000)
		if start >= w.healAt {
			break
		}
		if end > w.healAt {
			end = w.healAt
		}
		side := make([]bool, n)
		for i := range side {
			side[i] = w.rng.IntN(2) == 0
		}
		w.At(start, func() { w.Partition(g, side) })
		w.At(end, w.Heal)
		t = end
	}
}

// Violation records what a checker found.
func (w *World) Violation(format string, args ...any) {
	msg := fmt.Sprintf("t=%dms: ", w.now/1000) + fmt.Sprintf(format, args...)
	w.Tracef("VIOLATION %s", msg)
	if len(w.violations) < 20 {
		w.violations = append(w.violations, msg)
	}
}

// Violations returns what the checkers found.
func (w *World) Violations() []string { return w.violations }

// Tracef writes a line to the trace, if any.
func (w *World) Tracef(format string, args ...any) {
	if w.trace != nil {
		fmt.Fprintf(w.trace, "%8.3fs ", float64(w.now)/1e6)
		fmt.Fprintf(w.trace, format, args...)
		fmt.Fprintln(w.trace)
	}
}

type traceLogger struct{ w *World }

func (l traceLogger) Debugf(format string, args ...any) { l.w.Tracef(format, args...) }
func (l traceLogger) Warnf(format string, args ...any)  { l.w.Tracef("WARN "+format, args...) }

// Close stops every replica of the world and releases its store (pebble
// keeps goroutines and caches per open store: a run must not leak them).
func (w *World) Close() {
	for _, g := range w.groups {
		for _, r := range g.Instances() {
			r.shutdown()
		}
	}
}

// SetExecLag bounds how long an executor job may take (microseconds).
func (w *World) SetExecLag(d int64) { w.execLag = d }
