package cli

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// txnBenchOptions are the flags of the transaction workloads (bench_txn*.go);
// the flags they share with noop and log (--dir, --clients, --duration,
// --warmup, --size, --client-key, --json, --progress, --call-timeout,
// --window) live in benchOptions.
type txnBenchOptions struct {
	app           string
	multiGroup    string // a percentage or a comma-separated list
	byzantine     string // likewise
	items         int
	load          bool
	loadBatch     int
	loadClients   int
	settleTimeout time.Duration
	shape         string
	history       string
	check         bool
	checkHistory  []string
	processBase   int
	recoveryGrace time.Duration
	byzClients    string
	byzPending    int
	byzPoll       time.Duration
	seed          uint64
}

const txnBenchHelp = `
Transaction workloads (replicas started with --app txn, any number of groups):
A, B, C and D are the paper's Table 3 micro-benchmarks (A: 4 reads and 4 writes
per transaction with 4-byte values; B: 2 and 2 with 1 KiB values; C: 8 reads;
D: 4 reads of 1 KiB values), over --items items with 4-byte keys spread evenly
over the cluster's range map; --multi-group PCT is the share of transactions
that span two groups. --shape paper (default) sends each as one transaction of
reads and blind writes, as Table 3 lists them; --shape guarded reads first and
then writes under cmp guards on the values read (the BFT Derby shape).
--load first inserts the items (in batches of --load-batch inserts per
transaction, --load-clients transactions in flight, each within one group),
then waits until no replica runs a compaction or flush for 2s (at most
--settle-timeout), so the load's compactions are not charged to the first
measured interval.
"bank" moves money between --items accounts: read two accounts, then one
update guarded by cmp on both; --load (re)sets every balance; the total is
checked in one transaction at the end; --history FILE writes the run's history
(pkg/txn/txntest/history text format) and --check runs the Elle checker on it;
several bench processes against one cluster take their own client keys and
--process-base, and --check-history FILE (repeated) merges and checks their
files.
--multi-group and --byzantine take comma-separated lists: each combination is
one measured interval, in one process, against the same cluster.
--byzantine PCT makes that share of the callers Byzantine (the paper's Fig. 5):
each has its own client key and sends multi-group transactions to every group
involved in its own envelope, collects the votes and abandons them, with at
most --byz-pending of them unterminated at a time; correct callers recover
them (txn.md K4) after --recovery-grace. The report gives committed
transactions/s of the correct callers, latency percentiles, aborts by reason,
and cluster CPU per committed transaction summed over every replica process.
A run's loss is against the runs without Byzantine callers at its mix that
bracket it in the list (the mean of the nearest before and after): list a
baseline before and after, as in --byzantine 0,30,0,30,0.
`

