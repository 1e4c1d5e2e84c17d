package elle

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// The generator: random transactions run one at a time against a trivially
// serial in-memory model, so every history it draws is strictly
// serializable. Transaction i takes effect at instant 10(i+1), and its
// recorded invocation and completion are drawn around that instant, so
// transactions overlap in time (a concurrent history) while real-time order
// never contradicts the serial order.

// keyState of the model for one key: a list, or a register (isNil: absent).
type modelValue struct {
	list  []int64
	val   int64
	isNil bool
}

// genTxn is what the generator knows of one op.
type genTxn struct {
	applied bool                  // took effect in the model (OK, or an Info that did)
	before  map[string]modelValue // the touched keys before it took effect
}

type generated struct {
	h    history.History
	list bool
	txns []genTxn
}

func genKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	return keys
}

// chooser draws the generator's choices: from rapid (shrinkable) or from a
// seeded source (large histories).
type chooser interface {
	intRange(label string, lo, hi int) int
}

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intRange(label string, lo, hi int) int {
	return rapid.IntRange(lo, hi).Draw(c.t, label)
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intRange(_ string, lo, hi int) int { return lo + c.r.IntN(hi-lo+1) }

// genConfig shapes a generated history.
type genConfig struct {
	list            bool
	minKeys, keys   int // the number of keys is drawn in [minKeys, keys]
	minTxns, txns   int
	spread          int // invocation and completion lie within spread of the effect
	maxOps          int
	readPercent     int
	failOrInfoPerMl int // per mille of Fail, and of Info, ops
}

func smallConfig(list bool, maxTxns int) genConfig {
	return genConfig{list: list, minKeys: 1, keys: 4, minTxns: 1, txns: maxTxns, spread: 25, maxOps: 4,
		readPercent: 50, failOrInfoPerMl: 170}
}

// drawHistory draws a small history of the list-append or the register
// workload with rapid.
func drawHistory(t *rapid.T, list bool, maxTxns int) generated {
	return generate(rapidChooser{t}, smallConfig(list, maxTxns))
}

// generate runs random transactions against the serial model.
func generate(ch chooser, cfg genConfig) generated {
	keys := genKeys(ch.intRange("keys", cfg.minKeys, cfg.keys))
	model := make(map[string]modelValue)
	for _, k := range keys {
		model[k] = modelValue{isNil: true}
	}
	g := generated{list: cfg.list}
	list := cfg.list
	next := int64(0)
	n := ch.intRange("txns", cfg.minTxns, cfg.txns)
	for i := range n {
		at := int64(10 * (i + 1))
		op := history.Op{
			Process:  i % 5,
			Invoke:   at - int64(ch.intRange("before", 0, cfg.spread)),
			Complete: at + int64(ch.intRange("after", 0, cfg.spread)),
			Outcome:  history.OK,
		}
		switch o := ch.intRange("outcome", 0, 999); {
		case o < cfg.failOrInfoPerMl:
			op.Outcome = history.Fail
		case o < 2*cfg.failOrInfoPerMl:
			op.Outcome = history.Info
		}
		gt := genTxn{applied: op.Outcome == history.OK, before: make(map[string]modelValue)}
		if op.Outcome == history.Info {
			gt.applied = ch.intRange("info-applied", 0, 1) == 1
			if ch.intRange("info-never-completed", 0, 1) == 1 {
				op.Complete = history.Never
			}
		}
		// The transaction runs atomically at `at` on a scratch copy of the
		// keys it touches, seeing its own writes; it is installed only if it
		// takes effect.
		scratch := make(map[string]modelValue)
		get := func(k string) modelValue {
			if v, ok := scratch[k]; ok {
				return v
			}
			gt.before[k] = model[k]
			return model[k]
		}
		for range ch.intRange("ops", 1, cfg.maxOps) {
			k := keys[ch.intRange("key", 0, len(keys)-1)]
			cur := get(k)
			if ch.intRange("read", 0, 99) >= cfg.readPercent {
				_, touched := scratch[k]
				if !list && !touched && op.Outcome == history.OK && ch.intRange("guard", 0, 1) == 1 {
					// A cmp-guarded write: record the guard as a read.
					if cur.isNil {
						op.Txn = append(op.Txn, history.ReadNil(k))
					} else {
						op.Txn = append(op.Txn, history.ReadValue(k, cur.val))
					}
				}
				next++
				if list {
					cur.list = append(slices.Clip(cur.list), next)
					op.Txn = append(op.Txn, history.Append(k, next))
				} else {
					cur.val, cur.isNil = next, false
					op.Txn = append(op.Txn, history.Write(k, next))
				}
				scratch[k] = cur
				continue
			}
			switch {
			case op.Outcome != history.OK:
				op.Txn = append(op.Txn, history.Read(k))
			case list:
				op.Txn = append(op.Txn, history.ReadList(k, slices.Clone(cur.list)...))
			case cur.isNil:
				op.Txn = append(op.Txn, history.ReadNil(k))
			default:
				op.Txn = append(op.Txn, history.ReadValue(k, cur.val))
			}
			scratch[k] = cur
		}
		if gt.applied {
			for k, v := range scratch {
				model[k] = v
			}
		}
		g.h = append(g.h, op)
		g.txns = append(g.txns, gt)
	}
	return g
}

// externalRead is the index of op's first read of key before any write of
// it in the op, or -1.
func externalRead(op *history.Op, key string) int {
	for j, m := range op.Txn {
		if m.Key != key {
			continue
		}
		if m.IsWrite() {
			return -1
		}
		if m.Result != history.ResultUnknown {
			return j
		}
	}
	return -1
}

// finalWrite is op's last write of key, if any.
func finalWrite(op *history.Op, key string) (int64, bool) {
	var v int64
	found := false
	for _, m := range op.Txn {
		if m.Key == key && m.IsWrite() {
			v, found = m.Value, true
		}
	}
	return v, found
}

// setRead replaces the result of read j of op with the model value v.
func setRead(op *history.Op, j int, list bool, v modelValue) {
	k := op.Txn[j].Key
	switch {
	case list:
		op.Txn[j] = history.ReadList(k, slices.Clone(v.list)...)
	case v.isNil:
		op.Txn[j] = history.ReadNil(k)
	default:
		op.Txn[j] = history.ReadValue(k, v.val)
	}
}

// afterWrite is the model value of key right after op took effect.
func afterWrite(g *generated, i int, key string) modelValue {
	v := g.txns[i].before[key]
	for _, m := range g.h[i].Txn {
		if m.Key == key && m.IsWrite() {
			if g.list {
				v.list = append(slices.Clip(v.list), m.Value)
			} else {
				v.val, v.isNil = m.Value, false
			}
		}
	}
	return v
}

type pair struct {
	a, b int
	key  string
}

// pairs lists (a, b, key) with a ≠ b that satisfy ok.
func pairs(g *generated, ok func(a, b int, key string) bool) []pair {
	var out []pair
	for a := range g.h {
		for b := range g.h {
			if a == b {
				continue
			}
			for key := range g.txns[b].before {
				if ok(a, b, key) {
					out = append(out, pair{a, b, key})
				}
			}
		}
	}
	slices.SortFunc(out, func(x, y pair) int {
		if x.a != y.a {
			return x.a - y.a
		}
		if x.b != y.b {
			return x.b - y.b
		}
		if x.key < y.key {
			return -1
		}
		if x.key > y.key {
			return 1
		}
		return 0
	})
	return out
}
