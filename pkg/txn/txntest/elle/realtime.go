package elle

import (
	"cmp"
	"slices"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// realTimeEdges adds Ti -rt-> Tj for every committed Ti that completed
// before Tj was invoked (strict serializability, Elle §5.1), in transitive
// reduction: only edges not implied by a chain of others, so their number
// is about the history's concurrency times its length instead of its
// square.
//
// Events are visited in time order, invocations before completions at
// equal times (an op that completes at t and one invoked at t overlap). The
// frontier holds the completed ops no later completed op is known to
// follow. An invocation gets an edge from every op of the frontier; a
// completion removes from the frontier the ops it had edges from (they now
// reach every later invocation through it) and joins it. Any Ti that
// completed before Tj's invocation either is still in the frontier then or
// was removed by some Tk with Ti -rt-> Tk that completed before Tj's
// invocation, so by induction a path of rt edges leads from Ti to Tj.
//
// An Info op gets incoming edges only: it cannot have taken effect before
// its invocation, but may take effect at any time after (its owner, or
// another client recovering it, may finish it long after the recorded
// completion: txn.md K4), so nothing is known to follow it.
func (c *checker) realTimeEdges() {
	type event struct {
		t        int64
		complete bool
		node     int32
	}
	events := make([]event, 0, 2*len(c.ops))
	for n, op := range c.ops {
		o := &c.h[op]
		events = append(events, event{t: o.Invoke, node: int32(n)})
		if o.Outcome == history.OK {
			events = append(events, event{t: o.Complete, complete: true, node: int32(n)})
		}
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.complete != b.complete {
			if a.complete {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.node, b.node)
	})
	var frontier, preds []int32
	predsOf := make([][2]int32, len(c.ops)) // range in preds
	inFrontier := make([]bool, len(c.ops))
	for _, ev := range events {
		if !ev.complete {
			start := int32(len(preds))
			for _, f := range frontier {
				preds = append(preds, f)
				c.edge(f, ev.node, RT, whyRealTime, -1, 0, 0)
			}
			predsOf[ev.node] = [2]int32{start, int32(len(preds))}
			continue
		}
		r := predsOf[ev.node]
		for _, p := range preds[r[0]:r[1]] {
			inFrontier[p] = false
		}
		frontier = slices.DeleteFunc(frontier, func(f int32) bool { return !inFrontier[f] })
		frontier = append(frontier, ev.node)
		inFrontier[ev.node] = true
	}
}
