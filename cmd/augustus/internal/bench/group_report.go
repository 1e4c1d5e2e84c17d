package bench

import (
	"fmt"
	"io"
	"strings"
)

// printGroupResult writes the result as a two-column table, then the
// replicas left out of the CPU figures and the problems, one per line.
func printGroupResult(w io.Writer, r *GroupResult) error {
	rep := &report{}
	cpu := "n/a (no replica metrics)"
	if r.ReplicasScraped > 0 {
		perCall := fmt.Sprintf("%.3f ms/call", r.ReplicaCPUMsPerCall)
		if r.Calls == 0 {
			perCall = "n/a per call (no call completed)"
		}
		if r.Batches > 0 {
			perCall += fmt.Sprintf(", %.3f ms/batch", r.ReplicaCPUMsPerBatch)
		}
		cpu = fmt.Sprintf("%s over %d of %d replicas", perCall, r.ReplicasScraped, r.ReplicasInGroup)
		var parts []string
		for _, n := range sortedKeys(r.ReplicaCPUSeconds) {
			parts = append(parts, fmt.Sprintf("%s %.2fs", n, r.ReplicaCPUSeconds[n]))
		}
		cpu += " (" + strings.Join(parts, ", ") + ")"
	}
	leftOut(rep, &cpu, r.ReplicasMissing)
	errs := fmt.Sprintf("%d", r.Errors)
	if r.Errors > 0 {
		errs += fmt.Sprintf(" (%d failed, %d hit the %.0fs call timeout, %d outstanding at the end)",
			r.FailedCalls, r.TimedOutCalls, r.CallTimeoutSeconds, r.OutstandingCalls)
	}
	// The first error is in the problems below the table.
	last := "none"
	if r.LastCompletionSeconds >= 0 {
		last = fmt.Sprintf("at %.1fs of %.1fs", r.LastCompletionSeconds, r.MeasuredSecs)
	}
	rep.row("workload", fmt.Sprintf("%s, %d-byte calls, group %d, sync %s", r.Workload, r.SizeBytes, r.Group, r.Sync))
	rep.row("callers", callersRow(r))
	if r.RateLimit > 0 {
		rep.row("offered load", offeredRow(r.RateLimit, "calls", r.ScheduledCalls, r.MissedCalls))
	}
	rep.row("measured", fmt.Sprintf("%.1fs after %.1fs warm-up", r.MeasuredSecs, r.WarmupSeconds))
	rep.row("calls", fmt.Sprintf("%d (last completed %s; of those in flight at the end, %d finished within the %.1fs allowed)", r.Calls, last, r.DrainedCalls, r.DrainSeconds))
	rep.row("calls/s", fmt.Sprintf("%.0f", r.CallsPerSecond))
	rep.row("envelopes/s", fmt.Sprintf("%.0f (%.1f calls per envelope)", r.EnvelopesPerSecond, r.CallsPerEnvelope))
	rep.row("envelopes per PBFT batch", fmt.Sprintf("%.1f (%.0f batches/s)", r.EnvelopesPerBatch, r.BatchesPerSecond))
	rep.row("latency p50 / p95 / p99", fmt.Sprintf("%.2f / %.2f / %.2f ms", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99))
	rep.row("latency mean / max", fmt.Sprintf("%.2f / %.2f ms", r.LatencyMs.Mean, r.LatencyMs.Max))
	rep.row("replica CPU", cpu)
	if r.perReplica && r.Batches > 0 {
		for _, n := range sortedKeys(r.ReplicaCPUMsPerBatchByReplica) {
			perCall := "n/a"
			if r.Calls > 0 {
				perCall = fmt.Sprintf("%.3f", r.ReplicaCPUSeconds[n]*1000/float64(r.Calls))
			}
			rep.row("  "+n, fmt.Sprintf("%.3f ms/batch, %s ms/call, %.0f%% of a core",
				r.ReplicaCPUMsPerBatchByReplica[n], perCall, 100*r.ReplicaCPUSeconds[n]/r.MeasuredSecs))
		}
	}
	profileRows(rep, r.Profiles)
	rep.row("bench client CPU", fmt.Sprintf("%.3f ms/call (%.2fs)", r.ClientCPUMsPerCall, r.ClientCPUSeconds))
	rep.row("retransmissions", fmt.Sprintf("%.0f", r.Retransmissions))
	rep.row("errors", errs)
	if len(r.ErrorsByKind) > 0 {
		rep.row("errors by kind", fmtCounts(r.ErrorsByKind))
	}
	rep.row("outcome", outcomeRow(rep, r.OK, r.Problems))
	rep.row("machine", r.Machine.String())
	if r.Version != "" {
		rep.row("build", r.Version)
	}
	return rep.render(w)
}

// leftOut moves the replicas left out of the CPU figures below the table
// ("left out: NAME: why", one per line) and says how many in the cell:
// each reason is a sentence, and eight of them in one cell made the
// table about 600 columns wide.
func leftOut(rep *report, cell *string, missing map[string]string) {
	if len(missing) == 0 {
		return
	}
	*cell += fmt.Sprintf("; %d left out (below)", len(missing))
	for _, n := range sortedKeys(missing) {
		rep.note("left out: " + n + ": " + missing[n])
	}
}

// outcomeRow is the outcome cell; the problems of a failed run go below
// the table.
func outcomeRow(rep *report, ok bool, problems []string) string {
	if ok {
		return "ok"
	}
	for _, p := range problems {
		rep.note("problem: " + p)
	}
	return fmt.Sprintf("FAILED: %d problem(s), below", len(problems))
}

func callersRow(r *GroupResult) string {
	return fmt.Sprintf("%d (one group client, at most %d envelopes in flight)", r.Clients, r.InFlight)
}

// offeredRow describes the open loop's offered load: the rate, and the
// starts due in the interval that found every caller busy.
func offeredRow(rate float64, unit string, scheduled, missed int64) string {
	return fmt.Sprintf("%.0f %s/s in all (--rate, an open loop): %d due in the interval, %d missed (every caller busy)",
		rate, unit, scheduled, missed)
}
