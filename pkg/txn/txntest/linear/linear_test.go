package linear

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// TestChecks runs testdata/checks.txt: each `check` parses a history and
// prints the keys that are not linearizable ("linearizable" if none) and
// how many ops were skipped.
func TestChecks(t *testing.T) {
	datadriven.RunTest(t, "testdata/checks.txt", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "check" {
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
		h, err := history.ParseString(d.Input)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		res, err := Check(h, 0)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		out := res.String() + "\n"
		if res.Skipped > 0 {
			out += fmt.Sprintf("skipped %d\n", res.Skipped)
		}
		return out
	})
}

func TestVisualizeWritesTheFailingKey(t *testing.T) {
	h, err := history.ParseString("ok p1 0 10 w(x,1)\nok p2 20 30 r(x)=nil")
	require.NoError(t, err)
	res, err := Check(h, 0)
	require.NoError(t, err)
	require.False(t, res.Ok())
	var buf bytes.Buffer
	require.NoError(t, res.Visualize("x", &buf))
	require.Contains(t, buf.String(), "<html")
	require.Error(t, res.Visualize("y", &buf))
}

// genRegister draws single-key register histories that are linearizable by
// construction: op i takes effect at instant 10(i+1), inside its drawn
// interval, on a sequential register per key. Fail ops have no effect; Info
// ops may or may not.
func genRegister(t *rapid.T) (history.History, []int64) {
	keys := []string{"a", "b", "c"}[:rapid.IntRange(1, 3).Draw(t, "keys")]
	state := map[string]*int64{}
	var h history.History
	var effect []int64 // when each op took effect
	next := int64(0)
	for i := range rapid.IntRange(1, 30).Draw(t, "ops") {
		at := int64(10 * (i + 1))
		k := rapid.SampledFrom(keys).Draw(t, "key")
		op := history.Op{Process: i % 4, Invoke: at - rapid.Int64Range(0, 30).Draw(t, "before"),
			Complete: at + rapid.Int64Range(0, 30).Draw(t, "after"),
			Outcome:  rapid.SampledFrom([]history.Outcome{history.OK, history.OK, history.OK, history.Fail, history.Info}).Draw(t, "outcome")}
		applied := op.Outcome == history.OK || op.Outcome == history.Info && rapid.Bool().Draw(t, "applied")
		cur := state[k]
		read := func() history.MicroOp {
			switch {
			case op.Outcome != history.OK:
				return history.Read(k)
			case cur == nil:
				return history.ReadNil(k)
			}
			return history.ReadValue(k, *cur)
		}
		next++
		v := next
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			op.Txn = []history.MicroOp{read()}
		case 1:
			op.Txn = []history.MicroOp{history.Write(k, v)}
		default:
			op.Txn = []history.MicroOp{read(), history.Write(k, v)}
		}
		if applied && op.Txn[len(op.Txn)-1].IsWrite() {
			state[k] = &v
		}
		h = append(h, op)
		effect = append(effect, at)
	}
	return h, effect
}

func TestGeneratedLinearizableRegistersPass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h, _ := genRegister(t)
		res, err := Check(h, 0)
		require.NoError(t, err)
		if !res.Ok() {
			t.Fatalf("a linearizable history failed:\n%s%s", h, res)
		}
	})
}

// TestAStaleRegisterReadIsIllegal: a read changed to return nil, or the
// value of a write w1, although a write w2 completed before the read began
// (and, for w1, w1 completed before w2 began): every linearization orders
// w1, w2 and the read that way, and no write repeats a value or deletes.
func TestAStaleRegisterReadIsIllegal(t *testing.T) {
	applied := 0
	rapid.Check(t, func(t *rapid.T) {
		h, _ := genRegister(t)
		writes := func(i int, key string) (int64, bool) {
			m := h[i].Txn[len(h[i].Txn)-1]
			return m.Value, h[i].Outcome == history.OK && m.IsWrite() && m.Key == key
		}
		type cand struct{ r, w1, w2 int } // w1 < 0: read nil
		var cs []cand
		for r := range h {
			if h[r].Outcome != history.OK || len(h[r].Txn) != 1 || h[r].Txn[0].Kind != history.KindRead {
				continue
			}
			key := h[r].Txn[0].Key
			for w2 := range h {
				if _, ok := writes(w2, key); !ok || h[w2].Complete >= h[r].Invoke {
					continue
				}
				cs = append(cs, cand{r, -1, w2})
				for w1 := range h {
					if _, ok := writes(w1, key); ok && h[w1].Complete < h[w2].Invoke {
						cs = append(cs, cand{r, w1, w2})
					}
				}
			}
		}
		if len(cs) == 0 {
			return
		}
		c := rapid.SampledFrom(cs).Draw(t, "cand")
		h = h.Clone()
		key := h[c.r].Txn[0].Key
		h[c.r].Txn[0] = history.ReadNil(key)
		if c.w1 >= 0 {
			v, _ := writes(c.w1, key)
			h[c.r].Txn[0] = history.ReadValue(key, v)
		}
		applied++
		res, err := Check(h, 0)
		require.NoError(t, err)
		if res.Ok() {
			t.Fatalf("a stale read went unnoticed:\n%s", h)
		}
	})
	require.Greater(t, applied, 10)
}
