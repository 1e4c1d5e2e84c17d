package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/olekukonko/tablewriter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/txn"
)

// txnBenchReport is what a transaction bench process reports (and writes
// with --json): the load step, one result per measured interval, the Fig. 5
// table when --byzantine lists several shares, and the bank's checks.
type txnBenchReport struct {
	Workload  string          `json:"workload"`
	Shape     string          `json:"shape"`
	Groups    int             `json:"groups"`
	Items     int             `json:"items"`
	ValueSize int             `json:"value_size_bytes"`
	Seed      uint64          `json:"seed"`
	Load      *loadResult     `json:"load,omitempty"`
	Runs      []*txnRunResult `json:"runs"`
	Fig5      []fig5Row       `json:"fig5,omitempty"`
	Bank      *bankReport     `json:"bank,omitempty"`
	OK        bool            `json:"ok"`
	Problems  []string        `json:"problems,omitempty"`
	NumCPU    int             `json:"num_cpu"`
	GoVersion string          `json:"go_version"`
}

// txnRunResult is one measured interval.
type txnRunResult struct {
	Workload         string    `json:"workload"`
	Shape            string    `json:"shape"`
	Groups           int       `json:"groups"`
	Items            int       `json:"items"`
	ValueSize        int       `json:"value_size_bytes"`
	MultiGroupPct    int       `json:"multi_group_pct"`
	ByzantinePct     int       `json:"byzantine_pct"`
	Callers          int       `json:"callers"`
	CorrectCallers   int       `json:"correct_callers"`
	ByzantineCallers int       `json:"byzantine_callers"`
	StartedAt        time.Time `json:"started_at"`
	WarmupSeconds    float64   `json:"warmup_seconds"`
	MeasuredSeconds  float64   `json:"measured_seconds"`
	// LoadAvgBefore/After are /proc/loadavg's three figures: the machine's
	// load beside the numbers.
	LoadAvgBefore string `json:"loadavg_before"`
	LoadAvgAfter  string `json:"loadavg_after"`
	// Profiles names, per replica, the CPU profile written (--profile), or
	// why there is none.
	Profiles map[string]string `json:"profiles,omitempty"`

	// Committed counts the correct callers' transactions that committed in
	// the measured interval (a "guarded" pair counts once), by kind.
	Committed       int64   `json:"committed"`
	CommittedSingle int64   `json:"committed_single_group"`
	CommittedMulti  int64   `json:"committed_multi_group"`
	TxnPerSecond    float64 `json:"txn_per_second"`
	// Aborted counts transactions that aborted for good (after the
	// library's retries), by the reason of the deciding vote.
	Aborted        int64            `json:"aborted"`
	AbortedReasons map[string]int64 `json:"aborted_by_reason,omitempty"`
	// Attempts counts transactions sent (every retry is one, K5);
	// RetriedReasons the aborts that were retried, by reason; AbortRate is
	// (retried + aborted) / attempts.
	Attempts       float64            `json:"attempts"`
	RetriedReasons map[string]float64 `json:"retried_by_reason,omitempty"`
	AbortRate      float64            `json:"abort_rate"`
	// Recoveries are the correct client's recoveries of other owners'
	// pending transactions (K4), by result.
	Recoveries map[string]float64 `json:"recoveries,omitempty"`
	// WindowWaits counts correct callers' transactions that waited for a
	// nonce: the client's oldest unfinished transaction held its watermark
	// a whole window (P) behind its next nonce (W3), so every caller of the
	// client stalled until it finished.
	WindowWaits float64 `json:"window_waits"`
	// ClientAnomalies are answers no correct group gives (coord's count).
	ClientAnomalies map[string]float64 `json:"client_anomalies,omitempty"`
	AbsentReads     int64              `json:"absent_reads"`

	Errors           int64   `json:"errors"`
	FailedCalls      int64   `json:"failed"`
	TimedOutCalls    int64   `json:"timed_out"`
	OutstandingCalls int64   `json:"outstanding"`
	FirstError       string  `json:"first_error,omitempty"`
	DrainedCalls     int64   `json:"drained"`
	DrainSeconds     float64 `json:"drain_seconds"`

	LastCompletionSeconds float64 `json:"last_completion_seconds"`
	StallWindowSeconds    float64 `json:"stall_window_seconds"`
	Stalled               bool    `json:"stalled"`
	CallTimeoutSeconds    float64 `json:"call_timeout_seconds"`
	RecoveryGraceSeconds  float64 `json:"recovery_grace_seconds"`

	LatencyMs       latencyMs `json:"latency_ms"`
	LatencySingleMs latencyMs `json:"latency_single_group_ms"`
	LatencyMultiMs  latencyMs `json:"latency_multi_group_ms"`

	// ClusterCPUSeconds sums process_cpu_seconds_total over every replica
	// process of every group across the interval; GroupCPUSeconds by group;
	// CPUMsPerTxn divides it by Committed.
	ClusterCPUSeconds float64            `json:"cluster_cpu_seconds"`
	GroupCPUSeconds   map[string]float64 `json:"group_cpu_seconds"`
	ReplicaCPUSeconds map[string]float64 `json:"replica_cpu_seconds"`
	ReplicasScraped   int                `json:"replicas_scraped"`
	Replicas          int                `json:"replicas"`
	ReplicasMissing   map[string]string  `json:"replicas_missing,omitempty"`
	CPUMsPerTxn       float64            `json:"cluster_cpu_ms_per_txn"`
	ClientCPUSeconds  float64            `json:"client_cpu_seconds"`
	ClientCPUMsPerTxn float64            `json:"client_cpu_ms_per_txn"`
	// CallsPerTxn are the calls the correct client sent to groups per
	// committed transaction (every group of every attempt, outcomes and
	// proofs included), in EnvelopesPerTxn signed envelopes
	// (CallsPerEnvelope calls each); EnvelopesPerBatch is the mean PBFT
	// batch size over every replica, BatchesPerTxn the groups' PBFT
	// batches per committed transaction (Byzantine callers' included).
	CallsPerTxn       float64 `json:"calls_per_txn"`
	EnvelopesPerTxn   float64 `json:"envelopes_per_txn"`
	CallsPerEnvelope  float64 `json:"calls_per_envelope"`
	EnvelopesPerBatch float64 `json:"envelopes_per_batch"`
	BatchesPerTxn     float64 `json:"batches_per_txn"`
	replicasPerGroup  int
	// CallBytesSingle is the size of the call carrying a single-group
	// transaction of the workload: the size of the noop call to compare
	// with.
	CallBytesSingle int `json:"call_bytes_single_group"`

	// RateLimit is --rate: the transactions per second the correct callers
	// were paced to start at most (0: unpaced); RateMet says whether they
	// finished (committed, or aborted for good) at least rateMetShare of
	// it, that is whether the cluster kept up with the offered load. Aborts
	// count: a cluster that answers every transaction at the offered rate
	// kept up, whatever the workload's conflicts made of them.
	RateLimit float64 `json:"rate_limit,omitempty"`
	RateMet   bool    `json:"rate_met,omitempty"`

	Byzantine *byzRunStats `json:"byzantine,omitempty"`

	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// loadAvg returns /proc/loadavg's 1, 5 and 15 minute figures ("" if
// unreadable).
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// collect merges the callers' records.
func (res *txnRunResult) collect(callers []*txnCaller) {
	hist, hs, hm := newHist(), newHist(), newHist()
	res.AbortedReasons = map[string]int64{}
	for _, tc := range callers {
		hist.Merge(tc.hist)
		hs.Merge(tc.histSingle)
		hm.Merge(tc.histMulti)
		res.Committed += tc.committed
		res.CommittedSingle += tc.single
		res.CommittedMulti += tc.multi
		for r, n := range tc.aborted {
			res.AbortedReasons[r] += n
			res.Aborted += n
		}
		res.FailedCalls += tc.failed
		res.TimedOutCalls += tc.timedOut
		res.OutstandingCalls += tc.outstanding
		res.DrainedCalls += tc.drained
		res.AbsentReads += tc.absentReads
		if tc.firstErr != nil && res.FirstError == "" {
			res.FirstError = tc.firstErr.Error()
		}
	}
	if len(res.AbortedReasons) == 0 {
		res.AbortedReasons = nil
	}
	res.Errors = res.FailedCalls + res.TimedOutCalls + res.OutstandingCalls
	res.TxnPerSecond = float64(res.Committed) / res.MeasuredSeconds
	res.LatencyMs = latencyOf(hist)
	res.LatencySingleMs = latencyOf(hs)
	res.LatencyMultiMs = latencyOf(hm)
}

func latencyOf(h *hdrhistogram.Histogram) latencyMs {
	if h.TotalCount() == 0 {
		return latencyMs{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return latencyMs{Mean: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)), P95: ms(h.ValueAtQuantile(95)),
		P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

// clusterSnapshot is the state of the counters at one end of an interval:
// every replica's CPU (and start time, to see restarts), the client
// library's counters, this process's CPU.
type clusterSnapshot struct {
	replicaCPU   map[string]float64
	replicaStart map[string]float64
	replicaGroup map[string]string
	missing      map[string]string
	counters     map[string]map[string]float64 // metric -> label value -> value
	clientCPU    float64
	// batchSum and batchCount sum every replica's PBFT batch size histogram
	// (requests = envelopes per batch); envCalls and envCount the group
	// clients' envelope size histogram (calls per envelope).
	batchSum, batchCount float64
	envCalls, envCount   float64
}

// The client library's counters the report reads, with the label that
// splits each.
var txnClientCounters = map[string]string{
	"augustus_txn_client_attempts_total":   "",
	"augustus_txn_client_retries_total":    "reason",
	"augustus_txn_client_recoveries_total": "result",
	"augustus_txn_client_anomalies_total":  "kind",
	// Transactions of correct callers that waited for a nonce: the client's
	// oldest unfinished transaction held its watermark P nonces behind (W3).
	"augustus_txn_client_window_waits_total": "",
}

// snapshot scrapes every replica of every group, in parallel.
func (b *txnBench) snapshot(ctx context.Context) clusterSnapshot {
	s := clusterSnapshot{replicaCPU: map[string]float64{}, replicaStart: map[string]float64{}, replicaGroup: map[string]string{},
		missing: map[string]string{}, clientCPU: processCPUSeconds()}
	s.counters = gatherCounters(b.reg, txnClientCounters)
	s.envCalls, s.envCount = gatherHistogram(b.reg, "augustus_client_envelope_size_calls")
	for _, g := range b.c.Groups {
		for _, r := range g.Replicas {
			s.replicaGroup[r.Name] = fmt.Sprint(g.ID)
		}
	}
	for _, sc := range scrapeReplicas(ctx, allReplicas(b.c)) {
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
			s.batchSum += h.GetSampleSum()
			s.batchCount += float64(h.GetSampleCount())
		}
	}
	return s
}

// gatherHistogram returns the sum and count of the histogram name of reg
// (summed over its label values).
func gatherHistogram(reg *prometheus.Registry, name string) (sum, count float64) {
	fams, err := reg.Gather()
	if err != nil {
		return 0, 0
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetHistogram().GetSampleSum()
			count += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, count
}

// gatherCounters reads counters of reg, summed by the value of one label
// ("" sums them all under "").
func gatherCounters(reg *prometheus.Registry, names map[string]string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		return out
	}
	for _, f := range fams {
		label, ok := names[f.GetName()]
		if !ok {
			continue
		}
		m := map[string]float64{}
		for _, s := range f.GetMetric() {
			lv := ""
			for _, lp := range s.GetLabel() {
				if label != "" && lp.GetName() == label {
					lv = lp.GetValue()
				}
			}
			m[lv] += s.GetCounter().GetValue()
		}
		out[f.GetName()] = m
	}
	return out
}

// counterDelta is after - before per label value, without zero entries.
func counterDelta(before, after clusterSnapshot, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after.counters[name] {
		if d := v - before.counters[name][k]; d > 0 {
			out[k] = d
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// fillCPU computes the CPU and library counter figures of the interval.
func (res *txnRunResult) fillCPU(before, after clusterSnapshot) {
	res.Replicas = len(after.replicaGroup)
	res.ReplicaCPUSeconds = map[string]float64{}
	res.GroupCPUSeconds = map[string]float64{}
	res.ReplicasMissing = map[string]string{}
	for name, a := range after.replicaCPU {
		bv, ok := before.replicaCPU[name]
		if !ok {
			continue
		}
		if after.replicaStart[name] != before.replicaStart[name] || a < bv {
			res.ReplicasMissing[name] = "it restarted during the interval, so its CPU counter started over"
			continue
		}
		res.ReplicaCPUSeconds[name] = a - bv
		res.GroupCPUSeconds[after.replicaGroup[name]] += a - bv
		res.ClusterCPUSeconds += a - bv
		res.ReplicasScraped++
	}
	for _, snap := range []clusterSnapshot{after, before} {
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
	if n := after.batchCount - before.batchCount; n > 0 {
		res.EnvelopesPerBatch = (after.batchSum - before.batchSum) / n
		if res.Committed > 0 && res.replicasPerGroup > 0 {
			// Every replica of a group counts each of the group's batches.
			res.BatchesPerTxn = n / float64(res.replicasPerGroup) / float64(res.Committed)
		}
	}
	if n := after.envCount - before.envCount; n > 0 {
		calls := after.envCalls - before.envCalls
		res.CallsPerEnvelope = calls / n
		if res.Committed > 0 {
			res.CallsPerTxn = calls / float64(res.Committed)
			res.EnvelopesPerTxn = n / float64(res.Committed)
		}
	}
	if res.Committed > 0 {
		res.CPUMsPerTxn = res.ClusterCPUSeconds * 1000 / float64(res.Committed)
		res.ClientCPUMsPerTxn = res.ClientCPUSeconds * 1000 / float64(res.Committed)
	}
	res.Attempts = counterDelta(before, after, "augustus_txn_client_attempts_total")[""]
	res.RetriedReasons = counterDelta(before, after, "augustus_txn_client_retries_total")
	res.Recoveries = counterDelta(before, after, "augustus_txn_client_recoveries_total")
	res.ClientAnomalies = counterDelta(before, after, "augustus_txn_client_anomalies_total")
	res.WindowWaits = counterDelta(before, after, "augustus_txn_client_window_waits_total")[""]
	if res.Attempts > 0 {
		var retried float64
		for _, v := range res.RetriedReasons {
			retried += v
		}
		res.AbortRate = (retried + float64(res.Aborted)) / res.Attempts
	}
}

// rateMetShare is the share of --rate a paced interval must finish for the
// offered load to count as met: the transactions in flight at either end of
// the interval take a little of it.
const rateMetShare = 0.95

// judge decides whether the interval succeeded and, if not, says why.
func (res *txnRunResult) judge(o benchOptions) {
	if res.Errors > 0 {
		p := fmt.Sprintf("%d transactions did not complete (%d failed, %d hit --call-timeout %s, %d without an outcome %.1fs after the end)",
			res.Errors, res.FailedCalls, res.TimedOutCalls, o.callTimeout, res.OutstandingCalls, res.DrainSeconds)
		if res.FirstError != "" {
			p += ", first error: " + res.FirstError
		}
		res.Problems = append(res.Problems, p)
	}
	if res.Stalled {
		if res.LastCompletionSeconds < 0 {
			res.Problems = append(res.Problems, fmt.Sprintf("no transaction committed in the measured %.1fs: are the groups running (2f+1 replicas each), with --app txn?", res.MeasuredSeconds))
		} else {
			res.Problems = append(res.Problems, fmt.Sprintf("no transaction committed in the last %.0fs of the interval (the last at %.1fs): the cluster stopped answering",
				res.StallWindowSeconds, res.LastCompletionSeconds))
		}
	}
	if res.AbsentReads > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d reads found no item: the database is not loaded (run once with --load, same --items)", res.AbsentReads))
	}
	if n := res.AbortedReasons[txn.ReasonNotFound.String()]; n > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d transactions wrote items that do not exist: the database is not loaded (run once with --load, same --items)", n))
	}
	if len(res.ClientAnomalies) > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("the client library saw answers no correct group gives: %v", res.ClientAnomalies))
	}
	// An offered load the cluster could not keep up with is a measurement,
	// not a failure: the report says so and the suite does not compare it
	// as if met.
	finished := float64(res.Committed+res.Aborted) / res.MeasuredSeconds
	res.RateMet = res.RateLimit > 0 && finished >= rateMetShare*res.RateLimit
	if bz := res.Byzantine; bz != nil && bz.LeftUnfinished > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d abandoned transactions were still unfinished after the clean-up", bz.LeftUnfinished))
	}
	res.OK = len(res.Problems) == 0
}

// fmtTxnRate gives the committed rate, and the offered one under --rate.
func fmtTxnRate(r *txnRunResult) string {
	out := fmt.Sprintf("%.0f", r.TxnPerSecond)
	switch {
	case r.RateLimit <= 0:
	case r.RateMet:
		out += fmt.Sprintf(" (paced to at most %.0f txn/s in all by --rate: met)", r.RateLimit)
	default:
		out += fmt.Sprintf(" (paced to at most %.0f txn/s in all by --rate: NOT met, the cluster did not keep up)", r.RateLimit)
	}
	return out
}

func fmtLatency(l latencyMs) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f ms (mean %.2f)", l.P50, l.P95, l.P99, l.Mean)
}

