package elle

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Register inference (Elle §4.3, "rw-register").
//
// A register read shows only the last write, so version orders are not
// recoverable in general. What is inferred:
//   - nil (the key never written) is the first version of every key;
//   - a committed transaction that read x (before writing the key itself)
//     and then wrote y installed y after x: x < y. In Augustus this is what
//     a cmp-guarded write records (cmp(k, x); write(k, y)): the guard held,
//     and the write was applied with the key locked (Elle's
//     "writes-follow-reads" inference);
//   - a transaction's version of a key is its final write to it; earlier
//     writes of the same transaction to the key are not versions (G1b if
//     anyone reads them).
//
// What is not: the order of blind writes (writes not preceded in their
// transaction by a read of the key). Two blind writes of one key are
// unordered here, so anomalies that hinge only on their order (a lost update
// without a read, a write cycle of blind writes) go unseen. Real-time order
// is not used to order versions either (that would assume per-key
// linearizability; package linear checks that separately).

// checkRegisterReads reports garbage and aborted reads (G1a), marks Info
// writers whose values were read as committed, and reports intermediate
// reads (G1b).
func (c *checker) checkRegisterReads(ks *keyState) {
	for _, r := range ks.reads {
		if m := c.h[r.op].Txn[r.m]; m.Result == history.ResultValue {
			c.valueRead(r.op, ks, m.Value)
		}
	}
	for _, e := range ks.ext {
		if e.isNil {
			continue
		}
		if w, ok := ks.writes[e.val]; ok && w.op >= 0 && w.op != e.op && !w.last {
			c.report(Anomaly{Class: G1b, Txns: []int{int(e.op), int(w.op)}, Key: ks.name},
				fmt.Sprintf("%s read %s=%d, an intermediate write of %s (its final write to %s is %d)",
					txnName(int(e.op)), ks.name, e.val, txnName(int(w.op)), ks.name, w.final))
		}
	}
}

// registerEdges infers the dependency edges of one register key:
//   - wr: the writer of x → every committed reader of x;
//   - ww: the writer of x → a transaction that read x and then wrote the key
//     (x < its final write);
//   - rw: a reader of x → every transaction that read x and overwrote it;
//     a reader of nil → every committed writer of the key whose version has
//     no known predecessor (the others follow those through ww edges).
func (c *checker) registerEdges(k int32, ks *keyState) {
	// overwrote[x] lists the external reads of x followed by a write.
	overwrote := make(map[int64][]int32)
	hasPred := make(map[int32]bool)
	for i, e := range ks.ext {
		if e.isNil {
			continue
		}
		w, ok := ks.writes[e.val]
		if !ok || w.op < 0 || c.node[w.op] < 0 || w.op == e.op {
			continue
		}
		r := c.node[e.op]
		c.edge(c.node[w.op], r, WR, whyRegRead, k, e.val, 0)
		if w.last && e.writes {
			c.edge(c.node[w.op], r, WW, whyRegReadWrite, k, e.val, e.final)
			overwrote[e.val] = append(overwrote[e.val], int32(i))
			hasPred[e.op] = true
		}
	}
	for _, e := range ks.ext {
		r := c.node[e.op]
		if e.isNil {
			for _, w := range ks.writers {
				if n := c.node[w.op]; n >= 0 && !hasPred[w.op] {
					c.edge(r, n, RW, whyRegRWInit, k, 0, w.vals[len(w.vals)-1])
				}
			}
			continue
		}
		for _, i := range overwrote[e.val] {
			y := ks.ext[i]
			c.edge(r, c.node[y.op], RW, whyRegRWNext, k, e.val, y.final)
		}
	}
}
