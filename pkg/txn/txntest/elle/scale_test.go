package elle

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// largeConfig is the scale the checker must handle: 10,000 transactions
// over 100 keys, each overlapping about twenty others.
func largeConfig(list bool) genConfig {
	return genConfig{list: list, minKeys: 100, keys: 100, minTxns: 10000, txns: 10000, spread: 100, maxOps: 4,
		readPercent: 50, failOrInfoPerMl: 50}
}

func largeHistory(list bool, seed uint64) generated {
	return generate(randChooser{rand.New(rand.NewPCG(seed, seed))}, largeConfig(list))
}

// TestLargeSerializableHistoriesPass checks histories of the size the
// transaction simulator produces: valid ones pass, and one stale read
// planted near the end is found. The time is logged (the benchmark below
// measures it properly).
func TestLargeSerializableHistoriesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 10,000-transaction histories")
	}
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			g := largeHistory(w.list, 1)
			start := time.Now()
			res, err := Check(g.h, Options{})
			elapsed := time.Since(start)
			require.NoError(t, err)
			require.True(t, res.Valid(), "%s", res)
			t.Logf("%d ops, %d in the graph, %d edges: checked in %s", len(g.h), res.Txns, res.Edges, elapsed)

			// A read changed to miss a write that completed before it began.
			var p pair
		search:
			for r := len(g.h) - 1; r >= 0; r-- {
				for w := r - 1; w >= 0; w-- {
					for key := range g.txns[r].before {
						_, writes := finalWrite(&g.h[w], key)
						guarded := g.list || externalRead(&g.h[w], key) >= 0
						if g.h[w].Outcome == history.OK && writes && guarded && g.h[r].Outcome == history.OK &&
							externalRead(&g.h[r], key) >= 0 && g.h[w].Complete < g.h[r].Invoke {
							p = pair{a: w, b: r, key: key}
							break search
						}
					}
				}
			}
			require.NotZero(t, p.b)
			h := g.h.Clone()
			setRead(&h[p.b], externalRead(&h[p.b], p.key), g.list, g.txns[p.a].before[p.key])
			res, err = Check(h, Options{})
			require.NoError(t, err)
			require.False(t, res.Valid())
			t.Logf("planted stale read: %s", res)
		})
	}
}

func BenchmarkCheck10kTxns100Keys(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			g := largeHistory(w.list, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				res, err := Check(g.h, Options{})
				if err != nil || !res.Valid() {
					b.Fatal(err, res)
				}
			}
		})
	}
}
