package bfttest

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
)

var (
	flagSeeds     = flag.Int("seeds", 2000, "number of random simulation seeds TestSimulationSeeds runs")
	flagFirstSeed = flag.Uint64("first-seed", 1, "first seed of TestSimulationSeeds")
	flagSeed      = flag.Uint64("seed", 0, "seed TestReplaySeed replays (with -v for a trace)")
	flagVerbose   = flag.Bool("v-sim", false, "print a summary line per failing seed and totals")
	flagBudget    = flag.Duration("sim-budget", 0, "stop handing out seeds after this wall time (0: no limit; make mutate)")
	flagStop      = flag.Bool("stop-on-failure", false, "stop handing out seeds after the first failure (make mutate); the lowest failing seed run is reported")
)

// TestSimulationSeeds runs -seeds random seeds (2,000 by default) through
// the simulator and its checkers; `make sim SEEDS=N` runs more. A failing
// seed is printed with the command that replays it, and is then kept in
// regressionSeeds.
func TestSimulationSeeds(t *testing.T) {
	if testing.Short() {
		*flagSeeds = 200
	}
	start := time.Now()
	seeds := make(chan uint64)
	type failure struct {
		seed uint64
		res  Result
	}
	var (
		mu       sync.Mutex
		failures []failure
		runs     int
		events   uint64
		core     bft.Stats
		cov      Coverage
		maxHeal  int64
	)
	stop := make(chan struct{})
	var stopOnce sync.Once
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				res := runRecovered(seed)
				mu.Lock()
				runs++
				events += res.Events
				core = addStats(core, res.Core)
				cov.Add(&res.Coverage)
				if res.AfterHeal > maxHeal && !res.Failed() {
					maxHeal = res.AfterHeal
				}
				if res.Failed() {
					failures = append(failures, failure{seed, res})
				}
				mu.Unlock()
				if res.Failed() && *flagStop {
					stopOnce.Do(func() { close(stop) })
				}
			}
		}()
	}
	var budget <-chan time.Time
	if *flagBudget > 0 {
		budget = time.After(*flagBudget)
	}
hand:
	for i := 0; i < *flagSeeds; i++ {
		select {
		case seeds <- *flagFirstSeed + uint64(i):
		case <-stop:
			break hand
		case <-budget:
			break hand
		}
	}
	close(seeds)
	wg.Wait()
	first := uint64(0)
	for _, f := range failures {
		if first == 0 || f.seed < first {
			first = f.seed
		}
	}
	summary := fmt.Sprintf("simulation: %d seeds run, %d with violations, %d events, %s\n"+
		"  coverage: %s\n"+
		"  core: %d request timeouts, %d equivocations seen, %d batches by commit certificate, %d fetches, %d stable checkpoints\n"+
		"  dropped by the core: %v (%v); slowest completion after heal %dms",
		runs, len(failures), events, time.Since(start).Round(time.Millisecond), cov.String(),
		core.RequestTimeouts, core.Equivocations, core.CommittedFetched, core.Fetches, core.StableCheckpoints,
		core.Dropped, bft.DropReasonNames, maxHeal/1000)
	if *flagVerbose {
		fmt.Fprintln(os.Stderr, summary)
	} else {
		t.Log(summary)
	}
	// Every corner the adversary is built to reach must be reached by a
	// default run (issue 12's coverage counters).
	if runs >= 2000 && *flagFirstSeed == 1 {
		if z := cov.Zero(); len(z) > 0 {
			t.Errorf("coverage: never reached in %d seeds: %v", runs, z)
		}
	}
	for _, f := range failures {
		if f.seed == first && *flagStop {
			// One line for the mutation gate (internal/mutate) to parse.
			fmt.Fprintf(os.Stderr, "stop-on-failure: seed %d failed after %d seeds in %s: %s\n", f.seed, runs,
				time.Since(start).Round(time.Millisecond), strings.ReplaceAll(f.res.Violations[0], "\n", " "))
		}
		if f.seed == first {
			t.Errorf("first failing seed %d: %s\n  %v\n  replay: go test ./pkg/bft/bfttest -run TestReplaySeed -seed=%d -v", f.seed, f.res.Summary, f.res.Violations, f.seed)
		} else if *flagVerbose {
			fmt.Fprintf(os.Stderr, "seed %d: %v\n", f.seed, f.res.Violations)
		}
	}
}

// runRecovered runs one seed; a panic (an invariant of the core, under the
// invariants tag) is that seed's violation rather than the end of the run.
func runRecovered(seed uint64) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			res = Result{Seed: seed, Violations: []string{fmt.Sprintf("panic: %v", p)}, Summary: "panicked"}
		}
	}()
	return Run(RandomOptions(seed))
}

// TestReplaySeed replays one seed with a full trace (-seed=N -v).
func TestReplaySeed(t *testing.T) {
	if *flagSeed == 0 {
		t.Skip("replays a seed given with -seed=N")
	}
	opts := RandomOptions(*flagSeed)
	if testing.Verbose() {
		opts.Trace = os.Stderr
	}
	res := Run(opts)
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
}