// addTxnBenchFlags registers the transaction workloads' flags on bench.
func addTxnBenchFlags(cmd *cobra.Command, o *txnBenchOptions) {
	cmd.Long += txnBenchHelp
	cmd.Example += `
  augustus init --dir ./c --groups 2 --clients 16 && augustus start --dir ./c --app txn &
  augustus bench --dir ./c --workload A --load --items 100000 --multi-group 0,20,100 --clients 32 --duration 20s
  augustus bench --dir ./c --workload A --items 100000 --multi-group 20 --byzantine 0,10,20,30
  augustus bench --dir ./c --workload bank --load --items 100 --history h.txt --check`
	fl := cmd.Flags()
	fl.Lookup("workload").Usage = `"noop", "log", or a transaction workload: "A", "B", "C", "D", "bank"`
	fl.StringVar(&o.app, "app", "", `the replicas' application, checked against the workload (the transaction workloads need "txn")`)
	fl.StringVar(&o.multiGroup, "multi-group", "0", "transaction workloads: percent of transactions spanning two groups (a comma-separated list runs each)")
	fl.StringVar(&o.byzantine, "byzantine", "0", "transaction workloads: percent of the callers that are Byzantine and abandon their transactions after the votes (a list runs each)")
	fl.IntVar(&o.items, "items", 0, "transaction workloads: items in the database (default 1000000 for A and C, 100000 for B and D; bank: accounts, default 100)")
	fl.BoolVar(&o.load, "load", false, "transaction workloads: load the items first (bank: (re)set every balance); --duration 0 only loads")
	fl.IntVar(&o.loadBatch, "load-batch", 0, "inserts per loading transaction (0: 500, or 100 for 1 KiB values)")
	fl.IntVar(&o.loadClients, "load-clients", 16, "loading transactions in flight")
	fl.DurationVar(&o.settleTimeout, "settle-timeout", 5*time.Minute, "after --load, wait at most this long for the replicas' compactions to finish (augustus_storage_compactions_running at 0 for 2s; 0: do not wait)")
	fl.StringVar(&o.shape, "shape", shapePaper, `"paper" (one transaction of reads and writes, Table 3) or "guarded" (read, then writes under cmp guards)`)
	fl.StringVar(&o.history, "history", "", "bank: write the run's history to this file (history text format)")
	fl.BoolVar(&o.check, "check", false, "bank: check the run's history with the Elle checker (txn.md X1) and fail on any anomaly")
	fl.StringArrayVar(&o.checkHistory, "check-history", nil, "check this history file with the Elle checker and exit, running nothing (repeat the flag to merge several processes' files)")
	fl.IntVar(&o.processBase, "process-base", 0, "bank: the first history process id (give each bench process against one cluster its own range; the run prints the range it used)")
	fl.DurationVar(&o.recoveryGrace, "recovery-grace", 0, "how long correct callers leave another owner's pending transaction before recovering it (0: the library's default, 100ms)")
	fl.StringVar(&o.byzClients, "byzantine-clients", "", "client names (cluster.json) for the Byzantine callers, comma-separated (default: the listed clients other than the bench's own)")
	fl.IntVar(&o.byzPending, "byz-pending", 1, "abandoned transactions a Byzantine caller keeps unterminated at once (the paper: 1)")
	fl.DurationVar(&o.byzPoll, "byz-poll", 30*time.Second, "how often a Byzantine caller asks the groups whether its abandoned transactions were terminated by another process (it hears of this process's recoveries at once; each poll is an ordered call in an envelope of its own)")
	fl.Uint64Var(&o.seed, "seed", 0, "seed of the workload's random choices (0: random)")
}

// parsePercents parses "20" or "0,20,100".
func parsePercents(flag, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 0 || v > 100 {
			return nil, fmt.Errorf("--%s %q: want percentages 0..100, comma-separated", flag, s)
		}
		out = append(out, v)
	}
	return out, nil
}

// txnRunConfig is one measured interval.
type txnRunConfig struct {
	multiPct, byzPct int
}

// txnBench is one bench process's state across its runs.
type txnBench struct {
	o       benchOptions
	t       txnBenchOptions
	stdout  io.Writer
	stderr  io.Writer
	c       *cluster.Cluster
	pmap    *oracle.Map
	ks      *keySpace
	shape   txnShape
	vsize   int
	key     ed25519.PrivateKey
	limits  txn.Limits
	reg     *prometheus.Registry
	cl      *coord.Client
	seed    uint64
	tags    *tagSource
	byzKeys []namedKey
	bank    *bankState
	// recovered tells the Byzantine callers which of their abandoned
	// transactions the correct callers terminated (bench_txn_byz.go).
	recovered *recoveryWatch
}

// namedKey is a client key with its name in cluster.json.
type namedKey struct {
	name string
	key  ed25519.PrivateKey
}

