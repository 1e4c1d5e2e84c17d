package elle

// tarjan finds strongly connected components (Tarjan 1972) over the edges
// of some kinds and, optionally, a subset of the nodes. It is iterative (no
// recursion depth limit on long chains) and reuses its arrays across runs.
type tarjan struct {
	g       *graph
	index   []int32 // -1: not visited in this run
	low     []int32
	onStack []bool
	comp    []int32 // component number, valid for the nodes of the last run
	stack   []int32
	frames  []tarjanFrame
}

type tarjanFrame struct{ x, e int32 }

func newTarjan(g *graph) *tarjan {
	return &tarjan{g: g, index: make([]int32, g.n), low: make([]int32, g.n),
		onStack: make([]bool, g.n), comp: make([]int32, g.n)}
}

// run numbers the components of the subgraph induced by nodes (those x
// with member[x] == id, or every node if member is nil) and the edges with
// a kind in allowed, in t.comp. It returns the components of two or more
// nodes if collect is set.
func (t *tarjan) run(nodes []int32, allowed EdgeKind, member []int32, id int32, collect bool) [][]int32 {
	g := t.g
	for _, x := range nodes {
		t.index[x] = -1
	}
	in := func(y int32) bool { return member == nil || member[y] == id }
	var (
		counter int32
		ncomp   int32
		out     [][]int32
	)
	visit := func(x int32) {
		t.index[x], t.low[x] = counter, counter
		counter++
		t.stack = append(t.stack, x)
		t.onStack[x] = true
		t.frames = append(t.frames, tarjanFrame{x: x, e: g.off[x]})
	}
	for _, root := range nodes {
		if t.index[root] >= 0 {
			continue
		}
		visit(root)
		for len(t.frames) > 0 {
			f := &t.frames[len(t.frames)-1]
			x, descended := f.x, false
			for f.e < g.off[x+1] {
				e := f.e
				f.e++
				y := g.dst[e]
				if g.mask[e]&allowed == 0 || !in(y) {
					continue
				}
				if t.index[y] < 0 {
					visit(y) // f is stale from here on
					descended = true
					break
				}
				if t.onStack[y] && t.index[y] < t.low[x] {
					t.low[x] = t.index[y]
				}
			}
			if descended {
				continue
			}
			if t.low[x] == t.index[x] {
				i := len(t.stack) - 1
				for t.stack[i] != x {
					i--
				}
				members := t.stack[i:]
				for _, y := range members {
					t.onStack[y] = false
					t.comp[y] = ncomp
				}
				if collect && len(members) > 1 {
					out = append(out, append([]int32(nil), members...))
				}
				ncomp++
				t.stack = t.stack[:i]
			}
			t.frames = t.frames[:len(t.frames)-1]
			if len(t.frames) > 0 {
				if p := t.frames[len(t.frames)-1].x; t.low[x] < t.low[p] {
					t.low[p] = t.low[x]
				}
			}
		}
	}
	return out
}
