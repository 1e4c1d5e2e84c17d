package elle

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// graphChecker is a checker over n OK transactions with no micro-ops, for
// feeding the graph code edges directly.
func graphChecker(h history.History) *checker {
	c := &checker{h: h, opts: Options{CycleSearchBudget: DefaultCycleSearchBudget},
		keys: []*keyState{{name: "k"}}, node: make([]int32, len(h))}
	for i := range h {
		c.node[i] = int32(i)
		c.ops = append(c.ops, int32(i))
	}
	return c
}

// reach is the brute-force reflexive-transitive closure over the edges with
// a kind in allowed.
func reach(g *graph, allowed EdgeKind) [][]bool {
	r := make([][]bool, g.n)
	for s := range g.n {
		r[s] = make([]bool, g.n)
		r[s][s] = true
		stack := []int32{int32(s)}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for e := g.off[x]; e < g.off[x+1]; e++ {
				if y := g.dst[e]; g.mask[e]&allowed != 0 && !r[s][y] {
					r[s][y] = true
					stack = append(stack, y)
				}
			}
		}
	}
	return r
}

// TestRealTimeEdgesReachExactlyTheRealTimeOrder: the transitive reduction
// loses nothing and adds nothing. Ti reaches Tj through rt edges iff Ti is
// OK and completed strictly before Tj was invoked; Info ops have no
// outgoing rt edge.
func TestRealTimeEdgesReachExactlyTheRealTimeOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		h := make(history.History, n)
		for i := range h {
			inv := rapid.Int64Range(0, 50).Draw(t, "invoke")
			h[i] = history.Op{Outcome: history.OK, Invoke: inv, Complete: inv + rapid.Int64Range(0, 20).Draw(t, "span")}
			if rapid.IntRange(0, 4).Draw(t, "info") == 0 {
				h[i].Outcome = history.Info
			}
		}
		c := graphChecker(h)
		c.realTimeEdges()
		g := buildGraph(n, c.raw)
		r := reach(g, RT)
		for i := range h {
			for j := range h {
				want := i == j || h[i].Outcome == history.OK && h[i].Complete < h[j].Invoke
				require.Equal(t, want, r[i][j], "T%d ⇝ T%d\n%s", i, j, h)
			}
		}
	})
}

// simpleCycles enumerates every simple cycle (node sequences starting at
// their smallest node).
func simpleCycles(g *graph) [][]int32 {
	var out [][]int32
	var path []int32
	on := make([]bool, g.n)
	var dfs func(s, x int32)
	dfs = func(s, x int32) {
		for e := g.off[x]; e < g.off[x+1]; e++ {
			y := g.dst[e]
			if y == s {
				out = append(out, slices.Clone(path))
			} else if y > s && !on[y] {
				on[y] = true
				path = append(path, y)
				dfs(s, y)
				path = path[:len(path)-1]
				on[y] = false
			}
		}
	}
	for s := range int32(g.n) {
		path = []int32{s}
		on[s] = true
		dfs(s, s)
		on[s] = false
	}
	return out
}

// classesOf lists every class a simple cycle can be named, over every
// choice of one kind per edge.
func classesOf(g *graph, cy []int32, into map[Class]bool) {
	masks := make([]EdgeKind, len(cy))
	for i, x := range cy {
		y := cy[(i+1)%len(cy)]
		for e := g.off[x]; e < g.off[x+1]; e++ {
			if g.dst[e] == y {
				masks[i] = g.mask[e]
			}
		}
	}
	kinds := make([]EdgeKind, len(cy))
	var rec func(i int)
	rec = func(i int) {
		if i == len(cy) {
			into[classify(kinds)] = true
			return
		}
		for m := masks[i]; m != 0; m &= m - 1 {
			kinds[i] = m & -m
			rec(i + 1)
		}
	}
	rec(0)
}

func isPlain(c Class) bool { return c == G0 || c == G1c || c == GSingle || c == G2 }

