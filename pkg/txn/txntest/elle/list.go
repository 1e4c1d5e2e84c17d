package elle

import (
	"fmt"
	"slices"
)

// List-append inference (Elle §3.1–3.3, §4.2).
//
// Every read of a list key returns, in order, every element appended and
// committed before it. If the database is serializable, the reads of one key
// are all prefixes of one list: the key's version order, which is the
// longest read. Each element is a version (the list up to it); elements are
// unique, so each names its writer.

// isPrefix says whether p is a prefix of l.
func isPrefix(p, l []int64) bool { return len(p) <= len(l) && slices.Equal(p, l[:len(p)]) }

// checkListReads finds the version order of a list key and the anomalies
// visible in single reads: elements nobody wrote (garbage), elements only
// failed ops wrote (G1a), repeated elements, reads that are not prefixes of
// the order (incompatible order) and intermediate reads (G1b). It marks
// Info ops whose appends were read as committed.
func (c *checker) checkListReads(ks *keyState) {
	var longest []int64
	longestOp := int32(-1)
	for _, r := range ks.reads {
		if l := c.h[r.op].Txn[r.m].List; longestOp < 0 || len(l) > len(longest) {
			longest, longestOp = l, r.op
		}
	}
	ks.longest = longest
	prefix := make([]bool, len(ks.reads))
	for i, r := range ks.reads {
		prefix[i] = isPrefix(c.h[r.op].Txn[r.m].List, longest)
	}
	// firstReader is the first op whose read shows position i of the order.
	firstReader := func(i int) int32 {
		for j, r := range ks.reads {
			if prefix[j] && len(c.h[r.op].Txn[r.m].List) > i {
				return r.op
			}
		}
		return longestOp
	}
	// Every prefix read's elements are the order's: check them once there.
	seen := make(map[int64]int, len(longest))
	for i, v := range longest {
		if j, dup := seen[v]; dup {
			c.report(Anomaly{Class: DuplicateElements, Txns: []int{int(firstReader(i))}, Key: ks.name},
				fmt.Sprintf("%s read %s with %d at positions %d and %d", txnName(int(firstReader(i))), ks.name, v, j, i))
			continue
		}
		seen[v] = i
		if w, ok := ks.writes[v]; ok && w.op >= 0 {
			c.markObserved(w.op)
		} else {
			c.valueRead(firstReader(i), ks, v)
		}
	}
	for j, r := range ks.reads {
		if prefix[j] {
			continue
		}
		l := c.h[r.op].Txn[r.m].List
		c.report(Anomaly{Class: IncompatibleOrder, Txns: []int{int(r.op), int(longestOp)}, Key: ks.name},
			fmt.Sprintf("%s read %s=%s, which is not a prefix of %s's %s=%s",
				txnName(int(r.op)), ks.name, fmtList(l), txnName(int(longestOp)), ks.name, fmtList(longest)))
		own := make(map[int64]int, len(l))
		for i, v := range l {
			if p, dup := own[v]; dup {
				c.report(Anomaly{Class: DuplicateElements, Txns: []int{int(r.op)}, Key: ks.name},
					fmt.Sprintf("%s read %s with %d at positions %d and %d", txnName(int(r.op)), ks.name, v, p, i))
				continue
			}
			own[v] = i
			c.valueRead(r.op, ks, v)
		}
	}
	// G1b: a read whose last element (before the reader's own appends) is
	// not its writer's last append to the key observed an intermediate
	// state of that writer.
	for _, e := range ks.ext {
		if len(e.prior) == 0 {
			continue
		}
		v := e.prior[len(e.prior)-1]
		if w, ok := ks.writes[v]; ok && w.op >= 0 && w.op != e.op && !w.last {
			c.report(Anomaly{Class: G1b, Txns: []int{int(e.op), int(w.op)}, Key: ks.name},
				fmt.Sprintf("%s read %s=%s, ending in %d, an intermediate append of %s (its last to %s is %d)",
					txnName(int(e.op)), ks.name, fmtList(e.full), v, txnName(int(w.op)), ks.name, w.final))
		}
	}
	// G1b in the order itself: another transaction's append right after an
	// intermediate element. An append is a read-modify-write of the list (in
	// Augustus, cmp(k, old) then write(k, old++[x])), so that transaction
	// built on a state its predecessor never committed.
	prev := int32(-1)
	var prevV int64
	for i, v := range longest {
		if seen[v] != i {
			continue // a repeat, reported above
		}
		w, ok := ks.writes[v]
		if !ok || w.op < 0 {
			continue
		}
		if prev >= 0 && prev != w.op {
			if pw := ks.writes[prevV]; !pw.last {
				c.report(Anomaly{Class: G1b, Txns: []int{int(w.op), int(prev)}, Key: ks.name},
					fmt.Sprintf("%s appended %d to %s right after %d, an intermediate append of %s (its last to %s is %d)",
						txnName(int(w.op)), v, ks.name, prevV, txnName(int(prev)), ks.name, pw.final))
			}
		}
		prev, prevV = w.op, v
	}
}