func fmtCounts[V int64 | float64 | string](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// printTxnRun writes one interval's result as a two-column table.
func printTxnRun(w io.Writer, r *txnRunResult) error {
	cpu := fmt.Sprintf("%.3f ms/txn over %d of %d replicas (%.2fs in all; by group: %s)",
		r.CPUMsPerTxn, r.ReplicasScraped, r.Replicas, r.ClusterCPUSeconds, fmtCPU(r.GroupCPUSeconds))
	if len(r.ReplicasMissing) > 0 {
		cpu += "; left out: " + fmtCounts(r.ReplicasMissing)
	}
	outcome := "ok"
	if !r.OK {
		outcome = "FAILED: " + strings.Join(r.Problems, "; ")
	}
	rows := [][]string{
		{"workload", fmt.Sprintf("%s (%s shape), %d items, %d-byte values, %d group(s)", r.Workload, r.Shape, r.Items, r.ValueSize, r.Groups)},
		{"mix", fmt.Sprintf("%d%% multi-group, %d%% Byzantine callers", r.MultiGroupPct, r.ByzantinePct)},
		{"callers", fmt.Sprintf("%d correct (one client), %d Byzantine", r.CorrectCallers, r.ByzantineCallers)},
		{"measured", fmt.Sprintf("%.1fs after %.1fs warm-up; load average %s → %s", r.MeasuredSeconds, r.WarmupSeconds, r.LoadAvgBefore, r.LoadAvgAfter)},
		{"committed", fmt.Sprintf("%d (%d single-group, %d multi-group)", r.Committed, r.CommittedSingle, r.CommittedMulti)},
		{"txn/s", fmtTxnRate(r)},
		{"latency p50 / p95 / p99", fmtLatency(r.LatencyMs)},
		{"  single-group", fmtLatency(r.LatencySingleMs)},
		{"  multi-group", fmtLatency(r.LatencyMultiMs)},
		{"aborts", fmt.Sprintf("rate %.2f%% of %.0f attempts; retried: %s; aborted for good: %s", 100*r.AbortRate, r.Attempts, fmtCounts(r.RetriedReasons), fmtCounts(r.AbortedReasons))},
		{"recoveries (K4)", fmtCounts(r.Recoveries)},
		{"nonce window waits", fmt.Sprintf("%.0f", r.WindowWaits)},
		{"cluster CPU", cpu},
		{"bench client CPU", fmt.Sprintf("%.3f ms/txn (%.2fs)", r.ClientCPUMsPerTxn, r.ClientCPUSeconds)},
		{"calls", fmt.Sprintf("%.2f calls/txn in %.2f envelopes/txn (%.1f calls per envelope); %.1f envelopes per PBFT batch, %.2f group batches/txn",
			r.CallsPerTxn, r.EnvelopesPerTxn, r.CallsPerEnvelope, r.EnvelopesPerBatch, r.BatchesPerTxn)},
		{"single-group call", fmt.Sprintf("%d bytes", r.CallBytesSingle)},
	}
	if bz := r.Byzantine; bz != nil {
		rows = append(rows, []string{"Byzantine callers", fmt.Sprintf("%d abandoned (%d voted commit somewhere), %d seen terminated by others (mean %.0f ms after the votes), %d failed sends, %d left to the clean-up, %d still unfinished after it",
			bz.Abandoned, bz.CommitVoted, bz.SeenTerminated, bz.MeanTerminationMs, bz.SendErrors, bz.LeftPending, bz.LeftUnfinished)})
	}
	rows = append(rows, profileRows(r.Profiles)...)
	rows = append(rows, []string{"errors", fmt.Sprintf("%d", r.Errors)}, []string{"outcome", outcome})
	t := tablewriter.NewWriter(w)
	t.Header("result", "value")
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("bench report: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("bench report: %w", err)
	}
	return nil
}

func fmtCPU(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("g%s %.2fs", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// fig5Row is one line of the Byzantine-client table: the correct callers'
// throughput at a share of Byzantine callers, and the loss against the
// runs without Byzantine callers at the same mix (fig5Rows says which).
type fig5Row struct {
	MultiGroupPct  int     `json:"multi_group_pct"`
	ByzantinePct   int     `json:"byzantine_pct"`
	CorrectCallers int     `json:"correct_callers"`
	TxnPerSecond   float64 `json:"txn_per_second"`
	LossPct        float64 `json:"loss_pct"`
	MeanLatencyMs  float64 `json:"mean_latency_ms"`
	P99LatencyMs   float64 `json:"p99_latency_ms"`
	Recovered      float64 `json:"recovered"`
	Abandoned      int64   `json:"abandoned"`
	// BaselineTxnPerSecond is what LossPct is against (fig5Rows).
	BaselineTxnPerSecond float64 `json:"baseline_txn_per_second"`
}

// fig5Baselines returns, per mix, the mean throughput of the runs without
// Byzantine callers: what a baseline run's spread is shown against.
func fig5Baselines(runs []*txnRunResult) map[int]float64 {
	sum, n := map[int]float64{}, map[int]int{}
	for _, r := range runs {
		if r.ByzantinePct == 0 {
			sum[r.MultiGroupPct] += r.TxnPerSecond
			n[r.MultiGroupPct]++
		}
	}
	base := make(map[int]float64, len(sum))
	for mix, s := range sum {
		base[mix] = s / float64(n[mix])
	}
	return base
}

// fig5Rows builds the table when some run had Byzantine callers and a run
// of the same mix had none. A run with Byzantine callers loses against the
// runs without them that bracket it in the series: the mean of the nearest
// one before and the nearest one after at its mix (one side alone at an
// end). "--byzantine 0,10,20,30,0" thus compares every run with the
// baselines before and after the series, and a repeated series
// ("0,30,0,30,0") compares each round with its own neighbours, so a drift of
// the machine or of the store (compactions after a load) over a long series
// does not pass for a loss or a gain. A run without Byzantine callers is
// shown against the mean of them all (the spread of the baselines).
func fig5Rows(runs []*txnRunResult) []fig5Row {
	base := fig5Baselines(runs)
	var rows []fig5Row
	byz := false
	for _, r := range runs {
		byz = byz || r.ByzantinePct > 0
	}
	if !byz {
		return nil
	}
	for i, r := range runs {
		b, ok := base[r.MultiGroupPct]
		if !ok {
			continue
		}
		if r.ByzantinePct > 0 {
			b = fig5Bracket(runs, i)
		}
		row := fig5Row{MultiGroupPct: r.MultiGroupPct, ByzantinePct: r.ByzantinePct, CorrectCallers: r.CorrectCallers,
			TxnPerSecond: r.TxnPerSecond, MeanLatencyMs: r.LatencyMs.Mean, P99LatencyMs: r.LatencyMs.P99, BaselineTxnPerSecond: b}
		if b > 0 {
			row.LossPct = 100 * (1 - r.TxnPerSecond/b)
		}
		for _, v := range r.Recoveries {
			row.Recovered += v
		}
		if r.Byzantine != nil {
			row.Abandoned = r.Byzantine.Abandoned
		}
		rows = append(rows, row)
	}
	return rows
}

// fig5Bracket returns the mean throughput of the nearest runs without
// Byzantine callers before and after runs[i] at its mix (0 if none).
func fig5Bracket(runs []*txnRunResult, i int) float64 {
	mix := runs[i].MultiGroupPct
	nearest := func(from, step int) (float64, bool) {
		for j := from; j >= 0 && j < len(runs); j += step {
			if r := runs[j]; r.ByzantinePct == 0 && r.MultiGroupPct == mix {
				return r.TxnPerSecond, true
			}
		}
		return 0, false
	}
	before, okB := nearest(i-1, -1)
	after, okA := nearest(i+1, 1)
	switch {
	case okB && okA:
		return (before + after) / 2
	case okB:
		return before
	case okA:
		return after
	}
	return 0
}

func printFig5(w io.Writer, rows []fig5Row) {
	fmt.Fprintln(w, "Byzantine callers (Fig. 5): correct callers' throughput")
	t := tablewriter.NewWriter(w)
	t.Header("multi-group", "Byzantine", "correct callers", "txn/s", "against", "loss", "mean / p99 latency", "abandoned", "recovered")
	for _, r := range rows {
		_ = t.Append([]string{fmt.Sprintf("%d%%", r.MultiGroupPct), fmt.Sprintf("%d%%", r.ByzantinePct), fmt.Sprint(r.CorrectCallers),
			fmt.Sprintf("%.0f", r.TxnPerSecond), fmt.Sprintf("%.0f", r.BaselineTxnPerSecond), fmt.Sprintf("%.1f%%", r.LossPct),
			fmt.Sprintf("%.1f / %.1f ms", r.MeanLatencyMs, r.P99LatencyMs), fmt.Sprint(r.Abandoned), fmt.Sprintf("%.0f", r.Recovered)})
	}
	_ = t.Render()
}