// TestCycleSearchReportsRealCyclesOfEveryClassPresent checks the cycle
// search against brute force on random small graphs: every reported cycle
// is a simple cycle of the graph named by its own edges; every component
// with a cycle gets a report; the classes whose search is exact (G0, G1c,
// G-single, and G0-realtime where real-time classes are searched) are
// reported whenever such a cycle exists; real-time classes only where no
// plain cycle exists.
func TestCycleSearchReportsRealCyclesOfEveryClassPresent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 6).Draw(t, "n")
		h := make(history.History, n)
		for i := range h {
			h[i] = history.Op{Outcome: history.OK} // equal times: no real-time shortcut applies
		}
		c := graphChecker(h)
		for range rapid.IntRange(0, 14).Draw(t, "edges") {
			from, to := rapid.IntRange(0, n-1).Draw(t, "from"), rapid.IntRange(0, n-1).Draw(t, "to")
			kind := rapid.SampledFrom([]EdgeKind{WW, WR, RW, RT}).Draw(t, "kind")
			c.edge(int32(from), int32(to), kind, whyListNext, 0, 1, 2)
		}
		g := buildGraph(n, slices.Clone(c.raw))
		c.findCycles(g)

		all := reach(g, allKinds)
		sameSCC := func(x, y int32) bool { return all[x][y] && all[y][x] }
		// Brute force: the classes present per component (keyed by its
		// smallest node).
		present := map[int32]map[Class]bool{}
		for _, cy := range simpleCycles(g) {
			root := cy[0]
			for x := range int32(n) {
				if sameSCC(x, cy[0]) && x < root {
					root = x
				}
			}
			if present[root] == nil {
				present[root] = map[Class]bool{}
			}
			classesOf(g, cy, present[root])
		}
		reported := map[int32]map[Class]bool{}
		for _, a := range c.anomalies {
			require.NotEmpty(t, a.Steps)
			seen := map[int]bool{}
			var kinds []EdgeKind
			for i, s := range a.Steps {
				require.False(t, seen[s.From], "cycle is not simple: %s", a.Summary)
				seen[s.From] = true
				require.Equal(t, a.Steps[(i+1)%len(a.Steps)].From, s.To, "cycle is not closed: %s", a.Summary)
				ok := false
				for e := g.off[s.From]; e < g.off[s.From+1]; e++ {
					ok = ok || g.dst[e] == int32(s.To) && g.mask[e]&s.Kind != 0
				}
				require.True(t, ok, "no edge T%d -%s-> T%d: %s", s.From, s.Kind, s.To, a.Summary)
				kinds = append(kinds, s.Kind)
			}
			require.Equal(t, classify(kinds), a.Class)
			root := int32(a.Steps[0].From)
			for x := range int32(n) {
				if sameSCC(x, root) && x < root {
					root = x
				}
			}
			if reported[root] == nil {
				reported[root] = map[Class]bool{}
			}
			reported[root][a.Class] = true
		}
		for root, classes := range present {
			got := reported[root]
			require.NotEmpty(t, got, "component of T%d has cycles %v, none reported", root, classes)
			hasPlain := false
			for cls := range classes {
				hasPlain = hasPlain || isPlain(cls)
			}
			for _, exact := range []Class{G0, G1c, GSingle} {
				if classes[exact] {
					require.True(t, got[exact], "component of T%d has a %s cycle; reported %v", root, exact, got)
				}
			}
			for cls := range got {
				require.True(t, classes[cls], "reported %s, which brute force did not find", cls)
				require.Equal(t, hasPlain, isPlain(cls), "reported %s; plain cycles present: %v", cls, hasPlain)
			}
			if !hasPlain && classes[G0Realtime] {
				require.True(t, got[G0Realtime], "component of T%d has a G0-realtime cycle; reported %v", root, got)
			}
		}
		for root := range reported {
			require.Contains(t, present, root)
		}
	})
}
