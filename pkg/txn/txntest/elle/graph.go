package elle

import (
	"cmp"
	"fmt"
	"slices"
)

// why says which inference made an edge, for its explanation.
type why uint8

const (
	whyListNext       why = iota + 1 // ww: b directly follows a in the list's version order
	whyListUnobserved                // ww: b was never read, so it follows a, the last element read
	whyListRead                      // wr: the read ended in a
	whyListRWNext                    // rw: the read (a elements) stopped right before b
	whyListRWUnread                  // rw: the read (a elements) lacks b, which nobody read
	whyRegReadWrite                  // ww: Tj read a (Ti's) and then wrote b
	whyRegRead                       // wr: Tj read a
	whyRegRWNext                     // rw: Ti read a; Tj read a and overwrote it with b
	whyRegRWInit                     // rw: Ti read nil; Tj wrote b, a later version than the initial nil
	whyRealTime                      // rt (explained from the history's times)
)

// rawEdge is one inferred edge between graph nodes, with its evidence.
type rawEdge struct {
	from, to int32
	kind     EdgeKind
	why      why
	key      int32
	a, b     int64
}

// graph is the dependency graph in compressed adjacency form: the out-edges
// of node x are dst[off[x]:off[x+1]], each with the kinds of every edge
// between that pair.
type graph struct {
	n    int
	off  []int32
	dst  []int32
	mask []EdgeKind
	raw  []rawEdge // sorted by (from, to, kind), one per triple: the evidence
}

func compareRaw(a, b rawEdge) int {
	if c := cmp.Compare(a.from, b.from); c != 0 {
		return c
	}
	if c := cmp.Compare(a.to, b.to); c != 0 {
		return c
	}
	return cmp.Compare(a.kind, b.kind)
}

// buildGraph folds the inferred edges into adjacency form. The first
// evidence recorded for a (from, to, kind) triple is kept (a stable sort:
// the order edges were inferred in is deterministic).
func buildGraph(n int, raw []rawEdge) *graph {
	slices.SortStableFunc(raw, compareRaw)
	raw = slices.CompactFunc(raw, func(a, b rawEdge) bool { return compareRaw(a, b) == 0 })
	g := &graph{n: n, off: make([]int32, n+1), raw: raw}
	for i := 0; i < len(raw); {
		j := i
		var m EdgeKind
		for ; j < len(raw) && raw[j].from == raw[i].from && raw[j].to == raw[i].to; j++ {
			m |= raw[j].kind
		}
		g.dst = append(g.dst, raw[i].to)
		g.mask = append(g.mask, m)
		g.off[raw[i].from+1]++
		i = j
	}
	for x := 1; x <= n; x++ {
		g.off[x] += g.off[x-1]
	}
	return g
}

// evidence returns the recorded evidence for an edge.
func (g *graph) evidence(from, to int32, kind EdgeKind) rawEdge {
	i, ok := slices.BinarySearchFunc(g.raw, rawEdge{from: from, to: to, kind: kind}, compareRaw)
	if !ok {
		panic(fmt.Sprintf("elle: no evidence for edge %d -%s-> %d", from, kind, to))
	}
	return g.raw[i]
}

// explainEdge renders the evidence of a ww, wr or rw edge.
func (c *checker) explainEdge(e rawEdge) (key, text string) {
	ti, tj := txnName(int(c.ops[e.from])), txnName(int(c.ops[e.to]))
	key = c.keys[e.key].name
	switch e.why {
	case whyListNext:
		text = fmt.Sprintf("%s appended %d to %s and %s appended %d right after it", ti, e.a, key, tj, e.b)
	case whyListUnobserved:
		text = fmt.Sprintf("%s appended %d to %s, never read, so after %d, the last element read (appended by %s)", tj, e.b, key, e.a, ti)
	case whyListRead:
		text = fmt.Sprintf("%s read %s ending in %d, which %s appended", tj, key, e.a, ti)
	case whyListRWNext:
		text = fmt.Sprintf("%s read %s with %d elements, right before %d, which %s appended next", ti, key, e.a, e.b, tj)
	case whyListRWUnread:
		text = fmt.Sprintf("%s read %s with %d elements, without %d, which %s appended and nobody read", ti, key, e.a, e.b, tj)
	case whyRegReadWrite:
		text = fmt.Sprintf("%s read %s=%d, which %s wrote, and then wrote %d", tj, key, e.a, ti, e.b)
	case whyRegRead:
		text = fmt.Sprintf("%s read %s=%d, which %s wrote", tj, key, e.a, ti)
	case whyRegRWNext:
		text = fmt.Sprintf("%s read %s=%d, and %s read %d and overwrote it with %d", ti, key, e.a, tj, e.a, e.b)
	case whyRegRWInit:
		text = fmt.Sprintf("%s read %s=nil, the initial version, and %s wrote %d, a later one", ti, key, tj, e.b)
	default:
		text = fmt.Sprintf("unknown evidence %d", e.why)
	}
	return key, text
}
