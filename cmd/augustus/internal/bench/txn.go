package bench

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// The transaction workloads (table3.go, bank.go, buzzer.go) run on the
// transaction engine through one pkg/txn/coord client shared by every
// correct caller, so the calls of concurrent transactions travel in shared
// signed envelopes, as from a gateway. One process measures one interval
// per combination of --multi-group and --byzantine, against the same
// cluster, after an optional --load.

// txnOptions are the flags every transaction workload shares; the flags
// they share with noop and log (--dir, --clients, --duration, --warmup,
// --size, --client-key, --json, --progress, --call-timeout, --window, --rate)
// live in Options.
type txnOptions struct {
	app           string
	multiGroup    string // a percentage or a comma-separated list
	byzantine     string // likewise
	items         int
	load          bool
	loadBatch     int
	loadClients   int
	settleTimeout time.Duration
	recoveryGrace time.Duration
	byzClients    string
	byzPending    int
	byzPoll       time.Duration
	seed          uint64
}

const txnHelp = `Transaction workloads (replicas started with --app txn, any number of groups),
through one transaction client (pkg/txn/coord) shared by the correct callers:
--items is the size of the database, --multi-group PCT the share of
transactions that span two groups. --load first inserts the items (in batches
of --load-batch inserts per transaction, --load-clients transactions in flight,
each within one group), then waits until no replica runs a compaction or flush
for 2s (at most --settle-timeout), so the load's compactions are not charged to
the first measured interval. --multi-group and --byzantine take comma-separated
lists: each combination is one measured interval, in one process, against the
same cluster. The report gives committed transactions/s of the correct callers
(with --rate, whether the cluster kept up with the offered load), latency
percentiles (all, single- and multi-group, and by kind of transaction), aborts
by reason (retried by the client library, and aborted for good), errors by
kind, and CPU per committed transaction summed over every replica process of
every group (--replica-cpu: each replica's) and of this process.

--byzantine PCT makes that share of the callers Byzantine (the paper's Fig. 5):
each has its own client key and sends multi-group transactions to every group
involved in its own envelope, collects the votes and abandons them, with at
most --byz-pending of them unterminated at a time; correct callers recover
them (txn.md K4) after --recovery-grace. A run's loss is against the runs
without Byzantine callers at its mix that bracket it in the list (the mean of
the nearest before and after): list a baseline before and after, as in
--byzantine 0,30,0,30,0.
`

// addTxnFlags registers the transaction workloads' shared flags.
func addTxnFlags(fs *pflag.FlagSet, t *txnOptions) {
	fs.StringVar(&t.app, "app", "", `the replicas' application, checked against the workload (the transaction workloads need "txn")`)
	fs.StringVar(&t.multiGroup, "multi-group", "0", "transaction workloads: percent of transactions spanning two groups (a comma-separated list runs each)")
	fs.StringVar(&t.byzantine, "byzantine", "0", "transaction workloads: percent of the callers that are Byzantine and abandon their transactions after the votes (a list runs each)")
	fs.IntVar(&t.items, "items", 0, "transaction workloads: items in the database (default 1000000 for A and C, 100000 for B and D; bank: accounts, default 100; buzzer: users, default 100000)")
	fs.BoolVar(&t.load, "load", false, "transaction workloads: load the items first (bank: (re)set every balance; buzzer: the social graph); --duration 0 only loads")
	fs.IntVar(&t.loadBatch, "load-batch", 0, "inserts per loading transaction (0: 500, or 100 for 1 KiB values)")
	fs.IntVar(&t.loadClients, "load-clients", 16, "loading transactions in flight")
	fs.DurationVar(&t.settleTimeout, "settle-timeout", 5*time.Minute, "after --load, wait at most this long for the replicas' compactions to finish (augustus_storage_compactions_running at 0 for 2s; 0: do not wait)")
	fs.DurationVar(&t.recoveryGrace, "recovery-grace", 0, "how long correct callers leave another owner's pending transaction before recovering it (0: the library's default, 100ms)")
	fs.StringVar(&t.byzClients, "byzantine-clients", "", "client names (cluster.json) for the Byzantine callers, comma-separated (default: the listed clients other than the bench's own)")
	fs.IntVar(&t.byzPending, "byz-pending", 1, "abandoned transactions a Byzantine caller keeps unterminated at once (the paper: 1)")
	fs.DurationVar(&t.byzPoll, "byz-poll", 30*time.Second, "how often a Byzantine caller asks the groups whether its abandoned transactions were terminated by another process (it hears of this process's recoveries at once; each poll is an ordered call in an envelope of its own)")
	fs.Uint64Var(&t.seed, "seed", 0, "seed of the workload's random choices (0: random)")
}

// txnWorkload is a transaction workload.
type txnWorkload interface {
	Workload
	// info describes the workload for the report (after Setup).
	info() txnInfo
	// mixRow is the report's "mix" row of the interval rc.
	mixRow(rc RunConfig) string
	// sampleOps are the operations of a typical single-group transaction
	// of the workload: the report gives the size of the call carrying it
	// (the size of the noop call to compare with).
	sampleOps() []txn.Op
}

