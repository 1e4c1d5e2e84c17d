package elle

import (
	"fmt"
	"slices"
	"strings"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Cycle search (Elle §4.4): every cycle lies inside one strongly connected
// component of the graph, and in a valid history every component is a
// single transaction, so the search costs nothing there. In each component
// with a cycle, each anomaly class is looked for with a breadth-first
// search from each edge that can start a cycle of that class, over the edge
// kinds the class allows, keeping the shortest cycle found. Before that, the
// components of the subgraph of allowed kinds are computed once: a cycle of
// those kinds lies inside one of them, which prunes start edges and the
// search itself.

// spec describes the cycles of one class: the edge kinds it may use, the
// kind its search starts from, and what the cycle must contain.
type spec struct {
	class   Class
	allowed EdgeKind
	start   EdgeKind
	rw      int  // number of rw edges: 0, 1, or 2 meaning two or more
	wr, rt  bool // needs at least one wr / rt edge
	any     bool // accepts any cycle (the fallback)
}

var (
	// serializability classes: no real-time edges.
	plainSpecs = []spec{
		{class: G0, allowed: WW, start: WW},
		{class: G1c, allowed: WW | WR, start: WR, wr: true},
		{class: GSingle, allowed: WW | WR | RW, start: RW, rw: 1},
		{class: G2, allowed: WW | WR | RW, start: RW, rw: 2},
	}
	// the real-time variants, searched in a component only when it has no
	// cycle of the classes above (the component is then serializable, and
	// every cycle in it needs a real-time edge).
	realTimeSpecs = []spec{
		{class: G0Realtime, allowed: WW | RT, start: RT, rt: true},
		{class: G1cRealtime, allowed: WW | WR | RT, start: WR, wr: true, rt: true},
		{class: GSingleRealtime, allowed: allKinds, start: RW, rw: 1, rt: true},
		{class: G2Realtime, allowed: allKinds, start: RW, rw: 2, rt: true},
	}
	classOrder = []Class{G0, G1c, GSingle, G2, G0Realtime, G1cRealtime, GSingleRealtime, G2Realtime}
)

// classify names a cycle by its edge kinds: real-time or not, then by its
// number of rw edges, then whether it has a wr edge.
func classify(kinds []EdgeKind) Class {
	var rw, wr, rt int
	for _, k := range kinds {
		switch k {
		case RW:
			rw++
		case WR:
			wr++
		case RT:
			rt++
		}
	}
	plain := rt == 0
	switch {
	case rw == 0 && wr == 0:
		return pick(plain, G0, G0Realtime)
	case rw == 0:
		return pick(plain, G1c, G1cRealtime)
	case rw == 1:
		return pick(plain, GSingle, GSingleRealtime)
	}
	return pick(plain, G2, G2Realtime)
}

func pick(plain bool, a, b Class) Class {
	if plain {
		return a
	}
	return b
}

// cycle is a closed walk: kinds[i] is the kind of nodes[i] → nodes[i+1]
// (the last goes back to nodes[0]).
type cycle struct {
	nodes []int32
	kinds []EdgeKind
}

// simple cuts a closed walk that visits a node twice down to its first
// simple cycle (a shortest walk with the required edge kinds may loop; the
// loop is itself a cycle, named by its own kinds).
func (cy cycle) simple() cycle {
	for j := range cy.nodes {
		for i := 0; i < j; i++ {
			if cy.nodes[i] == cy.nodes[j] {
				return cycle{nodes: cy.nodes[i:j], kinds: cy.kinds[i:j]}
			}
		}
	}
	return cy
}

// shortcut shortens a cycle that has real-time edges. Those edges are kept
// in transitive reduction, so a path between two transactions far apart in
// time runs through many of them (and through whatever wr/ww edges make it
// shorter); where a transaction of the cycle completed before a later one
// in the cycle was invoked, the path between them is replaced by that one
// real-time edge, a fact of the history. The result is still a cycle, named
// by its own edges.
func (c *checker) shortcut(cy cycle) cycle {
	if !slices.Contains(cy.kinds, RT) {
		return cy
	}
	before := func(x, y int32) bool {
		a, b := &c.h[c.ops[x]], &c.h[c.ops[y]]
		return a.Outcome == history.OK && a.Complete < b.Invoke
	}
	for changed := true; changed; {
		changed = false
		n := len(cy.nodes)
	search:
		for i := range n {
			for d := n - 1; d >= 2; d-- {
				j := (i + d) % n
				if !before(cy.nodes[i], cy.nodes[j]) {
					continue
				}
				var out cycle
				for k := 0; k < n-d+1; k++ {
					p := (j + k) % n
					out.nodes = append(out.nodes, cy.nodes[p])
					out.kinds = append(out.kinds, cy.kinds[p])
				}
				out.kinds[len(out.kinds)-1] = RT // cy.nodes[i] -rt-> cy.nodes[j]
				cy, changed = out, true
				break search
			}
		}
	}
	return cy
}

const nFlags = 12 // rw count (0, 1, 2+) × wr seen × rt seen

// searcher runs the constrained breadth-first searches.
type searcher struct {
	g      *graph
	t      *tarjan
	member []int32 // member[x] == id of the component being searched
	seen   []uint32
	epoch  uint32
	parent []int32
	pkind  []EdgeKind
	cur    []int32
	next   []int32
	budget int
}

func newSearcher(g *graph) *searcher {
	return &searcher{g: g, t: newTarjan(g), member: make([]int32, g.n),
		seen: make([]uint32, g.n*nFlags), parent: make([]int32, g.n*nFlags), pkind: make([]EdgeKind, g.n*nFlags)}
}

// step applies an edge kind to a state's flags; false if the class can no
// longer be satisfied.
func (sp *spec) step(f int32, k EdgeKind) (int32, bool) {
	rw, wr, rt := f/4, f/2%2, f%2
	switch k {
	case RW:
		if rw++; rw > 2 {
			rw = 2
		}
		if !sp.any && sp.rw < 2 && int(rw) > sp.rw {
			return 0, false
		}
	case WR:
		if sp.wr {
			wr = 1
		}
	case RT:
		if sp.rt {
			rt = 1
		}
	}
	return rw*4 + wr*2 + rt, true
}

func (sp *spec) accepts(f int32) bool {
	if sp.any {
		return true
	}
	rw, wr, rt := int(f/4), f/2%2, f%2
	return rw == sp.rw && (!sp.wr || wr == 1) && (!sp.rt || rt == 1)
}

// shortest is the shortest closed walk u -k0-> v ... -> u that the spec
// accepts, within u's sub-component, of fewer than limit edges; ok is false
// if there is none (or the budget ran out).
func (s *searcher) shortest(sp *spec, id int32, u, v int32, k0 EdgeKind, limit int) (cycle, bool) {
	g, comp := s.g, s.t.comp
	s.epoch++
	f0, _ := sp.step(0, k0)
	init := v*nFlags + f0
	s.seen[init], s.parent[init], s.pkind[init] = s.epoch, -1, k0
	s.cur = append(s.cur[:0], init)
	for depth := 1; len(s.cur) > 0 && depth+1 < limit && s.budget > 0; depth++ {
		s.next = s.next[:0]
		for _, st := range s.cur {
			x, f := st/nFlags, st%nFlags
			for e := g.off[x]; e < g.off[x+1]; e++ {
				y := g.dst[e]
				if s.member[y] != id || comp[y] != comp[u] {
					continue
				}
				for m := g.mask[e] & sp.allowed; m != 0; {
					k := m & -m
					m &^= k
					s.budget--
					nf, ok := sp.step(f, k)
					if !ok {
						continue
					}
					if y == u {
						if sp.accepts(nf) {
							return s.walk(u, st, k), true
						}
						continue
					}
					ns := y*nFlags + nf
					if s.seen[ns] == s.epoch {
						continue
					}
					s.seen[ns], s.parent[ns], s.pkind[ns] = s.epoch, st, k
					s.next = append(s.next, ns)
				}
			}
		}
		s.cur, s.next = s.next, s.cur
	}
	return cycle{}, false
}

// walk rebuilds the cycle ending with last -k-> u.
func (s *searcher) walk(u, last int32, k EdgeKind) cycle {
	var states []int32
	for st := last; st >= 0; st = s.parent[st] {
		states = append(states, st)
	}
	slices.Reverse(states)
	cy := cycle{nodes: []int32{u}}
	for _, st := range states {
		cy.nodes = append(cy.nodes, st/nFlags)
		cy.kinds = append(cy.kinds, s.pkind[st])
	}
	cy.kinds = append(cy.kinds, k)
	return cy
}

// search finds the shortest cycle of one class in a component (or a short
// one, if the budget runs out first).
func (s *searcher) search(sp *spec, members []int32, id int32, budget int) (best cycle, found, truncated bool) {
	g := s.g
	s.t.run(members, sp.allowed, s.member, id, false)
	comp := s.t.comp
	s.budget = budget
	limit := int(^uint(0) >> 1)
	for _, u := range members {
		for e := g.off[u]; e < g.off[u+1]; e++ {
			v := g.dst[e]
			if g.mask[e]&sp.start == 0 || s.member[v] != id || comp[u] != comp[v] {
				continue
			}
			for m := g.mask[e] & sp.start; m != 0; {
				k0 := m & -m
				m &^= k0
				if cy, ok := s.shortest(sp, id, u, v, k0, limit); ok {
					best, found, limit = cy, true, len(cy.nodes)
				}
				if limit == 2 {
					return best, found, false
				}
				if s.budget <= 0 {
					return best, found, true
				}
			}
		}
	}
	return best, found, false
}

// findCycles reports, per strongly connected component, the shortest
// cycle found of each class (see the specs for the order and the
// real-time rule). A component is never left without a reported cycle: if
// every class search ran out of budget, any cycle found by an unconstrained
// search is reported under its class.
func (c *checker) findCycles(g *graph) {
	t := newTarjan(g)
	all := make([]int32, g.n)
	for i := range all {
		all[i] = int32(i)
	}
	sccs := t.run(all, allKinds, nil, 0, true)
	c.res.SCCs = len(sccs)
	if len(sccs) == 0 {
		return
	}
	s := newSearcher(g)
	for i, members := range sccs {
		id := int32(i + 1)
		for _, x := range members {
			s.member[x] = id
		}
		found := make(map[Class]cycle)
		try := func(specs []spec) {
			for j := range specs {
				cy, ok, truncated := s.search(&specs[j], members, id, c.opts.CycleSearchBudget)
				if truncated {
					c.res.SearchTruncated++
				}
				if !ok {
					continue
				}
				cy = c.shortcut(cy.simple())
				cls := classify(cy.kinds)
				if old, dup := found[cls]; !dup || len(cy.nodes) < len(old.nodes) {
					found[cls] = cy
				}
			}
		}
		try(plainSpecs)
		if len(found) == 0 && c.opts.Model == StrictSerializable {
			try(realTimeSpecs)
		}
		if len(found) == 0 {
			try([]spec{{allowed: allKinds, start: allKinds, any: true}})
		}
		for _, cls := range classOrder {
			if cy, ok := found[cls]; ok {
				c.reportCycle(g, cls, cy)
			}
		}
	}
}

var classText = map[Class]string{
	G0:              "a cycle of write-write dependencies (dirty write)",
	G1c:             "a cycle of write-write and write-read dependencies (circular information flow)",
	GSingle:         "a cycle with exactly one read-write anti-dependency (read skew, lost update)",
	G2:              "a cycle with two or more read-write anti-dependencies (write skew)",
	G0Realtime:      "a cycle of write-write dependencies that needs real-time order: not strictly serializable",
	G1cRealtime:     "a cycle of write-write and write-read dependencies that needs real-time order: not strictly serializable",
	GSingleRealtime: "a cycle with exactly one anti-dependency that needs real-time order (a stale read): not strictly serializable",
	G2Realtime:      "a cycle with two or more anti-dependencies that needs real-time order: not strictly serializable",
}

// reportCycle renders a cycle, starting at its smallest history index.
func (c *checker) reportCycle(g *graph, cls Class, cy cycle) {
	n := len(cy.nodes)
	start := 0
	for i := range cy.nodes {
		if c.ops[cy.nodes[i]] < c.ops[cy.nodes[start]] {
			start = i
		}
	}
	a := Anomaly{Class: cls}
	var sum, why strings.Builder
	sum.WriteString(string(cls) + ": " + txnName(int(c.ops[cy.nodes[start]])))
	for j := range n {
		i := (start + j) % n
		from, to, k := cy.nodes[i], cy.nodes[(i+1)%n], cy.kinds[i]
		var key, text string
		if k == RT { // possibly a shortcut, not in the reduced graph
			text = fmt.Sprintf("%s completed (at %d) before %s was invoked (at %d)",
				txnName(int(c.ops[from])), c.h[c.ops[from]].Complete, txnName(int(c.ops[to])), c.h[c.ops[to]].Invoke)
		} else {
			key, text = c.explainEdge(g.evidence(from, to, k))
		}
		st := Step{From: int(c.ops[from]), To: int(c.ops[to]), Kind: k, Key: key, Why: text}
		a.Steps = append(a.Steps, st)
		a.Txns = append(a.Txns, st.From)
		label := k.String()
		if key != "" {
			label += "(" + key + ")"
		}
		fmt.Fprintf(&sum, " -%s-> %s", label, txnName(st.To))
		fmt.Fprintf(&why, "\n  %s -%s-> %s: %s", txnName(st.From), label, txnName(st.To), text)
	}
	a.Summary = sum.String()
	var sb strings.Builder
	sb.WriteString(a.Summary)
	sb.WriteString("\n  " + classText[cls])
	for _, t := range a.Txns {
		fmt.Fprintf(&sb, "\n  %s: %s", txnName(t), c.h[t])
	}
	sb.WriteString(why.String())
	a.Explanation = sb.String()
	c.anomalies = append(c.anomalies, a)
}
