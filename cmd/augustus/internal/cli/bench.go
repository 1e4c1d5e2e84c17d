package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
)

// Workloads of `augustus bench`.
const (
	workloadNoop = "noop"
	workloadLog  = "log"
)

type benchOptions struct {
	txn         txnBenchOptions // the transaction workloads' flags (bench_txn.go)
	workload    string
	dir         string
	group       uint32
	clients     int
	duration    time.Duration
	warmup      time.Duration
	size        int
	clientKey   string
	jsonPath    string
	progress    string
	callTimeout time.Duration
	window      int
	inFlight    int
	// replicaCPU reports CPU per PBFT batch replica by replica.
	replicaCPU bool
	// profileDir, if set, receives a CPU profile of each replica of the
	// group, pulled from its pprof endpoint (127.0.0.1:pprofBase+k, as
	// `start --pprof` serves it) during the measured interval.
	profileDir string
	pprofBase  int
	// rate, if positive, paces the noop and log callers to at most that
	// many calls per second in all.
	rate float64
}

func newBenchCommand() *cobra.Command {
	o := benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench --workload noop|log --dir DIR",
		Short: "Measure throughput, latency and replica CPU of one replica group",
		Long: `Drive one replica group of a running cluster from one group client with
--clients concurrent callers that share it, so concurrent calls travel together
in signed envelopes, as they do from a gateway.

Workloads: "noop" sends calls of --size bytes that the replicas order and
execute as no-ops (start the replicas with --app noop: it measures ordering);
"log" appends --size bytes per call to one log per caller (replicas with --app
log).

After --warmup, calls are measured for --duration. The report gives calls/s,
envelopes/s and calls per envelope (from the client's metrics), requests per
PBFT batch (from the replicas), latency percentiles of single calls (HDR
histogram), and CPU time per call summed over the group's replica processes:
process_cpu_seconds_total scraped from every replica's /metrics before and after
the measured interval (a replica left out says why), per call and per PBFT batch
(batches executed in the interval, from the replicas' metrics; --replica-cpu
breaks it down replica by replica). CPU of this process is reported separately.
On a machine that also runs the replicas, the bench competes with them for the
CPU. The report names the cluster's durability mode ("sync" in cluster.json).

--rate N paces the noop and log callers to at most N calls per second in all
(the transaction workloads: N transactions per second, started by the correct
callers), evenly spaced: an offered load, met as long as the callers keep up. A
replica's CPU per call falls as its PBFT batches fill, that is as the call rate
rises, so compare two runs' CPU per call at equal rates.

--profile DIR pulls a CPU profile (10s, or the measured interval if shorter) from
each replica of the group during the measured interval and writes DIR/NAME.pprof
(go tool pprof DIR/NAME.pprof): start the replicas with augustus start --pprof
(--pprof-base-port here must match start's). Transaction workloads profile every
replica of every group, into DIR/multi-M-byz-B/NAME.pprof per measured interval.

Errors are counted, never hidden: a call that returns an error, a call that hits
--call-timeout, and a call still without a result at the end (calls in flight
when the interval ends get min(--call-timeout, 5s) to finish) each count as an
error, in the report and the JSON. bench exits with status 1 when any call
failed, or when no call completed in the last 5s of the interval (or in the
whole interval, if it is shorter): the group stopped answering.
`,
		Example: `  augustus init --dir ./c --groups 1 && augustus start --dir ./c --app noop &
  augustus bench --workload noop --dir ./c --clients 64 --duration 20s --size 1024
  augustus bench --workload log --dir ./c --clients 16 --duration 10s --size 100 --json result.json
  augustus start --dir ./c --app noop --pprof & augustus bench --dir ./c --clients 64 --duration 20s --replica-cpu --profile ./prof`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isTxnWorkload(o.workload) || len(o.txn.checkHistory) > 0 {
				return runTxnBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, o.txn)
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.workload, "workload", workloadNoop, `"noop" or "log"`)
	addTxnBenchFlags(cmd, &o.txn)
	fl.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json, keys/; required)")
	fl.Uint32Var(&o.group, "group", 0, "the group to drive")
	fl.IntVar(&o.clients, "clients", 16, "concurrent callers sharing the one group client")
	fl.DurationVar(&o.duration, "duration", 10*time.Second, "measured interval")
	fl.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before the measured interval, not counted")
	fl.IntVar(&o.size, "size", 0, "bytes per call (noop) or per appended value (log)")
	fl.StringVar(&o.clientKey, "client-key", "", "the client's private key file (default DIR/keys/client0.key)")
	fl.StringVar(&o.jsonPath, "json", "", "also write the result as JSON to this file (checked before the run)")
	fl.StringVar(&o.progress, "progress", "auto", `live progress: "bar" (a progress bar), "lines" (a line every 5s), "off", or "auto" (bar on a terminal, else lines)`)
	fl.DurationVar(&o.callTimeout, "call-timeout", 30*time.Second, "a call without a result after this long counts as an error (> 0)")
	fl.IntVar(&o.window, "window", 0, "envelopes outstanding (W; 0: the cluster's client_window, which is also the most allowed)")
	fl.IntVar(&o.inFlight, "inflight", 0, "envelopes the client keeps outstanding at once (0: the client's default; at most --window)")
	fl.BoolVar(&o.replicaCPU, "replica-cpu", false, "report replica CPU per PBFT batch and per call for each replica")
	fl.StringVar(&o.profileDir, "profile", "", "pull a CPU profile of each replica of the group into this directory during the measured interval (replicas started with augustus start --pprof)")
	fl.IntVar(&o.pprofBase, "pprof-base-port", defaultPprofBasePort, "with --profile: the k-th replica of the cluster serves pprof on 127.0.0.1:PORT+k (as augustus start --pprof)")
	fl.Float64Var(&o.rate, "rate", 0, "start at most this many calls (transaction workloads: transactions) per second in all, paced across the callers (0: each caller calls again as soon as its call returns)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// benchResult is what bench reports (and writes with --json).
type benchResult struct {
	Workload      string    `json:"workload"`
	Group         uint32    `json:"group"`
	Clients       int       `json:"clients"`
	SizeBytes     int       `json:"size_bytes"`
	StartedAt     time.Time `json:"started_at"`
	WarmupSeconds float64   `json:"warmup_seconds"`
	MeasuredSecs  float64   `json:"measured_seconds"`
	// Calls completed (with a valid result) in the measured interval.
	Calls int64 `json:"calls"`
	// Errors is FailedCalls + TimedOutCalls + OutstandingCalls.
	Errors int64 `json:"errors"`
	// FailedCalls returned an error; TimedOutCalls hit --call-timeout;
	// OutstandingCalls had no result at the end, after the drain.
	FailedCalls      int64  `json:"failed_calls"`
	TimedOutCalls    int64  `json:"timed_out_calls"`
	OutstandingCalls int64  `json:"outstanding_calls"`
	FirstError       string `json:"first_error,omitempty"`
	// DrainedCalls were in flight when the interval ended and completed
	// within DrainSeconds after it (not errors; not in Calls).
	DrainedCalls int64   `json:"drained_calls"`
	DrainSeconds float64 `json:"drain_seconds"`
	// LastCompletionSeconds is when, into the measured interval, the last
	// call completed (-1: none did). Stalled is set when none completed in
	// the last StallWindowSeconds of the interval.
	LastCompletionSeconds float64 `json:"last_completion_seconds"`
	StallWindowSeconds    float64 `json:"stall_window_seconds"`
	Stalled               bool    `json:"stalled"`
	CallsPerSecond        float64 `json:"calls_per_second"`
	// RateLimit is --rate: the calls per second the callers were paced to
	// at most (0: unpaced).
	RateLimit          float64 `json:"rate_limit,omitempty"`
	CallTimeoutSeconds float64 `json:"call_timeout_seconds"`
	// OK is false when bench exits non-zero; Problems says why.
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`

	// Sync is the cluster's durability mode ("fsync" or "none").
	Sync string `json:"sync"`
	// InFlight is the envelopes the client kept outstanding at most.
	InFlight int `json:"inflight"`

	Envelopes          float64 `json:"envelopes"`
	EnvelopesPerSecond float64 `json:"envelopes_per_second"`
	CallsPerEnvelope   float64 `json:"calls_per_envelope"`
	Retransmissions    float64 `json:"retransmissions"`
	// EnvelopesPerBatch is the mean PBFT batch size (requests = envelopes)
	// over the interval, from the replicas' batch size histograms.
	EnvelopesPerBatch float64 `json:"envelopes_per_batch"`
	// Batches is the number of PBFT batches the group executed in the
	// interval (the mean over the replicas scraped of each one's count).
	Batches          float64 `json:"batches"`
	BatchesPerSecond float64 `json:"batches_per_second"`

	LatencyMs latencyMs `json:"latency_ms"`

	// ReplicaCPUSeconds is per replica; ReplicaCPUMsPerCall sums them.
	ReplicaCPUSeconds map[string]float64 `json:"replica_cpu_seconds"`
	ReplicasScraped   int                `json:"replicas_scraped"`
	ReplicasInGroup   int                `json:"replicas_in_group"`
	// ReplicasMissing says, per replica left out of the CPU figures, why.
	ReplicasMissing     map[string]string `json:"replicas_missing,omitempty"`
	ReplicaCPUMsPerCall float64           `json:"replica_cpu_ms_per_call"`
	// ReplicaCPUMsPerBatch sums the replicas' CPU per PBFT batch;
	// ReplicaCPUMsPerBatchByReplica is each replica's.
	ReplicaCPUMsPerBatch          float64            `json:"replica_cpu_ms_per_batch"`
	ReplicaCPUMsPerBatchByReplica map[string]float64 `json:"replica_cpu_ms_per_batch_by_replica,omitempty"`
	// Profiles names, per replica, the CPU profile written (--profile), or
	// why there is none.
	Profiles           map[string]string `json:"profiles,omitempty"`
	ClientCPUSeconds   float64           `json:"client_cpu_seconds"`
	ClientCPUMsPerCall float64           `json:"client_cpu_ms_per_call"`

	// perReplica shows the per-replica CPU rows (--replica-cpu).
	perReplica bool

	NumCPU     int    `json:"num_cpu"`
	GoMaxProcs int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
}

type latencyMs struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// Phases of a bench run, seen by the callers when a call completes.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// benchCaller is one concurrent caller's record; only its goroutine writes
// it until the run ends.
type benchCaller struct {
	hist                          *hdrhistogram.Histogram
	calls                         int64
	failed, timedOut, outstanding int64
	drained                       int64
	firstErr                      error
}

// progressInterval is how often --progress lines report, and the window in
// which at least one call must complete for the run to count as live.
const progressInterval = 5 * time.Second

// maxDrain bounds how long calls in flight at the end of the interval get
// to finish before they count as outstanding.
const maxDrain = 5 * time.Second

// checkBenchOptions validates what can be checked without the cluster.
func checkBenchOptions(o benchOptions) error {
	if o.workload != workloadNoop && o.workload != workloadLog {
		return fmt.Errorf("--workload %q: want %q or %q", o.workload, workloadNoop, workloadLog)
	}
	switch {
	case o.clients < 1:
		return fmt.Errorf("--clients %d: need at least 1", o.clients)
	case o.duration <= 0:
		return fmt.Errorf("--duration %s: must be positive", o.duration)
	case o.warmup < 0:
		return fmt.Errorf("--warmup %s: must not be negative", o.warmup)
	case o.size < 0 || o.size > replica.MaxLogValue:
		return fmt.Errorf("--size %d: want 0..%d", o.size, replica.MaxLogValue)
	case o.callTimeout <= 0:
		return fmt.Errorf("--call-timeout %s: must be positive (how long a call may take before it counts as an error)", o.callTimeout)
	case o.window < 0:
		return fmt.Errorf("--window %d: want 0 (the cluster's client_window) or a positive number of envelopes", o.window)
	case o.inFlight < 0:
		return fmt.Errorf("--inflight %d: want 0 (the client's default) or a positive number of envelopes", o.inFlight)
	case o.pprofBase < 1 || o.pprofBase > 65535:
		return fmt.Errorf("--pprof-base-port %d: want a port", o.pprofBase)
	case badRate(o.rate):
		return fmt.Errorf("--rate %v: want 0 (unpaced) or a positive number of calls per second", o.rate)
	}
	switch o.progress {
	case "auto", "bar", "lines", "off":
	default:
		return fmt.Errorf("--progress %q: want \"auto\", \"bar\", \"lines\" or \"off\"", o.progress)
	}
	return nil
}

// jsonOutput is the --json file, opened before the run so that a path that
// cannot be written fails at once rather than after the measurement.
type jsonOutput struct {
	f       *os.File
	created bool
	written bool
}

func openJSONOutput(path string) (*jsonOutput, error) {
	if path == "" {
		return nil, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("--json %s: is a directory", path)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--json: cannot write the result: %w", err)
	}
	return &jsonOutput{f: f, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

func (j *jsonOutput) write(v any) error {
	data, err := jsonIndent(v)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := j.f.Truncate(0); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if _, err := j.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	j.written = true
	return nil
}

// close closes the file, removing it if this run created it and wrote
// nothing (an interrupted run leaves no empty result behind).
func (j *jsonOutput) close() error {
	if j == nil {
		return nil
	}
	err := j.f.Close()
	if !j.written && j.created {
		_ = os.Remove(j.f.Name())
	}
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}

func runBench(ctx context.Context, stdout, stderr io.Writer, o benchOptions) error {
	if err := checkBenchOptions(o); err != nil {
		return err
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	g, err := c.Group(bft.GroupID(o.group))
	if err != nil {
		return fmt.Errorf("--group %d: %w", o.group, err)
	}
	if o.window > c.ClientWindow {
		return fmt.Errorf("--window %d: the replicas accept at most client_window=%d envelopes outstanding per client (cluster.json)", o.window, c.ClientWindow)
	}
	key, err := loadBenchClientKey(c, o)
	if err != nil {
		return err
	}
	out, err := openJSONOutput(o.jsonPath)
	if err != nil {
		return err
	}
	defer out.close()
	reg := prometheus.NewRegistry()
	cm := client.NewMetrics(reg)
	startCtx, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cl, err := client.New(startCtx, client.Config{
		Cluster: c, Group: bft.GroupID(o.group), Key: key, Window: o.window, InFlight: o.inFlight, Metrics: cm,
		Logger: quiet, // also the connections' logger
	})
	cancelStart()
	if err != nil {
		return fmt.Errorf("connect to group %d: %w", o.group, err)
	}
	defer cl.Close()

	drain := min(o.callTimeout, maxDrain)
	res := &benchResult{
		Workload: o.workload, Group: o.group, Clients: o.clients, SizeBytes: o.size, RateLimit: o.rate,
		StartedAt: time.Now().UTC(), WarmupSeconds: o.warmup.Seconds(),
		ReplicasInGroup: len(g.Replicas), NumCPU: runtime.NumCPU(), GoMaxProcs: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), CallTimeoutSeconds: o.callTimeout.Seconds(), DrainSeconds: drain.Seconds(),
		Sync: c.Sync, perReplica: o.replicaCPU, InFlight: o.inFlight,
	}
	if res.InFlight == 0 {
		res.InFlight = client.DefaultInFlight
	}
	window := o.window
	if window == 0 {
		window = c.ClientWindow
	}
	res.InFlight = min(res.InFlight, window)
	if res.Sync == "" {
		res.Sync = cluster.SyncFsync
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	fmt.Fprintf(stderr, "bench: %s workload, %d callers, %d-byte calls, group %d (%d replicas, sync %s), warm-up %s, measuring %s\n",
		o.workload, o.clients, o.size, o.group, len(g.Replicas), res.Sync, o.warmup, o.duration)

	// The callers run until the measured interval ends, then finish the
	// call they have in flight; runCtx ends after the drain (or on an
	// interrupt), and calls still pending then are outstanding.
	runCtx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	var phase atomic.Int32
	var completed atomic.Int64 // calls completed in the measured interval
	var lastDone atomic.Int64  // when the last measured call completed (UnixNano)
	// A call the replicas reject (client.RejectedError: f+1 of them say it
	// fails validation) will be rejected every time: the first one stops
	// the run at once, warm-up included.
	rejected := newAbort()
	// --rate: one limiter for every caller, burst 1, so calls start evenly
	// spaced (an offered load, as long as the callers can keep up).
	var pace *rate.Limiter
	if o.rate > 0 {
		pace = rate.NewLimiter(rate.Limit(o.rate), 1)
	}
	callers := make([]*benchCaller, o.clients)
	var wg sync.WaitGroup
	for i := range callers {
		bc := &benchCaller{hist: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
		callers[i] = bc
		payload := benchPayload(o, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc.run(runCtx, cl, payload, o, pace, &phase, &completed, &lastDone, rejected)
		}()
	}
	waitCallers := func() {
		stopCallers()
		wg.Wait()
	}
	defer waitCallers()

	prog := newBenchProgress(stderr, o)
	defer prog.finish()
	if err := benchWait(ctx, o.warmup, prog, rejected, func() {}); err != nil {
		return rejectedRun(err, o)
	}

	before := snapshotBench(ctx, g, cm)
	t0 := time.Now()
	phase.Store(phaseMeasure)
	profiles := startProfiles(ctx, c, g, o)
	err = benchWait(ctx, o.duration, prog, rejected, func() { prog.update(time.Since(t0), completed.Load()) })
	phase.Store(phaseDone)
	elapsed := time.Since(t0)
	if err != nil {
		return rejectedRun(err, o)
	}
	after := snapshotBench(ctx, g, cm)
	prog.finish()
	res.Profiles = profiles.wait()
	drainCallers(&wg, drain)
	waitCallers()

	res.MeasuredSecs = elapsed.Seconds()
	hist := hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
	for _, bc := range callers {
		hist.Merge(bc.hist)
		res.Calls += bc.calls
		res.FailedCalls += bc.failed
		res.TimedOutCalls += bc.timedOut
		res.OutstandingCalls += bc.outstanding
		res.DrainedCalls += bc.drained
		if bc.firstErr != nil && res.FirstError == "" {
			res.FirstError = bc.firstErr.Error()
		}
	}
	res.Errors = res.FailedCalls + res.TimedOutCalls + res.OutstandingCalls
	res.StallWindowSeconds = min(progressInterval, o.duration).Seconds()
	res.LastCompletionSeconds = -1
	if last := lastDone.Load(); last > 0 {
		res.LastCompletionSeconds = max(0, time.Unix(0, last).Sub(t0).Seconds())
	}
	res.Stalled = res.LastCompletionSeconds < 0 || res.MeasuredSecs-res.LastCompletionSeconds > res.StallWindowSeconds
	res.fill(hist, before, after)
	res.judge(o)
	if err := printBench(stdout, res); err != nil {
		return err
	}
	if out != nil {
		if err := out.write(res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", o.jsonPath)
	}
	if !res.OK {
		return fmt.Errorf("bench failed: %s", strings.Join(res.Problems, "; "))
	}
	return nil
}

// abort is a one-shot signal carrying the first error that ends a run.
type abort struct {
	once sync.Once
	ch   chan struct{}
	err  error
}

func newAbort() *abort { return &abort{ch: make(chan struct{})} }

func (a *abort) fire(err error) {
	a.once.Do(func() {
		a.err = err
		close(a.ch)
	})
}

// errRejected ends a run whose calls the replicas reject; errWrongResult
// one whose results the workload cannot read.
var (
	errRejected    = errors.New("the replicas reject the calls")
	errWrongResult = errors.New("the replicas answer with results of another application")
)

// rejectedRun says what to do about a run the replicas' rejection ended.
func rejectedRun(err error, o benchOptions) error {
	if !errors.Is(err, client.ErrRejected) {
		return err
	}
	app := appNoop
	if o.workload == workloadLog {
		app = appLog
	}
	return fmt.Errorf("%w: %w: the %s workload needs replicas running --app %s (augustus start --dir %s --app %s)",
		errRejected, err, o.workload, app, o.dir, app)
}

// drainCallers waits up to d for the callers to finish their last call.
func drainCallers(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// badRate reports whether --rate is neither 0 (unpaced) nor a positive
// finite rate.
func badRate(r float64) bool { return r < 0 || math.IsNaN(r) || math.IsInf(r, 0) }

// judge decides whether the run succeeded and, if not, says why.
func (res *benchResult) judge(o benchOptions) {
	if res.Errors > 0 {
		var parts []string
		if res.FailedCalls > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", res.FailedCalls))
		}
		if res.TimedOutCalls > 0 {
			parts = append(parts, fmt.Sprintf("%d hit --call-timeout %s", res.TimedOutCalls, o.callTimeout))
		}
		if res.OutstandingCalls > 0 {
			parts = append(parts, fmt.Sprintf("%d still without a result %s after the end", res.OutstandingCalls, time.Duration(res.DrainSeconds*float64(time.Second))))
		}
		p := fmt.Sprintf("%d calls did not complete (%s)", res.Errors, strings.Join(parts, ", "))
		if res.FirstError != "" {
			p += ", first error: " + res.FirstError
		}
		res.Problems = append(res.Problems, p)
	}
	if res.Stalled {
		window := time.Duration(res.StallWindowSeconds * float64(time.Second))
		switch {
		case res.LastCompletionSeconds < 0:
			res.Problems = append(res.Problems, fmt.Sprintf("no call completed in the measured %s: is the group running (2f+1 replicas up), with --app %s?",
				time.Duration(res.MeasuredSecs*float64(time.Second)).Round(100*time.Millisecond), o.workload))
		default:
			res.Problems = append(res.Problems, fmt.Sprintf("no call completed in the last %s of the interval (the last at %.1fs): the group stopped answering",
				window, res.LastCompletionSeconds))
		}
	}
	res.OK = len(res.Problems) == 0
}

// loadBenchClientKey loads the client key and checks the group will accept
// it.
func loadBenchClientKey(c *cluster.Cluster, o benchOptions) (ed25519.PrivateKey, error) {
	path := o.clientKey
	if path == "" {
		if len(c.Clients) == 0 {
			return nil, errors.New("cluster.json lists no client: pass --client-key")
		}
		path = cluster.KeyPath(o.dir, c.Clients[0].Name)
	}
	key, err := auth.LoadPrivateKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("client key: %w", err)
	}
	if c.ClientPolicy == cluster.PolicyListed {
		pub := auth.EncodePublicKey(auth.PublicKeyOf(key))
		listed := false
		for _, cl := range c.Clients {
			listed = listed || cl.PublicKey == pub
		}
		if !listed {
			return nil, fmt.Errorf("the key in %s is not one of the clients in cluster.json, and the client policy is %q: the replicas would ignore its calls",
				path, cluster.PolicyListed)
		}
	}
	return key, nil
}

// benchPayload is caller i's call.
func benchPayload(o benchOptions, i int) []byte {
	value := bytes.Repeat([]byte{'x'}, o.size)
	if o.workload == workloadLog {
		return replica.LogAppend(fmt.Sprintf("bench-%d", i), value)
	}
	return value
}

// run calls in a loop until the measured interval ends, then finishes the
// call in flight. It classifies every call that ended in or after the
// measured interval: completed, failed, timed out (--call-timeout), drained
// (completed after the end) or outstanding (no result when ctx ended).
func (bc *benchCaller) run(ctx context.Context, cl *client.Client, payload []byte, o benchOptions, pace *rate.Limiter, phase *atomic.Int32, completed, lastDone *atomic.Int64, rejected *abort) {
	for phase.Load() != phaseDone && ctx.Err() == nil {
		if pace != nil && pace.Wait(ctx) != nil {
			return // the run ended while this caller waited for its turn
		}
		if phase.Load() == phaseDone {
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, o.callTimeout)
		start := time.Now()
		result, err := cl.Invoke(callCtx, payload)
		lat := time.Since(start)
		timedOut := err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil && o.workload == workloadLog {
			if _, derr := replica.DecodeLogLength(result); derr != nil {
				// The group answered, with f+1 matching results, something
				// the log application never returns: another application.
				err = fmt.Errorf("%w: the result is not a log length: %w: the log workload needs replicas running --app %s (augustus start --dir %s --app %s)",
					errWrongResult, derr, appLog, o.dir, appLog)
			}
		}
		if errors.Is(err, client.ErrRejected) || errors.Is(err, errWrongResult) {
			rejected.fire(err)
			return
		}
		ph := phase.Load()
		switch {
		case ph == phaseWarmup:
			continue // not measured
		case err == nil && ph == phaseDone:
			bc.drained++
			return
		case err == nil:
			bc.calls++
			completed.Add(1)
			lastDone.Store(time.Now().UnixNano())
			_ = bc.hist.RecordValue(max(1, lat.Microseconds()))
			continue
		case ctx.Err() != nil:
			// The drain ended (or bench was interrupted) first.
			bc.outstanding++
			return
		case timedOut:
			bc.timedOut++
			err = fmt.Errorf("no result within --call-timeout %s", o.callTimeout)
		default:
			bc.failed++
		}
		if bc.firstErr == nil {
			bc.firstErr = err
		}
	}
}

// benchWait waits for d, updating the progress display; it ends early,
// with the abort's error, if a call was rejected.
func benchWait(ctx context.Context, d time.Duration, prog *benchProgress, ab *abort, update func()) error {
	if d <= 0 {
		select {
		case <-ab.ch:
			return ab.err
		default:
			return nil
		}
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench interrupted: %w", ctx.Err())
		case <-ab.ch:
			return ab.err
		case <-done.C:
			return nil
		case <-tick.C:
			update()
		}
	}
}

// benchSnapshot is the state of the counters at one end of the interval.
type benchSnapshot struct {
	envelopes, retransmissions float64
	envCalls, envCount         float64
	replicaCPU                 map[string]float64
	// replicaStart is each replica process's start time: a replica whose
	// process restarted between two snapshots has a CPU counter that
	// started over.
	replicaStart map[string]float64
	// missing says why a replica has no CPU figure in this snapshot.
	missing              map[string]string
	batchSum, batchCount float64
	// replicaBatches is each replica's count of executed batches.
	replicaBatches map[string]float64
	clientCPU      float64
}

func snapshotBench(ctx context.Context, g *cluster.Group, cm *client.Metrics) benchSnapshot {
	s := benchSnapshot{replicaCPU: map[string]float64{}, replicaStart: map[string]float64{}, missing: map[string]string{},
		replicaBatches: map[string]float64{}, clientCPU: processCPUSeconds()}
	s.envelopes = counterValue(cm.EnvelopesSent)
	s.retransmissions = counterValue(cm.Retransmissions)
	s.envCalls, s.envCount = histogramSums(cm.EnvelopeCalls)
	var batchSums, batchCounts float64
	for _, sc := range scrapeReplicas(ctx, g.Replicas) {
		if sc.err != nil {
			s.missing[sc.name] = shortError(sc.err)
			continue
		}
		if start, ok := sc.m.value(metricStartTime); ok {
			s.replicaStart[sc.name] = start
		}
		if cpu, ok := sc.m.value(metricCPU); ok {
			s.replicaCPU[sc.name] = cpu
		} else {
			s.missing[sc.name] = "its metrics have no " + metricCPU
		}
		if fam, ok := sc.m["augustus_bft_batch_size_requests"]; ok && len(fam.GetMetric()) > 0 {
			h := fam.GetMetric()[0].GetHistogram()
			batchSums += h.GetSampleSum()
			batchCounts += float64(h.GetSampleCount())
			s.replicaBatches[sc.name] = float64(h.GetSampleCount())
		}
	}
	s.batchSum, s.batchCount = batchSums, batchCounts
	return s
}

func (res *benchResult) fill(hist *hdrhistogram.Histogram, before, after benchSnapshot) {
	secs := res.MeasuredSecs
	res.CallsPerSecond = float64(res.Calls) / secs
	res.Envelopes = after.envelopes - before.envelopes
	res.EnvelopesPerSecond = res.Envelopes / secs
	res.Retransmissions = after.retransmissions - before.retransmissions
	if n := after.envCount - before.envCount; n > 0 {
		res.CallsPerEnvelope = (after.envCalls - before.envCalls) / n
	}
	if n := after.batchCount - before.batchCount; n > 0 {
		res.EnvelopesPerBatch = (after.batchSum - before.batchSum) / n
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	if hist.TotalCount() > 0 {
		res.LatencyMs = latencyMs{
			Mean: hist.Mean() / 1000,
			P50:  ms(hist.ValueAtQuantile(50)),
			P95:  ms(hist.ValueAtQuantile(95)),
			P99:  ms(hist.ValueAtQuantile(99)),
			Max:  ms(hist.Max()),
		}
	}
	res.ReplicaCPUSeconds = map[string]float64{}
	var total float64
	res.ReplicasMissing = map[string]string{}
	for name, a := range after.replicaCPU {
		b, ok := before.replicaCPU[name]
		if !ok {
			continue
		}
		if after.replicaStart[name] != before.replicaStart[name] || a < b {
			res.ReplicasMissing[name] = "it restarted during the interval, so its CPU counter started over"
			continue
		}
		res.ReplicaCPUSeconds[name] = a - b
		total += a - b
		res.ReplicasScraped++
	}
	// Batches: every replica executes every batch; the mean over the
	// replicas with a CPU figure (one that lags a little counts a little
	// fewer).
	var batches float64
	var withBatches int
	for name := range res.ReplicaCPUSeconds {
		a, okA := after.replicaBatches[name]
		b, okB := before.replicaBatches[name]
		if okA && okB && a >= b {
			batches += a - b
			withBatches++
		}
	}
	if withBatches > 0 {
		res.Batches = batches / float64(withBatches)
		res.BatchesPerSecond = res.Batches / secs
	}
	if res.Batches > 0 {
		res.ReplicaCPUMsPerBatch = total * 1000 / res.Batches
		res.ReplicaCPUMsPerBatchByReplica = map[string]float64{}
		for name, cpu := range res.ReplicaCPUSeconds {
			res.ReplicaCPUMsPerBatchByReplica[name] = cpu * 1000 / res.Batches
		}
	}
	// A replica without a figure says why: what failed at the end of the
	// interval, else at its start.
	for _, snap := range []benchSnapshot{after, before} {
		for name, why := range snap.missing {
			if _, ok := res.ReplicasMissing[name]; !ok {
				res.ReplicasMissing[name] = why
			}
		}
	}
	if len(res.ReplicasMissing) == 0 {
		res.ReplicasMissing = nil
	}
	res.ClientCPUSeconds = after.clientCPU - before.clientCPU
	if res.Calls > 0 {
		res.ReplicaCPUMsPerCall = total * 1000 / float64(res.Calls)
		res.ClientCPUMsPerCall = res.ClientCPUSeconds * 1000 / float64(res.Calls)
	}
}
