package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

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
the measured interval. CPU of this process is reported separately. On a machine
that also runs the replicas, the bench competes with them for the CPU.`,
		Example: `  augustus init --dir ./c --groups 1 && augustus start --dir ./c --app noop &
  augustus bench --workload noop --dir ./c --clients 64 --duration 20s --size 1024
  augustus bench --workload log --dir ./c --clients 16 --duration 10s --size 100 --json result.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.workload, "workload", workloadNoop, `"noop" or "log"`)
	fl.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json, keys/; required)")
	fl.Uint32Var(&o.group, "group", 0, "the group to drive")
	fl.IntVar(&o.clients, "clients", 16, "concurrent callers sharing the one group client")
	fl.DurationVar(&o.duration, "duration", 10*time.Second, "measured interval")
	fl.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before the measured interval, not counted")
	fl.IntVar(&o.size, "size", 0, "bytes per call (noop) or per appended value (log)")
	fl.StringVar(&o.clientKey, "client-key", "", "the client's private key file (default DIR/keys/client0.key)")
	fl.StringVar(&o.jsonPath, "json", "", "also write the result as JSON to this file")
	fl.StringVar(&o.progress, "progress", "auto", `live progress: "bar" (a progress bar), "lines" (a line every 5s), "off", or "auto" (bar on a terminal, else lines)`)
	fl.DurationVar(&o.callTimeout, "call-timeout", 30*time.Second, "a call without a result after this long counts as an error")
	fl.IntVar(&o.window, "window", 0, "envelopes outstanding (W; default the cluster's client_window)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// benchResult is what bench reports (and writes with --json).
type benchResult struct {
	Workload       string    `json:"workload"`
	Group          uint32    `json:"group"`
	Clients        int       `json:"clients"`
	SizeBytes      int       `json:"size_bytes"`
	StartedAt      time.Time `json:"started_at"`
	WarmupSeconds  float64   `json:"warmup_seconds"`
	MeasuredSecs   float64   `json:"measured_seconds"`
	Calls          int64     `json:"calls"`
	Errors         int64     `json:"errors"`
	FirstError     string    `json:"first_error,omitempty"`
	CallsPerSecond float64   `json:"calls_per_second"`

	Envelopes          float64 `json:"envelopes"`
	EnvelopesPerSecond float64 `json:"envelopes_per_second"`
	CallsPerEnvelope   float64 `json:"calls_per_envelope"`
	Retransmissions    float64 `json:"retransmissions"`
	// EnvelopesPerBatch is the mean PBFT batch size (requests = envelopes)
	// over the interval, from the replicas' batch size histograms.
	EnvelopesPerBatch float64 `json:"envelopes_per_batch"`

	LatencyMs latencyMs `json:"latency_ms"`

	// ReplicaCPUSeconds is per replica; ReplicaCPUMsPerCall sums them.
	ReplicaCPUSeconds   map[string]float64 `json:"replica_cpu_seconds"`
	ReplicasScraped     int                `json:"replicas_scraped"`
	ReplicasInGroup     int                `json:"replicas_in_group"`
	ReplicaCPUMsPerCall float64            `json:"replica_cpu_ms_per_call"`
	ClientCPUSeconds    float64            `json:"client_cpu_seconds"`
	ClientCPUMsPerCall  float64            `json:"client_cpu_ms_per_call"`

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
	hist     *hdrhistogram.Histogram
	calls    int64
	errors   int64
	firstErr error
}

func runBench(ctx context.Context, stdout, stderr io.Writer, o benchOptions) error {
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
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	g, err := c.Group(bft.GroupID(o.group))
	if err != nil {
		return fmt.Errorf("--group %d: %w", o.group, err)
	}
	key, err := loadBenchClientKey(c, o)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	cm := client.NewMetrics(reg)
	startCtx, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cl, err := client.New(startCtx, client.Config{
		Cluster: c, Group: bft.GroupID(o.group), Key: key, Window: o.window, Metrics: cm,
		Logger: quiet, // also the connections' logger
	})
	cancelStart()
	if err != nil {
		return fmt.Errorf("connect to group %d: %w", o.group, err)
	}
	defer cl.Close()

	res := &benchResult{
		Workload: o.workload, Group: o.group, Clients: o.clients, SizeBytes: o.size,
		StartedAt: time.Now().UTC(), WarmupSeconds: o.warmup.Seconds(),
		ReplicasInGroup: len(g.Replicas), NumCPU: runtime.NumCPU(), GoMaxProcs: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(),
	}
	fmt.Fprintf(stderr, "bench: %s workload, %d callers, %d-byte calls, group %d (%d replicas), warm-up %s, measuring %s\n",
		o.workload, o.clients, o.size, o.group, len(g.Replicas), o.warmup, o.duration)

	// The callers run until runCtx ends, after the measured interval.
	runCtx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	var phase atomic.Int32
	var completed atomic.Int64 // calls completed in the measured interval
	callers := make([]*benchCaller, o.clients)
	var wg sync.WaitGroup
	for i := range callers {
		bc := &benchCaller{hist: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
		callers[i] = bc
		payload := benchPayload(o, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			bc.run(runCtx, cl, payload, o, &phase, &completed)
		}()
	}
	waitCallers := func() {
		stopCallers()
		wg.Wait()
	}
	defer waitCallers()

	prog := newBenchProgress(stderr, o)
	defer prog.finish()
	if err := benchWait(ctx, o.warmup, prog, func() {}); err != nil {
		return err
	}

	before := snapshotBench(ctx, g, cm)
	phase.Store(phaseMeasure)
	t0 := time.Now()
	err = benchWait(ctx, o.duration, prog, func() { prog.update(time.Since(t0), completed.Load()) })
	phase.Store(phaseDone)
	elapsed := time.Since(t0)
	if err != nil {
		return err
	}
	after := snapshotBench(ctx, g, cm)
	waitCallers()
	prog.finish()

	res.MeasuredSecs = elapsed.Seconds()
	hist := hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
	for _, bc := range callers {
		hist.Merge(bc.hist)
		res.Calls += bc.calls
		res.Errors += bc.errors
		if bc.firstErr != nil && res.FirstError == "" {
			res.FirstError = bc.firstErr.Error()
		}
	}
	res.fill(hist, before, after)
	if err := printBench(stdout, res); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := writeJSONFile(o.jsonPath, res); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", o.jsonPath)
	}
	if res.Calls == 0 {
		return fmt.Errorf("no call completed in %s (errors: %d, first: %s): is the group running, with --app %s?",
			elapsed.Round(time.Millisecond), res.Errors, res.FirstError, o.workload)
	}
	return nil
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

func (bc *benchCaller) run(ctx context.Context, cl *client.Client, payload []byte, o benchOptions, phase *atomic.Int32, completed *atomic.Int64) {
	for ctx.Err() == nil {
		callCtx, cancel := context.WithTimeout(ctx, o.callTimeout)
		start := time.Now()
		result, err := cl.Invoke(callCtx, payload)
		lat := time.Since(start)
		cancel()
		if err == nil && o.workload == workloadLog {
			_, err = replica.DecodeLogLength(result)
		}
		switch phase.Load() {
		case phaseWarmup:
			continue
		case phaseDone:
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			bc.errors++
			if bc.firstErr == nil {
				bc.firstErr = err
			}
			continue
		}
		bc.calls++
		completed.Add(1)
		_ = bc.hist.RecordValue(max(1, lat.Microseconds()))
	}
}

// benchWait waits for d, updating the progress display.
func benchWait(ctx context.Context, d time.Duration, prog *benchProgress, update func()) error {
	if d <= 0 {
		return nil
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench interrupted: %w", ctx.Err())
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
	batchSum, batchCount       float64
	clientCPU                  float64
}

func snapshotBench(ctx context.Context, g *cluster.Group, cm *client.Metrics) benchSnapshot {
	s := benchSnapshot{replicaCPU: map[string]float64{}, clientCPU: processCPUSeconds()}
	s.envelopes = counterValue(cm.EnvelopesSent)
	s.retransmissions = counterValue(cm.Retransmissions)
	s.envCalls, s.envCount = histogramSums(cm.EnvelopeCalls)
	type scraped struct {
		name string
		m    metrics
		err  error
	}
	ch := make(chan scraped, len(g.Replicas))
	for _, r := range g.Replicas {
		go func() {
			if r.MetricsAddr == "" {
				ch <- scraped{name: r.Name, err: errors.New("no metrics address")}
				return
			}
			m, err := scrape(ctx, r.MetricsAddr)
			ch <- scraped{r.Name, m, err}
		}()
	}
	var batchSums, batchCounts float64
	for range g.Replicas {
		sc := <-ch
		if sc.err != nil {
			continue
		}
		if cpu, ok := sc.m.value(metricCPU); ok {
			s.replicaCPU[sc.name] = cpu
		}
		if fam, ok := sc.m["augustus_bft_batch_size_requests"]; ok && len(fam.GetMetric()) > 0 {
			h := fam.GetMetric()[0].GetHistogram()
			batchSums += h.GetSampleSum()
			batchCounts += float64(h.GetSampleCount())
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
	for name, a := range after.replicaCPU {
		if b, ok := before.replicaCPU[name]; ok {
			res.ReplicaCPUSeconds[name] = a - b
			total += a - b
			res.ReplicasScraped++
		}
	}
	res.ClientCPUSeconds = after.clientCPU - before.clientCPU
	if res.Calls > 0 {
		res.ReplicaCPUMsPerCall = total * 1000 / float64(res.Calls)
		res.ClientCPUMsPerCall = res.ClientCPUSeconds * 1000 / float64(res.Calls)
	}
}

// writeJSONFile writes v as indented JSON.
func writeJSONFile(path string, v any) error {
	data, err := jsonIndent(v)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}
