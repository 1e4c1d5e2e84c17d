package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
)

// The workloads of one replica group (noop.go, log.go): calls through one
// group client (pkg/bft/client) shared by every caller, so concurrent
// calls travel together in signed envelopes; the report gives calls/s,
// envelopes, PBFT batches, latency and the group's CPU per call and per
// batch.

// groupEnv is what a group workload runs against.
type groupEnv struct {
	o  *Options
	c  *cluster.Cluster
	g  *cluster.Group
	cl *client.Client
}

// groupWorkload is a workload of one group: each call sends payload(i)
// for caller i and checks the result with check (nil: any result).
type groupWorkload struct {
	env *groupEnv
	// app is the --app the replicas must run.
	app     string
	payload func(i int) []byte
	check   func(result []byte) error
}

func (w *groupWorkload) Setup([]RunConfig) error                   { return nil }
func (w *groupWorkload) Load(context.Context) (*LoadResult, error) { return nil, nil }

func (w *groupWorkload) NewCaller(_ RunConfig, i int) (Caller, error) {
	return &groupCaller{w: w, payload: w.payload(i)}, nil
}

// Classify: a call the replicas reject (client.RejectedError: f+1 of them
// say it fails validation) will be rejected every time, and a result of
// another application will come every time: either stops the run at once,
// warm-up included.
func (w *groupWorkload) Classify(err error) (Class, string) {
	if errors.Is(err, client.ErrRejected) || errors.Is(err, errWrongResult) {
		return Fatal, ""
	}
	return Failed, errorKind(err)
}

type groupCaller struct {
	w       *groupWorkload
	payload []byte
}

func (c *groupCaller) Do(ctx context.Context) Outcome {
	result, err := c.w.env.cl.Invoke(ctx, c.payload)
	if err == nil && c.w.check != nil {
		err = c.w.check(result)
	}
	return Outcome{Err: err, Groups: 1}
}

// errRejected ends a run whose calls the replicas reject; errWrongResult
// one whose results the workload cannot read.
var (
	errRejected    = errors.New("the replicas reject the calls")
	errWrongResult = errors.New("the replicas answer with results of another application")
)

// GroupResult is what a workload of one group reports (and writes with
// --json).
type GroupResult struct {
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
	// ErrorsByKind splits Errors: the failed calls by kind of error, then
	// "timed_out" and "outstanding".
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
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
	// RateLimit is --rate: the calls per second the open loop offered (0:
	// the closed loop). ScheduledCalls fell due in the measured interval;
	// MissedCalls of them found every caller busy and were not made.
	RateLimit          float64 `json:"rate_limit,omitempty"`
	ScheduledCalls     int64   `json:"scheduled_calls,omitempty"`
	MissedCalls        int64   `json:"missed_calls,omitempty"`
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

	LatencyMs LatencyMs `json:"latency_ms"`

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
	Provenance
}

// LatencyMs are latency figures in milliseconds.
type LatencyMs struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// checkGroupOptions validates what can be checked without the cluster.
func checkGroupOptions(o *Options) error {
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
		return fmt.Errorf("--rate %v: want 0 (unpaced) or a positive number of calls per second up to %d (an open loop)", o.rate, maxRate)
	}
	return checkProgress(o.progress)
}

// groupCounters are the group client's counters the report reads.
var groupCounters = map[string]string{
	"augustus_client_envelopes_sent_total":  "",
	"augustus_client_retransmissions_total": "",
}