// txnInfo describes a transaction workload in the report.
type txnInfo struct {
	// shape names the transactions' shape ("paper", "guarded",
	// "transfer", "buzzer").
	shape string
	// items is the size of the database (buzzer: users); valueSize the
	// size of the values written.
	items, valueSize int
}

// abandoner is a transaction workload whose transactions Byzantine callers
// can send and abandon (--byzantine).
type abandoner interface {
	// abandonOps returns the operations of one multi-group update for the
	// Byzantine caller bc to abandon (false: none this time).
	abandonOps(ctx context.Context, bc *byzCaller) ([]txn.Op, bool)
}

// finisher is a transaction workload with checks at the end of the
// process (the bank's total and history).
type finisher interface {
	finish(ctx context.Context, rep *TxnReport) error
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

// txnEnv is what a transaction workload runs against, in one bench
// process: the cluster, the correct callers' client and the Byzantine
// callers' keys.
type txnEnv struct {
	o      *Options
	t      txnOptions
	h      Host
	stdout io.Writer
	stderr io.Writer
	c      *cluster.Cluster
	pmap   *oracle.Map
	key    ed25519.PrivateKey
	limits txn.Limits
	reg    *prometheus.Registry
	cl     *coord.Client
	seed   uint64
	// tags hands out unique written values (bank.go).
	tags    *tagSource
	byzKeys []namedKey
	// recovered tells the Byzantine callers which of their abandoned
	// transactions the correct callers terminated (byzantine.go).
	recovered *recoveryWatch
}

// namedKey is a client key with its name in cluster.json.
type namedKey struct {
	name string
	key  ed25519.PrivateKey
}

// checkTxnOptions checks what needs no cluster.
func checkTxnOptions(o *Options) error {
	t := o.txn
	if t.app != "" && t.app != "txn" {
		return fmt.Errorf("--app %q: the %s workload runs on the transaction engine: start the replicas with --app txn", t.app, o.workload)
	}
	switch {
	case badRate(o.rate):
		return fmt.Errorf("--rate %v: want 0 (unpaced) or a positive number of transactions per second up to %d (an open loop)", o.rate, maxRate)
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
	}
	if _, err := parsePercents("multi-group", t.multiGroup); err != nil {
		return err
	}
	if _, err := parsePercents("byzantine", t.byzantine); err != nil {
		return err
	}
	return checkProgress(o.progress)
}

// runTxn runs a transaction workload: the optional load, then one
// measured interval per combination of --multi-group and --byzantine.
func runTxn(ctx context.Context, stdout, stderr io.Writer, o *Options, h Host, spec *Spec) error {
	if err := checkTxnOptions(o); err != nil {
		return err
	}
	mixes, _ := parsePercents("multi-group", o.txn.multiGroup)
	byzs, _ := parsePercents("byzantine", o.txn.byzantine)
	var runs []RunConfig
	for _, mix := range mixes {
		for _, byz := range byzs {
			runs = append(runs, RunConfig{MultiGroupPct: mix, ByzantinePct: byz})
		}
	}
	env := &txnEnv{o: o, t: o.txn, h: h, stdout: stdout, stderr: stderr, limits: txn.DefaultLimits(), recovered: newRecoveryWatch()}
	if err := env.prepare(byzs); err != nil {
		return err
	}
	w, err := spec.newTxn(env, o.workload, o.perWorkload[spec])
	if err != nil {
		return err
	}
	if err := w.Setup(runs); err != nil {
		return err
	}
	if _, ok := w.(abandoner); !ok && slices.Max(byzs) > 0 {
		return fmt.Errorf("--byzantine: the %s workload has no Byzantine callers", o.workload)
	}
	if err := env.connect(ctx); err != nil {
		return err
	}
	defer env.close()
	out, err := openJSONOutput(o.jsonPath)
	if err != nil {
		return err
	}
	defer out.close()

	in := w.info()
	m := thisMachine()
	rep := &TxnReport{Workload: o.workload, Shape: in.shape, Groups: len(env.c.Groups), Items: in.items,
		ValueSize: in.valueSize, Seed: env.seed, NumCPU: m.Cores, GoVersion: m.GoVersion, Provenance: provenance(o, h)}
	if o.txn.load {
		ls, err := w.Load(ctx)
		rep.Load = ls
		if err != nil {
			return err
		}
		if ls != nil {
			// Also with --duration 0: a load is mostly followed by a
			// measurement, in this process or the next.
			waited, state := env.settleAfterLoad(ctx, o.txn.settleTimeout)
			ls.SettleSeconds, ls.Settle = waited.Seconds(), state
			fmt.Fprintf(stderr, "bench: the replicas' compactions after the load: %s (%.1fs)\n", state, waited.Seconds())
		}
	}
	var problems []string
	for _, rc := range runs {
		if o.duration == 0 {
			break
		}
		res, err := env.run(ctx, w, rc)
		if err != nil {
			return err
		}
		rep.Runs = append(rep.Runs, res)
		if err := printTxnRun(stdout, res); err != nil {
			return err
		}
		for _, p := range res.Problems {
			problems = append(problems, fmt.Sprintf("multi-group %d%%, byzantine %d%%: %s", rc.MultiGroupPct, rc.ByzantinePct, p))
		}
	}
	rep.Fig5 = fig5Rows(rep.Runs)
	if len(rep.Fig5) > 0 {
		printFig5(stdout, rep.Fig5)
	}
	if f, ok := w.(finisher); ok {
		if err := f.finish(ctx, rep); err != nil {
			return err
		}
		if rep.Bank != nil {
			problems = append(problems, rep.Bank.Problems...)
		}
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

// prepare loads the cluster and the keys: everything the workload's Setup
// may need, nothing on the network.
func (e *txnEnv) prepare(byzs []int) error {
	o := e.o
	c, err := e.h.LoadCluster(o.dir)
	if err != nil {
		return err
	}
	e.c = c
	if e.pmap, err = oracle.FromCluster(c); err != nil {
		return err
	}
	maxByz := 0
	for _, p := range byzs {
		maxByz = max(maxByz, byzCount(o.clients, p))
	}
	if maxByz >= o.clients && maxByz > 0 {
		return fmt.Errorf("--byzantine: with %d callers, %d would be Byzantine and none correct", o.clients, maxByz)
	}
	if e.key, err = loadClientKey(c, o); err != nil {
		return err
	}
	if e.byzKeys, err = byzantineKeys(c, o, e.key, maxByz); err != nil {
		return err
	}
	e.seed = e.t.seed
	if e.seed == 0 {
		e.seed = rand.Uint64()
	}
	e.tags = newTagSource()
	return nil
}

// connect starts the correct callers' client.
func (e *txnEnv) connect(ctx context.Context) error {
	e.reg = prometheus.NewRegistry()
	tuning := coord.Tuning{RecoveryGrace: e.t.recoveryGrace}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	e.cl, err = coord.NewClient(startCtx, coord.ClientConfig{
		Cluster: e.c, Key: e.key, Map: e.pmap, Tuning: tuning, Seed: e.seed, InFlight: e.o.window,
		Registerer: e.reg, Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		GroupTimeout: 500 * time.Millisecond, Observer: e.recovered,
	})
	if err != nil {
		if e.h.AppHint != nil {
			err = e.h.AppHint(err, e.o.dir)
		}
		return fmt.Errorf("connect to the cluster: %w", err)
	}
	return nil
}

func (e *txnEnv) close() {
	if e.cl != nil {
		_ = e.cl.Close()
	}
}

// txnOptions returns the options of one transaction: opts as the workload
// sets them (its retries), with the command line's per-transaction client
// options applied. Every transaction of every workload — loads, final
// checks and the measured ones — goes through do, so an option added here
// (issue 29's --reads ordered|unordered, say) reaches them all.
func (e *txnEnv) txnOptions(opts coord.Options) coord.Options {
	return opts
}

// do runs one transaction on the correct callers' client.
func (e *txnEnv) do(ctx context.Context, ops coord.OpSource, opts coord.Options) (*coord.Result, error) {
	return e.cl.Do(ctx, ops, e.txnOptions(opts))
}

// grace is the recovery grace the correct callers use.
func (e *txnEnv) grace() time.Duration {
	if e.t.recoveryGrace > 0 {
		return e.t.recoveryGrace
	}
	return coord.DefaultTuning().RecoveryGrace
}

// rejectedRun says what to do about a run the replicas' rejection ended.
func (e *txnEnv) rejectedRun(err error) error {
	if !errors.Is(err, client.ErrRejected) {
		return err
	}
	return fmt.Errorf("%w: %w: the %s workload needs replicas running --app txn (augustus start --dir %s --app txn)",
		errRejected, err, e.o.workload, e.o.dir)
}

// classifyTxn is how the transaction workloads count an error: a call the
// replicas reject will be rejected every time (fatal); an abort after the
// library's retries counts by the reason of the deciding vote.
func classifyTxn(err error) (Class, string) {
	var ab *coord.AbortedError
	switch {
	case errors.Is(err, client.ErrRejected):
		return Fatal, ""
	case errors.As(err, &ab):
		return Aborted, abortReason(ab)
	}
	return Failed, errorKind(err)
}

// abortReason names an abort for the report.
func abortReason(ab *coord.AbortedError) string {
	if ab.Cause == nil {
		return "unknown"
	}
	return ab.Cause.Reason.String()
}

// byzCount is how many of n callers are Byzantine at pct percent.
func byzCount(n, pct int) int { return (n*pct + 50) / 100 }

// callBytes is the size of the call that carries a transaction of ops
// (owner and nonces of this client).
func (e *txnEnv) callBytes(ops []txn.Op) int {
	groups := txn.InvolvedGroups(ops, e.pmap)
	gv := make([]txn.GroupVersion, len(groups))
	for i, g := range groups {
		gv[i] = txn.GroupVersion{Group: g}
	}
	t := &txn.Txn{Ops: ops, Groups: gv, Owner: e.cl.ID(), Nonce: 1 << 20, Watermark: 1 << 20}
	return len(txn.NewTxnCall(t.Encode(), nil))
}
