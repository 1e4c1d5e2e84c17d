package txntest

import (
	"math/rand/v2"

	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

// RandomOptions derives a whole transaction simulation from a seed: one to
// three groups (f = 2 in some), the workload (bank or list-append) and its
// multi-group share, correct clients, Byzantine clients of every kind,
// Byzantine replicas (transaction-layer liars and the PBFT layer's
// behaviours, at most f per group), correct replicas that crash, power cuts,
// partitions and network chaos until a heal time.
func RandomOptions(seed uint64) Options {
	rng := rand.New(rand.NewPCG(seed, 0x7a11))
	o := Options{
		Seed:          seed,
		Groups:        1 + rng.IntN(3),
		F:             1,
		Workload:      []string{"bank", "append"}[rng.IntN(2)],
		Keys:          4 + rng.IntN(8),
		Clients:       1 + rng.IntN(4),
		TxnsPerClient: 4 + rng.IntN(12),
		Callers:       1 + rng.IntN(3),
		MultiGroupPct: []int{0, 20, 50, 100}[rng.IntN(4)],
		HealAt:        rng.Int64N(5_000_000),
		Partitions:    rng.IntN(4) == 0,
	}
	if rng.IntN(8) == 0 {
		o.F = 2
	}
	n := 3*o.F + 1
	if rng.IntN(2) == 0 {
		o.ExecLag = rng.Int64N(300_000)
	}
	o.Net.MinDelay = 200 + rng.Int64N(2000)
	o.Net.MaxDelay = o.Net.MinDelay + rng.Int64N(20_000)
	o.Net.LossRate = []float64{0, 0, 0.01, 0.05}[rng.IntN(4)]
	o.Net.DupRate = []float64{0, 0.05}[rng.IntN(2)]
	if rng.IntN(2) == 0 {
		o.ByzantineClients = 1 + rng.IntN(2)
		o.ByzantineActs = 2 + rng.IntN(8)
	}
	o.Faulty = map[int]map[int]bfttest.Behavior{}
	behaviors := bfttest.AllBehaviors()
	for g := 0; g < o.Groups; g++ {
		k := rng.IntN(o.F + 1)
		if k == 0 {
			continue
		}
		o.Faulty[g] = map[int]bfttest.Behavior{}
		for len(o.Faulty[g]) < k {
			slot := rng.IntN(n)
			if o.Faulty[g][slot] != nil {
				continue
			}
			if rng.IntN(2) == 0 {
				o.Faulty[g][slot] = TxnLiar{Mode: []string{"", "vote", "reads", "named", "sign", "refuse"}[rng.IntN(6)]}
			} else {
				o.Faulty[g][slot] = behaviors[rng.IntN(len(behaviors))]
			}
		}
	}
	if rng.IntN(3) == 0 {
		o.Crash = bfttest.CrashPlan{Crashes: rng.IntN(3), Rate: []int{50, 200}[rng.IntN(2)]}
		for g := 0; g < o.Groups; g++ {
			for i := 0; i < n; i++ {
				if o.Faulty[g][i] == nil && rng.IntN(4) == 0 {
					o.Crashing = append(o.Crashing, [2]int{g, i})
				}
			}
		}
	}
	o.PowerCut = rng.IntN(12) == 0
	return o
}