// runGroup runs a workload of one group.
func runGroup(ctx context.Context, stdout, stderr io.Writer, o *Options, h Host, spec *Spec) error {
	if err := checkGroupOptions(o); err != nil {
		return err
	}
	c, err := h.LoadCluster(o.dir)
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
	key, err := loadClientKey(c, o)
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
	env := &groupEnv{o: o, c: c, g: g, cl: cl}
	w, err := spec.newGroup(env, o.workload)
	if err != nil {
		return err
	}
	gw := w.(*groupWorkload)

	drain := min(o.callTimeout, maxDrain)
	m := thisMachine()
	res := &GroupResult{
		Workload: o.workload, Group: o.group, Clients: o.clients, SizeBytes: o.size, RateLimit: o.rate,
		StartedAt: time.Now().UTC(), WarmupSeconds: o.warmup.Seconds(),
		ReplicasInGroup: len(g.Replicas), NumCPU: m.Cores, GoMaxProcs: m.GoMaxProcs,
		GoVersion: m.GoVersion, CallTimeoutSeconds: o.callTimeout.Seconds(), DrainSeconds: drain.Seconds(),
		Sync: c.Sync, perReplica: o.replicaCPU, InFlight: o.inFlight, Provenance: provenance(o, h),
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

	groups := []*cluster.Group{g}
	var before, after snapshot
	var profiles *profileRun
	r := &runner{callers: o.clients, rate: o.rate, warmup: o.warmup, duration: o.duration, callTimeout: o.callTimeout,
		progress: o.progress, stderr: stderr, noResult: "result",
		begin: func(ctx context.Context) {
			before = takeSnapshot(ctx, groups, reg, groupCounters)
			profiles = startProfiles(ctx, c, groups, o, h, o.profileDir)
		},
		end: func(ctx context.Context, err error) {
			if err != nil {
				profiles.stop()
				return
			}
			after = takeSnapshot(ctx, groups, reg, groupCounters)
			res.Profiles = profiles.wait()
		},
	}
	meas, err := r.run(ctx, w, RunConfig{})
	if err != nil {
		return gw.rejectedRun(err)
	}
	res.fill(meas, before, after)
	res.judge(o)
	if err := printGroupResult(stdout, res); err != nil {
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

// rejectedRun says what to do about a run the replicas' rejection ended.
func (w *groupWorkload) rejectedRun(err error) error {
	if !errors.Is(err, client.ErrRejected) {
		return err
	}
	o := w.env.o
	return fmt.Errorf("%w: %w: the %s workload needs replicas running --app %s (augustus start --dir %s --app %s)",
		errRejected, err, o.workload, w.app, o.dir, w.app)
}

// fill computes the result's figures from the interval's record and the
// snapshots at its ends.
func (res *GroupResult) fill(m *measured, before, after snapshot) {
	res.MeasuredSecs = m.seconds
	res.Calls = m.committed
	res.FailedCalls, res.TimedOutCalls, res.OutstandingCalls, res.DrainedCalls = m.failed, m.timedOut, m.outstanding, m.drained
	res.FirstError = m.firstErr
	res.Errors = res.FailedCalls + res.TimedOutCalls + res.OutstandingCalls
	res.ErrorsByKind = errorsByKind(m)
	res.ScheduledCalls, res.MissedCalls = m.scheduled, m.missed
	res.StallWindowSeconds, res.LastCompletionSeconds, res.Stalled = m.stallWindow, m.lastCompletion, m.stalled
	res.LatencyMs = latencyOf(m.hist)
	res.fillCounters(before, after)
}

// fillCounters computes the figures of the counters: the client's
// envelopes, the replicas' batches and CPU, this process's CPU.
func (res *GroupResult) fillCounters(before, after snapshot) {
	secs := res.MeasuredSecs
	res.CallsPerSecond = float64(res.Calls) / secs
	res.Envelopes = counterDelta(before, after, "augustus_client_envelopes_sent_total")[""]
	res.EnvelopesPerSecond = res.Envelopes / secs
	res.Retransmissions = counterDelta(before, after, "augustus_client_retransmissions_total")[""]
	if n := after.envCount - before.envCount; n > 0 {
		res.CallsPerEnvelope = (after.envCalls - before.envCalls) / n
	}
	var batchSums, batchCounts float64
	for name, a := range after.replicaBatches {
		if b, ok := before.replicaBatches[name]; ok {
			batchCounts += a - b
			batchSums += after.replicaBatchSum[name] - before.replicaBatchSum[name]
		}
	}
	if batchCounts > 0 {
		res.EnvelopesPerBatch = batchSums / batchCounts
	}
	var total float64
	res.ReplicaCPUSeconds, res.ReplicasMissing = cpuDelta(before, after)
	for _, cpu := range res.ReplicaCPUSeconds {
		total += cpu
	}
	res.ReplicasScraped = len(res.ReplicaCPUSeconds)
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
	res.ClientCPUSeconds = after.clientCPU - before.clientCPU
	if res.Calls > 0 {
		res.ReplicaCPUMsPerCall = total * 1000 / float64(res.Calls)
		res.ClientCPUMsPerCall = res.ClientCPUSeconds * 1000 / float64(res.Calls)
	}
}

// judge decides whether the run succeeded and, if not, says why.
func (res *GroupResult) judge(o *Options) {
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
