package bfttest

import (
	"math/rand/v2"
)

// RandomOptions derives a whole run from a seed: group size (f = 2 in about
// a third of the seeds), clients and load, network chaos (delay, loss,
// duplication, partitions) until a heal time, execution lag, up to f
// Byzantine replicas — behaviours drawn from AllBehaviors, a Twins pair, or
// (at f = 2) coordinated faulty replicas — and, beside them, correct
// replicas that crash and restart at every point of the loop, sometimes all
// at once (a power cut).
func RandomOptions(seed uint64) Options {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	f := 1
	if rng.IntN(2) == 0 {
		f = 2
	}
	n := 3*f + 1
	opts := Options{
		Seed:           seed,
		F:              f,
		Ed25519:        seed%97 == 0,
		Clients:        1 + rng.IntN(3),
		CallsPerClient: 5 + rng.IntN(25),
		Callers:        1 + rng.IntN(4),
		InFlight:       1 + rng.IntN(3),
		HealAt:         rng.Int64N(8_000_000),
		Partitions:     rng.IntN(3) == 0,
		Twins:          -1,
	}
	if rng.IntN(4) == 0 {
		opts.ByzantineClients = 1
	}
	if rng.IntN(2) == 0 {
		opts.ExecLag = rng.Int64N(500_000)
	}
	opts.Net.MinDelay = 200 + rng.Int64N(2000)
	opts.Net.MaxDelay = opts.Net.MinDelay + rng.Int64N(30_000)
	opts.Net.LossRate = []float64{0, 0, 0.01, 0.05, 0.2}[rng.IntN(5)]
	opts.Net.DupRate = []float64{0, 0.05}[rng.IntN(2)]

	faulty := rng.IntN(f + 1)
	if f == 2 && rng.IntN(10) != 0 {
		faulty = 2 // f = 2 seeds nearly always have a pair, mostly coordinated
	}
	opts.Faulty = make(map[int]Behavior)
	taken := make([]bool, n)
	pick := func(preferPrimary bool) int {
		for {
			id := rng.IntN(n)
			if preferPrimary && rng.IntN(2) == 0 {
				id = 0
			}
			if !taken[id] {
				taken[id] = true
				return id
			}
		}
	}
	switch {
	case faulty == 2 && rng.IntN(4) != 0:
		// Coordinated: the faulty replicas share victims and act together.
		plan := &Coordination{Victims: make([]bool, n), Mode: []string{"split", "omit", "lie"}[rng.IntN(3)]}
		for i := 0; i < 2; i++ {
			opts.Faulty[pick(i == 0)] = Coordinated{Plan: plan}
		}
		for i := range plan.Victims {
			plan.Victims[i] = !taken[i] && rng.IntN(2) == 0
		}
	default:
		behaviors := AllBehaviors()
		for k := 0; k < faulty; k++ {
			if rng.IntN(6) == 0 && opts.Twins < 0 {
				opts.Twins = pick(true)
				continue
			}
			b := behaviors[rng.IntN(len(behaviors))]
			id := -1
			switch b.(type) {
			case EarlyPrePrepare, BogusNewView, ChoosyPrimary:
				// They act as the primary of a new view: usually be it.
				if rng.IntN(4) != 0 && !taken[1] {
					id = 1
					taken[1] = true
				}
			}
			if id < 0 {
				id = pick(k == 0)
			}
			opts.Faulty[id] = b
		}
	}
	// Benign faults beside the Byzantine ones: correct replicas that crash
	// at every point of the loop, and sometimes a power cut of all.
	if rng.IntN(2) == 0 {
		opts.Crash = CrashPlan{Crashes: rng.IntN(3), Rate: []int{20, 50, 200}[rng.IntN(3)]}
		for i := 0; i < n; i++ {
			if !taken[i] && rng.IntN(3) == 0 {
				opts.Crashing = append(opts.Crashing, i)
			}
		}
	}
	opts.PowerCut = rng.IntN(8) == 0
	mutAdversaries(seed, &opts)
	return opts
}
