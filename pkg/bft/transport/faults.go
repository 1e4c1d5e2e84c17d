package transport

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Verdict is an Interceptor's decision about one outgoing message.
type Verdict struct {
	// Drop discards the message; Partition says why (counted as
	// "partition" rather than "fault").
	Drop      bool
	Partition bool
	// Delay holds the message back before it is written. A link stays FIFO:
	// a message never overtakes one queued before it, so a delayed message
	// also delays those behind it by whatever remains of its delay.
	Delay time.Duration
}

// Interceptor decides the fate of each message Peers is asked to send, at the
// moment Send or Broadcast is called. It is how tests inject loss, delay and
// partitions, since the test kernels have no netem. Implementations must be
// safe for concurrent use and fast: they run on the caller's goroutine.
type Interceptor interface {
	Intercept(to uint32, kind Kind) Verdict
}

// LinkFaults describe the faults of the link to one peer.
type LinkFaults struct {
	// Delay is added to every message; Jitter adds a further uniform delay
	// in [0, Jitter).
	Delay, Jitter time.Duration
	// DropRate is the probability of dropping a message, in [0, 1].
	DropRate float64
	// Cut drops every message (a partition of this link). It also makes
	// FetchState to that peer fail with ErrLinkCut.
	Cut bool
}

// Faults is an Interceptor whose faults are set per link at runtime. Its
// decisions are deterministic given the seed and the sequence of messages on
// each link: every link draws from its own random source, so traffic on one
// link does not change the fate of messages on another.
//
// A Faults cuts only the direction it is attached to: to partition replicas
// a and b, cut b in a's Faults and a in b's.
type Faults struct {
	mu    sync.Mutex
	seed  uint64
	def   LinkFaults
	links map[uint32]*faultLink
}

type faultLink struct {
	set bool // has its own LinkFaults rather than the default
	lf  LinkFaults
	rng *rand.Rand
}

// NewFaults returns a Faults without faults whose random choices derive
// from seed.
func NewFaults(seed uint64) *Faults {
	return &Faults{seed: seed, links: make(map[uint32]*faultLink)}
}

func (f *Faults) link(to uint32) *faultLink {
	l := f.links[to]
	if l == nil {
		l = &faultLink{rng: rand.New(rand.NewPCG(f.seed, uint64(to)+0x9e3779b97f4a7c15))}
		f.links[to] = l
	}
	return l
}

// Set sets the faults of the link to peer to.
func (f *Faults) Set(to uint32, lf LinkFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.link(to)
	l.set, l.lf = true, lf
}

// SetDefault sets the faults of every link that has none of its own.
func (f *Faults) SetDefault(lf LinkFaults) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = lf
}

// Cut cuts the links to the given peers, keeping their other faults.
func (f *Faults) Cut(to ...uint32) { f.setCut(true, to) }

// Heal undoes Cut for the given peers.
func (f *Faults) Heal(to ...uint32) { f.setCut(false, to) }

func (f *Faults) setCut(cut bool, to []uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range to {
		l := f.link(id)
		if !l.set {
			l.set, l.lf = true, f.def
		}
		l.lf.Cut = cut
	}
}

// Reset removes every fault (the random sources keep their position).
func (f *Faults) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def = LinkFaults{}
	for _, l := range f.links {
		l.set, l.lf = false, LinkFaults{}
	}
}

// Link returns the faults in force on the link to peer to.
func (f *Faults) Link(to uint32) LinkFaults {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.links[to]; l != nil && l.set {
		return l.lf
	}
	return f.def
}

// IsCut reports whether the link to peer to is cut.
func (f *Faults) IsCut(to uint32) bool { return f.Link(to).Cut }

// Intercept implements Interceptor.
func (f *Faults) Intercept(to uint32, _ Kind) Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.link(to)
	lf := f.def
	if l.set {
		lf = l.lf
	}
	switch {
	case lf.Cut:
		return Verdict{Drop: true, Partition: true}
	case lf.DropRate > 0 && l.rng.Float64() < lf.DropRate:
		return Verdict{Drop: true}
	}
	d := lf.Delay
	if lf.Jitter > 0 {
		d += time.Duration(l.rng.Int64N(int64(lf.Jitter)))
	}
	return Verdict{Delay: d}
}

// linkCutter is implemented by interceptors (Faults) that can cut a link;
// FetchState consults it.
type linkCutter interface {
	IsCut(to uint32) bool
}