// checkTxnBenchOptions checks what needs no cluster.
func checkTxnBenchOptions(o benchOptions, t txnBenchOptions) error {
	if t.app != "" && t.app != appTxn {
		return fmt.Errorf("--app %q: the %s workload runs on the transaction engine: start the replicas with --app txn", t.app, o.workload)
	}
	switch {
	case badRate(o.rate):
		return fmt.Errorf("--rate %v: want 0 (unpaced) or a positive number of transactions per second", o.rate)
	case o.clients < 1:
		return fmt.Errorf("--clients %d: need at least 1", o.clients)
	case o.duration < 0 || (o.duration == 0 && !t.load):
		return fmt.Errorf("--duration %s: must be positive (0 only with --load: load and stop)", o.duration)
	case o.warmup < 0:
		return fmt.Errorf("--warmup %s: must not be negative", o.warmup)
	case o.callTimeout <= 0:
		return fmt.Errorf("--call-timeout %s: must be positive", o.callTimeout)
	case o.window < 0:
		return fmt.Errorf("--window %d: want 0 (the library's default) or a positive number of envelopes", o.window)
	case o.size < 0 || o.size > txn.DefaultLimits().MaxValueBytes:
		return fmt.Errorf("--size %d: the value size, want 0 (the workload's) .. %d", o.size, txn.DefaultLimits().MaxValueBytes)
	case t.shape != shapePaper && t.shape != shapeGuarded:
		return fmt.Errorf("--shape %q: want %q or %q", t.shape, shapePaper, shapeGuarded)
	case t.loadClients < 1:
		return fmt.Errorf("--load-clients %d: need at least 1", t.loadClients)
	case t.settleTimeout < 0:
		return fmt.Errorf("--settle-timeout %s: must not be negative (0 does not wait)", t.settleTimeout)
	case t.loadBatch < 0 || t.loadBatch > txn.DefaultLimits().MaxOps:
		return fmt.Errorf("--load-batch %d: want 0 (auto) .. %d", t.loadBatch, txn.DefaultLimits().MaxOps)
	case t.byzPending < 1:
		return fmt.Errorf("--byz-pending %d: need at least 1", t.byzPending)
	case t.byzPoll <= 0:
		return fmt.Errorf("--byz-poll %s: must be positive", t.byzPoll)
	case t.recoveryGrace < 0:
		return fmt.Errorf("--recovery-grace %s: must not be negative", t.recoveryGrace)
	case t.processBase < 0:
		return fmt.Errorf("--process-base %d: must not be negative", t.processBase)
	case (t.history != "" || t.check) && o.workload != workloadBank:
		return fmt.Errorf("--history and --check record the bank workload's register history: use --workload bank")
	}
	if _, err := parsePercents("multi-group", t.multiGroup); err != nil {
		return err
	}
	if _, err := parsePercents("byzantine", t.byzantine); err != nil {
		return err
	}
	switch o.progress {
	case "auto", "bar", "lines", "off":
	default:
		return fmt.Errorf("--progress %q: want \"auto\", \"bar\", \"lines\" or \"off\"", o.progress)
	}
	return nil
}