// listEdges infers the dependency edges of one list key from its version
// order (the longest read):
//   - ww: the writer of each element → the writer of the next element
//     (elements of failed ops and garbage are skipped: they are reported
//     already, and the order around them still holds);
//   - ww: the writer of the last element → every committed op whose appends
//     to the key nobody read (it committed, so it comes after every version
//     read: a later read would have shown it otherwise);
//   - wr: the writer of the last element of a read → the reader;
//   - rw: a reader → the writer of the element right after its read (if
//     the read was the whole order: → every committed unread append).
//
// An op's read of a key is taken before its own appends to it (its
// external read). Reads that are not prefixes of the order give wr edges
// only: where they sit in the order is unknown.
func (c *checker) listEdges(k int32, ks *keyState) {
	l := ks.longest
	pos := make(map[int64]int, len(l))
	wn := make([]int32, len(l)) // writer node of each element; -1 if none or a repeat
	for i, v := range l {
		wn[i] = -1
		if _, dup := pos[v]; dup {
			continue
		}
		pos[v] = i
		wn[i] = c.writerNode(ks, v)
	}
	last := -1
	for i := range l {
		if wn[i] < 0 {
			continue
		}
		if last >= 0 && wn[last] != wn[i] {
			c.edge(wn[last], wn[i], WW, whyListNext, k, l[last], l[i])
		}
		last = i
	}
	// nextValid[i] is the first position ≥ i with a writer node.
	nextValid := make([]int32, len(l)+1)
	nextValid[len(l)] = -1
	for i := len(l) - 1; i >= 0; i-- {
		if nextValid[i] = nextValid[i+1]; wn[i] >= 0 {
			nextValid[i] = int32(i)
		}
	}
	type unread struct {
		node int32
		v    int64
	}
	var unreads []unread
	for _, w := range ks.writers {
		n := c.node[w.op]
		if n < 0 || slices.ContainsFunc(w.vals, func(v int64) bool { _, ok := pos[v]; return ok }) {
			continue
		}
		unreads = append(unreads, unread{node: n, v: w.vals[0]})
		if last >= 0 {
			c.edge(wn[last], n, WW, whyListUnobserved, k, l[last], w.vals[0])
		}
	}
	for _, e := range ks.ext {
		r := c.node[e.op]
		for i := len(e.prior) - 1; i >= 0; i-- {
			if w := c.writerNode(ks, e.prior[i]); w >= 0 {
				c.edge(w, r, WR, whyListRead, k, e.prior[i], 0)
				break
			}
		}
		if !isPrefix(e.prior, l) {
			continue
		}
		if j := nextValid[len(e.prior)]; j >= 0 {
			c.edge(r, wn[j], RW, whyListRWNext, k, int64(len(e.prior)), l[j])
			continue
		}
		for _, u := range unreads {
			c.edge(r, u.node, RW, whyListRWUnread, k, int64(len(e.prior)), u.v)
		}
	}
}
