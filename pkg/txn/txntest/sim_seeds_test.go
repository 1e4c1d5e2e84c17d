package txntest

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	flagSeeds     = flag.Int("seeds", 1000, "number of random seeds TestTxnSimulationSeeds runs")
	flagFirstSeed = flag.Uint64("first-seed", 1, "first seed of TestTxnSimulationSeeds")
	flagSeed      = flag.Uint64("seed", 0, "seed TestTxnReplaySeed replays (with -v for a trace)")
	flagVerbose   = flag.Bool("v-sim", false, "print every failing seed and the totals")
)

// TestTxnSimulationSeeds runs -seeds random seeds (1,000 by default) of the
// transaction simulator with all its checkers; `make sim-txn SEEDS=N` runs
// more. A failing seed is printed with the command that replays it.
func TestTxnSimulationSeeds(t *testing.T) {
	if testing.Short() {
		*flagSeeds = 100
	}
	start := time.Now()
	seeds := make(chan uint64)
	var (
		mu                                                               sync.Mutex
		failures                                                         []Result
		runs, txns, committed, checked, anomalies, abandoned, recoveries int
	)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range seeds {
				res := Run(RandomOptions(seed))
				mu.Lock()
				runs++
				txns += res.Txns
				committed += res.Committed
				checked += res.Checked
				anomalies += res.Anomalies
				abandoned += res.Abandoned
				recoveries += res.Recoveries
				if res.Failed() {
					failures = append(failures, res)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < *flagSeeds; i++ {
		seeds <- *flagFirstSeed + uint64(i)
	}
	close(seeds)
	wg.Wait()
	summary := fmt.Sprintf("transaction simulation: %d seeds run, %d with violations, %s\n"+
		"  %d transactions by correct clients, %d history ops committed, %d checked by X1, %d anomalies, %d transactions abandoned by Byzantine clients, %d recovered by correct clients (K4)",
		runs, len(failures), time.Since(start).Round(time.Millisecond), txns, committed, checked, anomalies, abandoned, recoveries)
	if *flagVerbose {
		fmt.Fprintln(os.Stderr, summary)
	} else {
		t.Log(summary)
	}
	var first *Result
	for i := range failures {
		if first == nil || failures[i].Seed < first.Seed {
			first = &failures[i]
		}
		if *flagVerbose {
			fmt.Fprintf(os.Stderr, "seed %d: %v\n", failures[i].Seed, failures[i].Violations)
		}
	}
	if first != nil {
		t.Errorf("first failing seed %d: %s\n  %v\n  replay: go test ./pkg/txn/txntest -run TestTxnReplaySeed -seed=%d -v", first.Seed, first.Summary, first.Violations, first.Seed)
	}
}

// TestTxnReplaySeed replays one seed with a trace (-seed=N -v).
func TestTxnReplaySeed(t *testing.T) {
	if *flagSeed == 0 {
		t.Skip("replays a seed given with -seed=N")
	}
	opts := RandomOptions(*flagSeed)
	if testing.Verbose() && os.Getenv("SIM_TRACE") != "" {
		opts.Trace = os.Stderr
	}
	res := Run(opts)
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
}
