package bfttest

import (
	"math/rand/v2"
)

// RandomOptions derives a whole run from a seed: group size, clients and
// load, network chaos (delay, loss, duplication, partitions) until a heal
// time, and up to f faulty replicas with behaviours drawn from
// AllBehaviors, biased towards a faulty primary.
func RandomOptions(seed uint64) Options {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	f := 1
	if rng.IntN(10) == 0 {
		f = 2
	}
	n := 3*f + 1
	opts := Options{
		Seed:              seed,
		F:                 f,
		Ed25519:           seed%97 == 0,
		Clients:           1 + rng.IntN(4),
		RequestsPerClient: 5 + rng.IntN(25),
		Outstanding:       1 + rng.IntN(4),
		PayloadSize:       rng.IntN(64),
		HealAt:            rng.Int64N(8_000_000),
		Partitions:        rng.IntN(3) == 0,
	}
	if rng.IntN(4) == 0 {
		opts.ByzantineClients = 1
	}
	if rng.IntN(3) == 0 {
		opts.TransferDelay = rng.Int64N(2_000_000)
	}
	opts.Net.MinDelay = 200 + rng.Int64N(2000)
	opts.Net.MaxDelay = opts.Net.MinDelay + rng.Int64N(30_000)
	opts.Net.LossRate = []float64{0, 0, 0.01, 0.05, 0.2}[rng.IntN(5)]
	opts.Net.DupRate = []float64{0, 0.05}[rng.IntN(2)]
	behaviors := AllBehaviors()
	faulty := rng.IntN(f + 1)
	if faulty > 0 {
		opts.Faulty = make(map[int]Behavior)
		for len(opts.Faulty) < faulty {
			id := rng.IntN(n)
			if len(opts.Faulty) == 0 && rng.IntN(2) == 0 {
				id = 0 // the primary of view 0
			}
			b := behaviors[rng.IntN(len(behaviors))]
			switch b.(type) {
			case EarlyPrePrepare, BogusNewView:
				// They act as the primary of a new view: usually be it.
				if rng.IntN(4) != 0 {
					id = 1
				}
			}
			if opts.Faulty[id] != nil {
				continue
			}
			opts.Faulty[id] = b
		}
	}
	return opts
}