// runTxnBench runs a transaction workload: the optional load, then one
// measured interval per combination of --multi-group and --byzantine.
func runTxnBench(ctx context.Context, stdout, stderr io.Writer, o benchOptions, t txnBenchOptions) error {
	if len(t.checkHistory) > 0 {
		return runCheckHistory(stdout, t.checkHistory)
	}
	if err := checkTxnBenchOptions(o, t); err != nil {
		return err
	}
	mixes, _ := parsePercents("multi-group", t.multiGroup)
	byzs, _ := parsePercents("byzantine", t.byzantine)
	b := &txnBench{o: o, t: t, stdout: stdout, stderr: stderr, limits: txn.DefaultLimits(), recovered: newRecoveryWatch()}
	if err := b.setup(ctx, mixes, byzs); err != nil {
		return err
	}
	defer b.close()
	out, err := openJSONOutput(o.jsonPath)
	if err != nil {
		return err
	}
	defer out.close()

	rep := &txnBenchReport{Workload: o.workload, Shape: b.t.shape, Groups: len(b.c.Groups), Items: b.ks.items,
		ValueSize: b.vsize, Seed: b.seed, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version()}
	if t.load {
		ls, err := b.loadStep(ctx)
		rep.Load = ls
		if err != nil {
			return err
		}
		// Also with --duration 0: a load is mostly followed by a
		// measurement, in this process or the next.
		waited, state := b.settleAfterLoad(ctx, t.settleTimeout)
		ls.SettleSeconds, ls.Settle = waited.Seconds(), state
		fmt.Fprintf(b.stderr, "bench: the replicas' compactions after the load: %s (%.1fs)\n", state, waited.Seconds())
	}
	var problems []string
	for _, mix := range mixes {
		if o.duration == 0 {
			break
		}
		for _, byz := range byzs {
			res, err := b.run(ctx, txnRunConfig{multiPct: mix, byzPct: byz})
			if err != nil {
				return err
			}
			rep.Runs = append(rep.Runs, res)
			if err := printTxnRun(stdout, res); err != nil {
				return err
			}
			for _, p := range res.Problems {
				problems = append(problems, fmt.Sprintf("multi-group %d%%, byzantine %d%%: %s", mix, byz, p))
			}
		}
	}
	rep.Fig5 = fig5Rows(rep.Runs)
	if len(rep.Fig5) > 0 {
		printFig5(stdout, rep.Fig5)
	}
	if b.bank != nil {
		bank, err := b.bankFinish(ctx)
		if err != nil {
			return err
		}
		rep.Bank = bank
		printBankReport(stdout, bank)
		problems = append(problems, bank.Problems...)
	}
	rep.OK = len(problems) == 0
	rep.Problems = problems
	if out != nil {
		if err := out.write(rep); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", o.jsonPath)
	}
	if !rep.OK {
		return fmt.Errorf("bench failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// setup loads the cluster and keys, connects the correct callers' client
// and prepares the key space.
func (b *txnBench) setup(ctx context.Context, mixes, byzs []int) error {
	o, t := b.o, b.t
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	b.c = c
	if b.pmap, err = oracle.FromCluster(c); err != nil {
		return err
	}
	if o.workload == workloadBank {
		b.shape = txnShape{name: workloadBank, reads: 2} // the two accounts of a transfer
		if t.items == 0 {
			t.items = 100
		}
		t.shape = "transfer"
		if t.items < 2 || t.items > b.limits.MaxOps {
			return fmt.Errorf("--items %d: the bank needs 2..%d accounts (its total is read in one transaction)", t.items, b.limits.MaxOps)
		}
	} else {
		b.shape = txnShapes[o.workload]
		if t.items == 0 {
			// The paper's databases are 3M and 1M items; these load in
			// about a minute on the 2-core machine of docs/benchmarks/txn.md.
			t.items = defaultItemsSmall
			if b.shape.valueSize > 4 {
				t.items = defaultItemsLarge
			}
		}
	}
	b.t = t
	b.vsize = b.shape.valueSize
	if o.size > 0 {
		b.vsize = o.size
	}
	suffix := []byte(nil)
	if o.workload == workloadBank {
		suffix = []byte("$acct")
	}
	offset := uint32(0)
	if b.shape.valueSize > 4 {
		offset = 1
	}
	if b.ks, err = newKeySpace(b.pmap, t.items, offset, suffix); err != nil {
		return err
	}
	for _, mix := range mixes {
		if err := checkGen(b.ks, b.shape.reads+b.shape.writes, mix); err != nil {
			return err
		}
	}
	maxByz := 0
	for _, p := range byzs {
		maxByz = max(maxByz, byzCount(o.clients, p))
		if p > 0 {
			if err := checkGen(b.ks, b.shape.reads+b.shape.writes, 100); err != nil {
				return fmt.Errorf("--byzantine %d: Byzantine callers send multi-group transactions: %w", p, err)
			}
		}
	}
	if maxByz >= o.clients && o.clients > 0 && maxByz > 0 {
		return fmt.Errorf("--byzantine: with %d callers, %d would be Byzantine and none correct", o.clients, maxByz)
	}
	b.key, err = loadBenchClientKey(c, o)
	if err != nil {
		return err
	}
	if b.byzKeys, err = byzantineKeys(c, o, t, b.key, maxByz); err != nil {
		return err
	}
	b.seed = t.seed
	if b.seed == 0 {
		b.seed = rand.Uint64()
	}
	b.tags = newTagSource()
	if o.workload == workloadBank {
		if b.bank, err = newBankState(b); err != nil {
			return err
		}
	}
	b.reg = prometheus.NewRegistry()
	tuning := coord.Tuning{RecoveryGrace: t.recoveryGrace}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b.cl, err = coord.NewClient(startCtx, coord.ClientConfig{
		Cluster: c, Key: b.key, Map: b.pmap, Tuning: tuning, Seed: b.seed, InFlight: o.window,
		Registerer: b.reg, Logger: slog.New(slog.NewTextHandler(b.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		GroupTimeout: 500 * time.Millisecond, Observer: b.recovered,
	})
	if err != nil {
		return fmt.Errorf("connect to the cluster: %w", withAppHint(err, o.dir))
	}
	return nil
}

func (b *txnBench) close() {
	if b.cl != nil {
		_ = b.cl.Close()
	}
}

// Default --items of the workloads with 4-byte values (A, C) and with 1
// KiB values (B, D).
const (
	defaultItemsSmall = 1_000_000
	defaultItemsLarge = 100_000
)

// byzCount is how many of n callers are Byzantine at pct percent.
func byzCount(n, pct int) int { return (n*pct + 50) / 100 }

// txnCaller is one correct caller's record of a measured interval; only
// its goroutine writes it until the interval ends.
type txnCaller struct {
	hist, histSingle, histMulti   *hdrhistogram.Histogram
	committed, single, multi      int64
	aborted                       map[string]int64
	failed, timedOut, outstanding int64
	drained                       int64
	absentReads                   int64
	firstErr                      error
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

// run measures one interval.
func (b *txnBench) run(ctx context.Context, rc txnRunConfig) (*txnRunResult, error) {
	o := b.o
	nByz := byzCount(o.clients, rc.byzPct)
	nCorrect := o.clients - nByz
	res := &txnRunResult{
		Workload: o.workload, Shape: b.t.shape, Groups: len(b.c.Groups), Items: b.ks.items, ValueSize: b.vsize,
		MultiGroupPct: rc.multiPct, ByzantinePct: rc.byzPct, Callers: o.clients, CorrectCallers: nCorrect,
		ByzantineCallers: nByz, StartedAt: time.Now().UTC(), WarmupSeconds: o.warmup.Seconds(),
		CallTimeoutSeconds: o.callTimeout.Seconds(), RecoveryGraceSeconds: b.grace().Seconds(),
		LoadAvgBefore: loadAvg(), CallBytesSingle: b.callBytesSingle(), replicasPerGroup: b.c.N(),
		RateLimit: o.rate,
	}
	fmt.Fprintf(b.stderr, "bench: workload %s (%s), %d groups, %d items, multi-group %d%%, %d callers (%d Byzantine), warm-up %s, measuring %s\n",
		o.workload, b.t.shape, len(b.c.Groups), b.ks.items, rc.multiPct, o.clients, nByz, o.warmup, o.duration)

	var byzs []*byzCaller
	if nByz > 0 {
		var err error
		if byzs, err = b.startByzantine(ctx, nByz, nCorrect); err != nil {
			return nil, err
		}
	}
	runCtx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	var phase atomic.Int32
	var completed, lastDone atomic.Int64
	rejected := newAbort()
	callers := make([]*txnCaller, nCorrect)
	// --rate: one limiter for the correct callers, burst 1, so transactions
	// start evenly spaced (an offered load, met while the callers keep up;
	// the Byzantine callers run unpaced).
	var pace *rate.Limiter
	if o.rate > 0 {
		pace = rate.NewLimiter(rate.Limit(o.rate), 1)
	}
	var wg sync.WaitGroup
	for i := range callers {
		tc := &txnCaller{hist: newHist(), histSingle: newHist(), histMulti: newHist(), aborted: map[string]int64{}}
		callers[i] = tc
		gen := &txnGen{ks: b.ks, reads: b.shape.reads, writes: b.shape.writes, multiPct: rc.multiPct,
			rng: rand.New(rand.NewPCG(b.seed, uint64(rc.multiPct)<<40|uint64(rc.byzPct)<<32|uint64(i)))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.callerLoop(runCtx, i, tc, gen, pace, &phase, &completed, &lastDone, rejected)
		}()
	}
	var byzWG sync.WaitGroup
	byzCtx, stopByz := context.WithCancel(ctx)
	defer stopByz()
	for _, bc := range byzs {
		byzWG.Add(1)
		go func() {
			defer byzWG.Done()
			bc.run(byzCtx)
		}()
	}
	waitCallers := func() {
		stopCallers()
		wg.Wait()
		stopByz()
		byzWG.Wait()
	}
	defer waitCallers()

	prog := newBenchProgress(b.stderr, o)
	defer prog.finish()
	if err := benchWait(ctx, o.warmup, prog, rejected, func() {}); err != nil {
		return nil, b.rejectedRun(err)
	}
	before := b.snapshot(ctx)
	t0 := time.Now()
	phase.Store(phaseMeasure)
	profiles := b.startProfiles(ctx, rc)
	err := benchWait(ctx, o.duration, prog, rejected, func() { prog.update(time.Since(t0), completed.Load()) })
	phase.Store(phaseDone)
	elapsed := time.Since(t0)
	if err != nil {
		profiles.wait()
		return nil, b.rejectedRun(err)
	}
	after := b.snapshot(ctx)
	prog.finish()
	res.Profiles = profiles.wait()
	stopByz()
	byzWG.Wait()
	drain := min(o.callTimeout, maxDrain)
	res.DrainSeconds = drain.Seconds()
	drainCallers(&wg, drain)
	waitCallers()

	res.MeasuredSeconds = elapsed.Seconds()
	res.collect(callers)
	res.StallWindowSeconds = min(progressInterval, o.duration).Seconds()
	res.LastCompletionSeconds = -1
	if last := lastDone.Load(); last > 0 {
		res.LastCompletionSeconds = max(0, time.Unix(0, last).Sub(t0).Seconds())
	}
	res.Stalled = res.LastCompletionSeconds < 0 || res.MeasuredSeconds-res.LastCompletionSeconds > res.StallWindowSeconds
	res.fillCPU(before, after)
	if len(byzs) > 0 {
		res.Byzantine = b.finishByzantine(ctx, byzs)
	}
	res.LoadAvgAfter = loadAvg()
	res.judge(o)
	return res, nil
}

// startProfiles pulls, with --profile, a CPU profile of every replica of
// the cluster during the measured interval of rc, into a directory of its
// own under --profile (multi-N-byz-M) since one process measures several.
func (b *txnBench) startProfiles(ctx context.Context, rc txnRunConfig) *profileRun {
	groups := make([]*cluster.Group, len(b.c.Groups))
	for i := range b.c.Groups {
		groups[i] = &b.c.Groups[i]
	}
	dir := filepath.Join(b.o.profileDir, fmt.Sprintf("multi-%d-byz-%d", rc.multiPct, rc.byzPct))
	return startProfilesIn(ctx, b.c, groups, b.o, dir)
}

// grace is the recovery grace the correct callers use.
func (b *txnBench) grace() time.Duration {
	if b.t.recoveryGrace > 0 {
		return b.t.recoveryGrace
	}
	return coord.DefaultTuning().RecoveryGrace
}

// rejectedRun says what to do about a run the replicas' rejection ended.
func (b *txnBench) rejectedRun(err error) error {
	if !errors.Is(err, client.ErrRejected) {
		return err
	}
	return fmt.Errorf("%w: %w: the %s workload needs replicas running --app txn (augustus start --dir %s --app txn)",
		errRejected, err, b.o.workload, b.o.dir)
}

// callerLoop runs transactions until the measured interval ends, then
// finishes the one in flight, classifying each as bench.go's callers do.
func (b *txnBench) callerLoop(ctx context.Context, idx int, tc *txnCaller, gen *txnGen, pace *rate.Limiter, phase *atomic.Int32, completed, lastDone *atomic.Int64, rejected *abort) {
	for phase.Load() != phaseDone && ctx.Err() == nil {
		if pace != nil && pace.Wait(ctx) != nil {
			return
		}
		if phase.Load() == phaseDone {
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, b.o.callTimeout)
		start := time.Now()
		gt := gen.next()
		var out txnOutcome
		if b.bank != nil {
			out = b.bank.transfer(callCtx, b, idx, gt, gen.rng)
		} else {
			out = b.doTxn(callCtx, gt)
		}
		lat := time.Since(start)
		timedOut := out.err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded)
		cancel()
		if errors.Is(out.err, client.ErrRejected) {
			rejected.fire(out.err)
			return
		}
		ph := phase.Load()
		var ab *coord.AbortedError
		switch {
		case ph == phaseWarmup:
			continue
		case out.err == nil && ph == phaseDone:
			tc.drained++
			return
		case out.err == nil:
			tc.committed++
			tc.absentReads += int64(out.absent)
			completed.Add(1)
			lastDone.Store(time.Now().UnixNano())
			us := max(1, lat.Microseconds())
			_ = tc.hist.RecordValue(us)
			if gt.multi {
				tc.multi++
				_ = tc.histMulti.RecordValue(us)
			} else {
				tc.single++
				_ = tc.histSingle.RecordValue(us)
			}
			continue
		case errors.As(out.err, &ab):
			tc.aborted[abortReason(ab)]++
			continue
		case ctx.Err() != nil:
			tc.outstanding++
			return
		case timedOut:
			tc.timedOut++
			out.err = fmt.Errorf("no outcome within --call-timeout %s", b.o.callTimeout)
		default:
			tc.failed++
		}
		if tc.firstErr == nil {
			tc.firstErr = out.err
		}
	}
}

// abortReason names an abort for the report.
func abortReason(ab *coord.AbortedError) string {
	if ab.Cause == nil {
		return "unknown"
	}
	return ab.Cause.Reason.String()
}

// txnOutcome is what one workload transaction came to.
type txnOutcome struct {
	err    error
	absent int // reads that found no item (the database is not loaded)
}

// doTxn runs one A–D transaction in the chosen shape.
func (b *txnBench) doTxn(ctx context.Context, gt genTxn) txnOutcome {
	seq := uint64(b.tags.next(0))
	if b.t.shape == shapePaper || len(gt.writes) == 0 {
		res, err := b.cl.Do(ctx, coord.Ops(paperOps(b.ks, gt, b.vsize, seq)), coord.Options{})
		return txnOutcome{err: err, absent: countAbsent(res, len(gt.reads))}
	}
	res, err := b.cl.Do(ctx, coord.Ops(guardedReadOps(b.ks, gt)), coord.Options{})
	if err != nil {
		return txnOutcome{err: err}
	}
	absent := countAbsent(res, len(gt.reads)+len(gt.writes))
	vals := make([][]byte, len(gt.writes))
	present := make([]bool, len(gt.writes))
	for j := range gt.writes {
		r := res.Ops[len(gt.reads)+j]
		vals[j], present[j] = r.Value, r.Present
	}
	// The guarded update is not retried by the library: a retry after a
	// conflict would compare against values that may be stale; the caller
	// starts over with a fresh read instead.
	_, err = b.cl.Do(ctx, coord.Ops(guardedWriteOps(b.ks, gt, vals, present, b.vsize, seq)), coord.Options{MaxRetries: -1})
	return txnOutcome{err: err, absent: absent}
}

// countAbsent counts the reads among the first n operations that found no
// value.
func countAbsent(res *coord.Result, n int) int {
	if res == nil || !res.Committed {
		return 0
	}
	k := 0
	for i := 0; i < n && i < len(res.Ops); i++ {
		if !res.Ops[i].Present {
			k++
		}
	}
	return k
}

// callBytesSingle is the size of the call that carries a typical
// single-group transaction of the workload (the noop call of the same size
// is the baseline of the CPU goal).
func (b *txnBench) callBytesSingle() int {
	gen := &txnGen{ks: b.ks, reads: b.shape.reads, writes: b.shape.writes, rng: rand.New(rand.NewPCG(1, 2))}
	gt := gen.next()
	var ops []txn.Op
	if b.bank != nil {
		ops = b.bank.updateOps(gt, [2][]byte{encodeBankValue(1000, 1<<40), encodeBankValue(1000, 1<<40)}, 1<<40)
	} else {
		ops = paperOps(b.ks, gt, b.vsize, 0)
	}
	groups := txn.InvolvedGroups(ops, b.pmap)
	gv := make([]txn.GroupVersion, len(groups))
	for i, g := range groups {
		gv[i] = txn.GroupVersion{Group: g}
	}
	t := &txn.Txn{Ops: ops, Groups: gv, Owner: b.cl.ID(), Nonce: 1 << 20, Watermark: 1 << 20}
	return len(txn.NewTxnCall(t.Encode(), nil))
}
