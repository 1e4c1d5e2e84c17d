package elle

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

var workloads = []struct {
	name string
	list bool
}{{"list-append", true}, {"register", false}}

// TestGeneratedStrictlySerializableHistoriesPass (txn.md X1, no false
// positives): every history of the
// serial model passes, under both models (no false positives, with Fail
// ops, Info ops that did and did not take effect, blind and guarded writes,
// reads of own writes and overlapping transactions).
func TestGeneratedStrictlySerializableHistoriesPass(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				g := drawHistory(t, w.list, 40)
				for _, m := range []Model{StrictSerializable, Serializable} {
					res, err := Check(g.h, Options{Model: m})
					require.NoError(t, err)
					if !res.Valid() {
						t.Fatalf("a serial history failed (model %d):\n%s\n%s", m, g.h, res.Explain())
					}
				}
			})
		})
	}
}

// mutation changes a valid generated history so that it must fail; ok is
// false if the history offers nothing to mutate.
type mutation func(t *rapid.T, g *generated) (h history.History, ok bool)

// checkMutation asserts that every mutated history fails in the way expect
// says, and that the mutation applied often enough for that to mean
// something.
func checkMutation(t *testing.T, mutate mutation, expect func(*Result) bool) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			applied, runs := 0, 0
			rapid.Check(t, func(t *rapid.T) {
				runs++
				g := drawHistory(t, w.list, 25)
				h, ok := mutate(t, &g)
				if !ok {
					return
				}
				applied++
				res, err := Check(h, Options{})
				require.NoError(t, err)
				if !expect(res) {
					t.Fatalf("the mutation went unnoticed or misnamed:\n%s\nresult:\n%s", h, res.Explain())
				}
			})
			t.Logf("mutation applied in %d of %d runs", applied, runs)
			// rapid runs 100 cases by default and 20 under -short: ask
			// for a tenth of them (rapid's shrinking runs count too).
			require.GreaterOrEqual(t, applied, max(2, runs/10), "the mutation applied in too few runs to show anything")
		})
	}
}

func invalid(r *Result) bool { return !r.Valid() }

// TestAFailedWriteMadeVisibleIsG1a (txn.md X1: aborted writes are never
// read): a committed read shows a write of a failed transaction.
func TestAFailedWriteMadeVisibleIsG1a(t *testing.T) {
	checkMutation(t, func(t *rapid.T, g *generated) (history.History, bool) {
		type target struct{ f, r, j int }
		var ts []target
		for f := range g.h {
			if g.h[f].Outcome != history.Fail {
				continue
			}
			for r := range g.h {
				if g.h[r].Outcome != history.OK {
					continue
				}
				for j, m := range g.h[r].Txn {
					if _, w := finalWrite(&g.h[f], m.Key); w && m.Kind == history.KindRead {
						ts = append(ts, target{f, r, j})
					}
				}
			}
		}
		if len(ts) == 0 {
			return nil, false
		}
		tg := rapid.SampledFrom(ts).Draw(t, "target")
		h := g.h.Clone()
		m := &h[tg.r].Txn[tg.j]
		v, _ := finalWrite(&h[tg.f], m.Key)
		if g.list {
			*m = history.ReadList(m.Key, append(slices.Clone(m.List), v)...)
		} else {
			*m = history.ReadValue(m.Key, v)
		}
		return h, true
	}, func(r *Result) bool { return r.Has(G1a) })
}

// TestAGarbageReadIsReported: a read value changed to one nobody wrote.
func TestAGarbageReadIsReported(t *testing.T) {
	checkMutation(t, func(t *rapid.T, g *generated) (history.History, bool) {
		type target struct{ r, j int }
		var ts []target
		for r := range g.h {
			for j, m := range g.h[r].Txn {
				if g.h[r].Outcome == history.OK && m.Kind == history.KindRead {
					ts = append(ts, target{r, j})
				}
			}
		}
		if len(ts) == 0 {
			return nil, false
		}
		tg := rapid.SampledFrom(ts).Draw(t, "target")
		h := g.h.Clone()
		m := &h[tg.r].Txn[tg.j]
		const garbage = 1 << 40
		if g.list {
			at := rapid.IntRange(0, len(m.List)).Draw(t, "at")
			*m = history.ReadList(m.Key, slices.Insert(slices.Clone(m.List), at, garbage)...)
		} else {
			*m = history.ReadValue(m.Key, garbage)
		}
		return h, true
	}, func(r *Result) bool { return r.Has(GarbageRead) })
}

// TestAFutureReadFails (txn.md X1, real time): a read changed to show a write of a transaction
// invoked after the reader completed (a wr edge against real time).
func TestAFutureReadFails(t *testing.T) {
	checkMutation(t, func(t *rapid.T, g *generated) (history.History, bool) {
		ps := pairs(g, func(w, r int, key string) bool {
			_, writes := finalWrite(&g.h[w], key)
			return g.h[w].Outcome == history.OK && writes && g.h[r].Outcome == history.OK &&
				externalRead(&g.h[r], key) >= 0 && g.h[r].Complete < g.h[w].Invoke
		})
		if len(ps) == 0 {
			return nil, false
		}
		p := rapid.SampledFrom(ps).Draw(t, "pair")
		h := g.h.Clone()
		setRead(&h[p.b], externalRead(&h[p.b], p.key), g.list, afterWrite(g, p.a, p.key))
		return h, true
	}, invalid)
}

// TestAStaleReadFails (txn.md X1, real time): a read changed to miss a write of a transaction that
// completed before the reader was invoked. For registers the overwritten
// transaction is a guarded one (it read the key first), since only then is
// the version the reader now sees known to precede it.
func TestAStaleReadFails(t *testing.T) {
	checkMutation(t, func(t *rapid.T, g *generated) (history.History, bool) {
		ps := pairs(g, func(w, r int, key string) bool {
			_, writes := finalWrite(&g.h[w], key)
			guarded := g.list || externalRead(&g.h[w], key) >= 0
			return g.h[w].Outcome == history.OK && writes && guarded && g.h[r].Outcome == history.OK &&
				externalRead(&g.h[r], key) >= 0 && g.h[w].Complete < g.h[r].Invoke
		})
		if len(ps) == 0 {
			return nil, false
		}
		p := rapid.SampledFrom(ps).Draw(t, "pair")
		h := g.h.Clone()
		setRead(&h[p.b], externalRead(&h[p.b], p.key), g.list, g.txns[p.a].before[p.key])
		return h, true
	}, invalid)
}

// TestReorderingTwoCommitsInRealTimeFails (txn.md X1, real time): a reader of a transaction's
// write is moved to complete before that transaction was invoked.
func TestReorderingTwoCommitsInRealTimeFails(t *testing.T) {
	checkMutation(t, func(t *rapid.T, g *generated) (history.History, bool) {
		ps := pairs(g, func(w, r int, key string) bool {
			v, writes := finalWrite(&g.h[w], key)
			j := externalRead(&g.h[r], key)
			if g.h[w].Outcome != history.OK || !writes || g.h[r].Outcome != history.OK || j < 0 {
				return false
			}
			m := g.h[r].Txn[j]
			return slices.Contains(m.List, v) || m.Result == history.ResultValue && m.Value == v
		})
		if len(ps) == 0 {
			return nil, false
		}
		p := rapid.SampledFrom(ps).Draw(t, "pair")
		h := g.h.Clone()
		h[p.b].Invoke, h[p.b].Complete = h[p.a].Invoke-20, h[p.a].Invoke-10
		return h, true
	}, invalid)
}
