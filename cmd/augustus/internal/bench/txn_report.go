package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/augustus-db/augustus/pkg/txn"
)

// TxnReport is what a transaction bench process reports (and writes with
// --json): the load step, one result per measured interval, the Fig. 5
// table when --byzantine lists several shares, and the bank's checks.
type TxnReport struct {
	Workload  string      `json:"workload"`
	Shape     string      `json:"shape"`
	Groups    int         `json:"groups"`
	Items     int         `json:"items"`
	ValueSize int         `json:"value_size_bytes"`
	Seed      uint64      `json:"seed"`
	Load      *LoadResult `json:"load,omitempty"`
	Runs      []*TxnRun   `json:"runs"`
	Fig5      []Fig5Row   `json:"fig5,omitempty"`
	Bank      *BankReport `json:"bank,omitempty"`
	OK        bool        `json:"ok"`
	Problems  []string    `json:"problems,omitempty"`
	NumCPU    int         `json:"num_cpu"`
	GoVersion string      `json:"go_version"`
	Provenance
}

// TxnRun is one measured interval.
type TxnRun struct {
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
	// Mix describes the interval's mix (the report's "mix" row).
	Mix string `json:"mix"`
	// LoadAvgBefore/After are /proc/loadavg's three figures: the machine's
	// load beside the numbers.
	LoadAvgBefore string `json:"loadavg_before"`
	LoadAvgAfter  string `json:"loadavg_after"`
	// Profiles names, per replica, the CPU profile written (--profile), or
	// why there is none.
	Profiles map[string]string `json:"profiles,omitempty"`

	// Committed counts the correct callers' transactions that committed in
	// the measured interval (a "guarded" pair, a transfer, a timeline count
	// once), by the groups they involved.
	Committed       int64   `json:"committed"`
	CommittedSingle int64   `json:"committed_single_group"`
	CommittedMulti  int64   `json:"committed_multi_group"`
	TxnPerSecond    float64 `json:"txn_per_second"`
	// Aborted counts transactions that aborted for good (after the
	// library's retries), by the reason of the deciding vote.
	Aborted        int64            `json:"aborted"`
	AbortedReasons map[string]int64 `json:"aborted_by_reason,omitempty"`
	// ByKind splits the interval by kind of transaction (buzzer: post,
	// follow, timeline).
	ByKind map[string]KindResult `json:"by_kind,omitempty"`
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

	Errors           int64  `json:"errors"`
	FailedCalls      int64  `json:"failed"`
	TimedOutCalls    int64  `json:"timed_out"`
	OutstandingCalls int64  `json:"outstanding"`
	FirstError       string `json:"first_error,omitempty"`
	// ErrorsByKind splits Errors: the failed transactions by kind of
	// error, then "timed_out" and "outstanding".
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	DrainedCalls int64            `json:"drained"`
	DrainSeconds float64          `json:"drain_seconds"`

	LastCompletionSeconds float64 `json:"last_completion_seconds"`
	StallWindowSeconds    float64 `json:"stall_window_seconds"`
	Stalled               bool    `json:"stalled"`
	CallTimeoutSeconds    float64 `json:"call_timeout_seconds"`
	RecoveryGraceSeconds  float64 `json:"recovery_grace_seconds"`

	LatencyMs       LatencyMs `json:"latency_ms"`
	LatencySingleMs LatencyMs `json:"latency_single_group_ms"`
	LatencyMultiMs  LatencyMs `json:"latency_multi_group_ms"`

	// ClusterCPUSeconds sums process_cpu_seconds_total over every replica
	// process of every group across the interval; GroupCPUSeconds by group;
	// CPUMsPerTxn divides it by Committed, ReplicaCPUMsPerTxn each
	// replica's.
	ClusterCPUSeconds  float64            `json:"cluster_cpu_seconds"`
	GroupCPUSeconds    map[string]float64 `json:"group_cpu_seconds"`
	ReplicaCPUSeconds  map[string]float64 `json:"replica_cpu_seconds"`
	ReplicaCPUMsPerTxn map[string]float64 `json:"replica_cpu_ms_per_txn,omitempty"`
	ReplicasScraped    int                `json:"replicas_scraped"`
	Replicas           int                `json:"replicas"`
	ReplicasMissing    map[string]string  `json:"replicas_missing,omitempty"`
	CPUMsPerTxn        float64            `json:"cluster_cpu_ms_per_txn"`
	ClientCPUSeconds   float64            `json:"client_cpu_seconds"`
	ClientCPUMsPerTxn  float64            `json:"client_cpu_ms_per_txn"`
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
	// perReplica shows each replica's CPU (--replica-cpu); machine and
	// build are the report's last rows (the JSON has them once, in
	// TxnReport).
	perReplica     bool
	machine, build string
	// CallBytesSingle is the size of the call carrying a single-group
	// transaction of the workload: the size of the noop call to compare
	// with.
	CallBytesSingle int `json:"call_bytes_single_group"`

	// RateLimit is --rate: the transactions per second the open loop
	// offered the correct callers (0: the closed loop); Scheduled fell due
	// in the interval, Missed of them found every correct caller busy and
	// were not started. RateMet says whether they finished (committed, or
	// aborted for good) at least rateMetShare of the rate, that is whether
	// the cluster kept up with the offered load. Aborts count: a cluster
	// that answers every transaction at the offered rate kept up, whatever
	// the workload's conflicts made of them.
	RateLimit float64 `json:"rate_limit,omitempty"`
	Scheduled int64   `json:"scheduled,omitempty"`
	Missed    int64   `json:"missed,omitempty"`
	RateMet   bool    `json:"rate_met,omitempty"`

	Byzantine *byzRunStats `json:"byzantine,omitempty"`

	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// KindResult is one kind of transaction's share of an interval.
type KindResult struct {
	Committed    int64     `json:"committed"`
	Aborted      int64     `json:"aborted"`
	TxnPerSecond float64   `json:"txn_per_second"`
	LatencyMs    LatencyMs `json:"latency_ms"`
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

// fill takes the interval's record.
func (res *TxnRun) fill(m *measured) {
	res.MeasuredSeconds = m.seconds
	res.DrainSeconds = m.drainSeconds
	res.Committed, res.CommittedSingle, res.CommittedMulti = m.committed, m.single, m.multi
	res.AbortedReasons = map[string]int64{}
	for r, n := range m.aborted {
		res.AbortedReasons[r] += n
		res.Aborted += n
	}
	if len(res.AbortedReasons) == 0 {
		res.AbortedReasons = nil
	}
	res.FailedCalls, res.TimedOutCalls, res.OutstandingCalls, res.DrainedCalls = m.failed, m.timedOut, m.outstanding, m.drained
	res.AbsentReads = m.absent
	res.FirstError = m.firstErr
	res.Errors = res.FailedCalls + res.TimedOutCalls + res.OutstandingCalls
	res.ErrorsByKind = errorsByKind(m)
	res.Scheduled, res.Missed = m.scheduled, m.missed
	res.TxnPerSecond = float64(res.Committed) / res.MeasuredSeconds
	res.LatencyMs = latencyOf(m.hist)
	res.LatencySingleMs = latencyOf(m.histSingle)
	res.LatencyMultiMs = latencyOf(m.histMulti)
	for k, kr := range m.kinds {
		if res.ByKind == nil {
			res.ByKind = map[string]KindResult{}
		}
		res.ByKind[k] = KindResult{Committed: kr.committed, Aborted: kr.aborted, TxnPerSecond: float64(kr.committed) / res.MeasuredSeconds,
			LatencyMs: latencyOf(kr.hist)}
	}
	res.StallWindowSeconds, res.LastCompletionSeconds, res.Stalled = m.stallWindow, m.lastCompletion, m.stalled
}

// txnClientCounters are the client library's counters the report reads,
// with the label that splits each.
var txnClientCounters = map[string]string{
	"augustus_txn_client_attempts_total":   "",
	"augustus_txn_client_retries_total":    "reason",
	"augustus_txn_client_recoveries_total": "result",
	"augustus_txn_client_anomalies_total":  "kind",
	// Transactions of correct callers that waited for a nonce: the client's
	// oldest unfinished transaction held its watermark P nonces behind (W3).
	"augustus_txn_client_window_waits_total": "",
}

// fillCPU computes the CPU and library counter figures of the interval.
func (res *TxnRun) fillCPU(before, after snapshot) {
	res.Replicas = len(after.replicaGroup)
	res.GroupCPUSeconds = map[string]float64{}
	res.ReplicaCPUSeconds, res.ReplicasMissing = cpuDelta(before, after)
	for name, cpu := range res.ReplicaCPUSeconds {
		res.GroupCPUSeconds[after.replicaGroup[name]] += cpu
		res.ClusterCPUSeconds += cpu
	}
	res.ReplicasScraped = len(res.ReplicaCPUSeconds)
	res.ClientCPUSeconds = after.clientCPU - before.clientCPU
	var batchSum, batchCount float64
	for name, a := range after.replicaBatches {
		if b, ok := before.replicaBatches[name]; ok {
			batchCount += a - b
			batchSum += after.replicaBatchSum[name] - before.replicaBatchSum[name]
		}
	}
	if batchCount > 0 {
		res.EnvelopesPerBatch = batchSum / batchCount
		if res.Committed > 0 && res.replicasPerGroup > 0 {
			// Every replica of a group counts each of the group's batches.
			res.BatchesPerTxn = batchCount / float64(res.replicasPerGroup) / float64(res.Committed)
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
		res.ReplicaCPUMsPerTxn = map[string]float64{}
		for name, cpu := range res.ReplicaCPUSeconds {
			res.ReplicaCPUMsPerTxn[name] = cpu * 1000 / float64(res.Committed)
		}
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

// rateMetShare is the share of --rate an interval must finish for the
// offered load to count as met: the transactions in flight at either end of
// the interval take a little of it.
const rateMetShare = 0.95

// judge decides whether the interval succeeded and, if not, says why.
func (res *TxnRun) judge(o *Options) {
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
func fmtTxnRate(r *TxnRun) string {
	out := fmt.Sprintf("%.0f", r.TxnPerSecond)
	switch {
	case r.RateLimit <= 0:
	case r.RateMet:
		out += fmt.Sprintf(" (offered %.0f txn/s in all by --rate: met)", r.RateLimit)
	default:
		out += fmt.Sprintf(" (offered %.0f txn/s in all by --rate: NOT met, the cluster did not keep up)", r.RateLimit)
	}
	return out
}

func fmtLatency(l LatencyMs) string {
	return fmt.Sprintf("%.2f / %.2f / %.2f ms (mean %.2f, max %.2f)", l.P50, l.P95, l.P99, l.Mean, l.Max)
}

// printTxnRun writes one interval's result as a two-column table, then
// the replicas left out of the CPU figures and the problems.
func printTxnRun(w io.Writer, r *TxnRun) error {
	rep := &report{}
	cpu := fmt.Sprintf("%.3f ms/txn over %d of %d replicas (%.2fs in all; by group: %s)",
		r.CPUMsPerTxn, r.ReplicasScraped, r.Replicas, r.ClusterCPUSeconds, fmtCPU(r.GroupCPUSeconds))
	leftOut(rep, &cpu, r.ReplicasMissing)
	rep.row("workload", fmt.Sprintf("%s (%s shape), %d items, %d-byte values, %d group(s)", r.Workload, r.Shape, r.Items, r.ValueSize, r.Groups))
	rep.row("mix", r.Mix)
	rep.row("callers", fmt.Sprintf("%d correct (one client), %d Byzantine", r.CorrectCallers, r.ByzantineCallers))
	if r.RateLimit > 0 {
		rep.row("offered load", offeredRow(r.RateLimit, "txn", r.Scheduled, r.Missed))
	}
	rep.row("measured", fmt.Sprintf("%.1fs after %.1fs warm-up; load average %s → %s", r.MeasuredSeconds, r.WarmupSeconds, r.LoadAvgBefore, r.LoadAvgAfter))
	rep.row("committed", fmt.Sprintf("%d (%d single-group, %d multi-group)", r.Committed, r.CommittedSingle, r.CommittedMulti))
	rep.row("txn/s", fmtTxnRate(r))
	rep.row("latency p50 / p95 / p99", fmtLatency(r.LatencyMs))
	rep.row("  single-group", fmtLatency(r.LatencySingleMs))
	rep.row("  multi-group", fmtLatency(r.LatencyMultiMs))
	for _, k := range sortedKeys(r.ByKind) {
		kr := r.ByKind[k]
		rep.row("  "+k, fmt.Sprintf("%s; %d committed (%.0f/s), %d aborted", fmtLatency(kr.LatencyMs), kr.Committed, kr.TxnPerSecond, kr.Aborted))
	}
	rep.row("aborts", fmt.Sprintf("rate %.2f%% of %.0f attempts; retried: %s; aborted for good: %s", 100*r.AbortRate, r.Attempts, fmtCounts(r.RetriedReasons), fmtCounts(r.AbortedReasons)))
	rep.row("recoveries (K4)", fmtCounts(r.Recoveries))
	rep.row("nonce window waits", fmt.Sprintf("%.0f", r.WindowWaits))
	rep.row("cluster CPU", cpu)
	if r.perReplica {
		for _, n := range sortedKeys(r.ReplicaCPUSeconds) {
			rep.row("  "+n, fmt.Sprintf("%.3f ms/txn, %.0f%% of a core", r.ReplicaCPUMsPerTxn[n], 100*r.ReplicaCPUSeconds[n]/r.MeasuredSeconds))
		}
	}
	rep.row("bench client CPU", fmt.Sprintf("%.3f ms/txn (%.2fs)", r.ClientCPUMsPerTxn, r.ClientCPUSeconds))
	rep.row("calls", fmt.Sprintf("%.2f calls/txn in %.2f envelopes/txn (%.1f calls per envelope); %.1f envelopes per PBFT batch, %.2f group batches/txn",
		r.CallsPerTxn, r.EnvelopesPerTxn, r.CallsPerEnvelope, r.EnvelopesPerBatch, r.BatchesPerTxn))
	rep.row("single-group call", fmt.Sprintf("%d bytes", r.CallBytesSingle))
	if bz := r.Byzantine; bz != nil {
		rep.row("Byzantine callers", fmt.Sprintf("%d abandoned (%d voted commit somewhere), %d seen terminated by others (mean %.0f ms after the votes), %d failed sends, %d left to the clean-up, %d still unfinished after it",
			bz.Abandoned, bz.CommitVoted, bz.SeenTerminated, bz.MeanTerminationMs, bz.SendErrors, bz.LeftPending, bz.LeftUnfinished))
	}
	profileRows(rep, r.Profiles)
	errs := fmt.Sprintf("%d", r.Errors)
	if len(r.ErrorsByKind) > 0 {
		errs += " (" + fmtCounts(r.ErrorsByKind) + ")"
	}
	rep.row("errors", errs)
	rep.row("outcome", outcomeRow(rep, r.OK, r.Problems))
	if r.machine != "" {
		rep.row("machine", r.machine)
	}
	if r.build != "" {
		rep.row("build", r.build)
	}
	return rep.render(w)
}

func fmtCPU(m map[string]float64) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("g%s %.2fs", k, m[k])
	}
	return strings.Join(parts, ", ")
}
