package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// printBench writes the result as a two-column table.
func printBench(w io.Writer, r *benchResult) error {
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
		for _, n := range slices.Sorted(maps.Keys(r.ReplicaCPUSeconds)) {
			parts = append(parts, fmt.Sprintf("%s %.2fs", n, r.ReplicaCPUSeconds[n]))
		}
		cpu += " (" + strings.Join(parts, ", ") + ")"
	}
	if len(r.ReplicasMissing) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(r.ReplicasMissing)) {
			parts = append(parts, n+": "+r.ReplicasMissing[n])
		}
		cpu += "; left out: " + strings.Join(parts, "; ")
	}
	errs := fmt.Sprintf("%d", r.Errors)
	if r.Errors > 0 {
		errs += fmt.Sprintf(" (%d failed, %d hit the %.0fs call timeout, %d outstanding at the end)",
			r.FailedCalls, r.TimedOutCalls, r.CallTimeoutSeconds, r.OutstandingCalls)
	}
	if r.FirstError != "" {
		errs += "; first: " + r.FirstError
	}
	last := "none"
	if r.LastCompletionSeconds >= 0 {
		last = fmt.Sprintf("at %.1fs of %.1fs", r.LastCompletionSeconds, r.MeasuredSecs)
	}
	outcome := "ok"
	if !r.OK {
		outcome = "FAILED: " + strings.Join(r.Problems, "; ")
	}
	rows := [][]string{
		{"workload", fmt.Sprintf("%s, %d-byte calls, group %d, sync %s", r.Workload, r.SizeBytes, r.Group, r.Sync)},
		{"callers", callersRow(r)},
		{"measured", fmt.Sprintf("%.1fs after %.1fs warm-up", r.MeasuredSecs, r.WarmupSeconds)},
		{"calls", fmt.Sprintf("%d (last completed %s; of those in flight at the end, %d finished within the %.1fs allowed)", r.Calls, last, r.DrainedCalls, r.DrainSeconds)},
		{"calls/s", fmt.Sprintf("%.0f", r.CallsPerSecond)},
		{"envelopes/s", fmt.Sprintf("%.0f (%.1f calls per envelope)", r.EnvelopesPerSecond, r.CallsPerEnvelope)},
		{"envelopes per PBFT batch", fmt.Sprintf("%.1f (%.0f batches/s)", r.EnvelopesPerBatch, r.BatchesPerSecond)},
		{"latency p50 / p95 / p99", fmt.Sprintf("%.2f / %.2f / %.2f ms", r.LatencyMs.P50, r.LatencyMs.P95, r.LatencyMs.P99)},
		{"latency mean / max", fmt.Sprintf("%.2f / %.2f ms", r.LatencyMs.Mean, r.LatencyMs.Max)},
		{"replica CPU", cpu},
	}
	if r.perReplica && r.Batches > 0 {
		for _, n := range slices.Sorted(maps.Keys(r.ReplicaCPUMsPerBatchByReplica)) {
			perCall := "n/a"
			if r.Calls > 0 {
				perCall = fmt.Sprintf("%.3f", r.ReplicaCPUSeconds[n]*1000/float64(r.Calls))
			}
			rows = append(rows, []string{"  " + n, fmt.Sprintf("%.3f ms/batch, %s ms/call, %.0f%% of a core",
				r.ReplicaCPUMsPerBatchByReplica[n], perCall, 100*r.ReplicaCPUSeconds[n]/r.MeasuredSecs)})
		}
	}
	rows = append(rows, profileRows(r.Profiles)...)
	rows = append(rows, [][]string{
		{"bench client CPU", fmt.Sprintf("%.3f ms/call (%.2fs)", r.ClientCPUMsPerCall, r.ClientCPUSeconds)},
		{"retransmissions", fmt.Sprintf("%.0f", r.Retransmissions)},
		{"errors", errs},
		{"outcome", outcome},
		{"machine", fmt.Sprintf("%d CPUs, GOMAXPROCS %d, %s", r.NumCPU, r.GoMaxProcs, r.GoVersion)},
	}...)
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

func jsonIndent(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func histogramSums(h prometheus.Histogram) (sum, count float64) {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0, 0
	}
	return m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
}

// benchProgress shows the run live: a progress bar on a terminal, else a
// line every 5 seconds.
type benchProgress struct {
	w        io.Writer
	bar      *progressbar.ProgressBar
	lines    bool
	total    time.Duration
	lastLine time.Time
	done     bool
}

func newBenchProgress(w io.Writer, o benchOptions) *benchProgress {
	p := &benchProgress{w: w, total: o.duration, lastLine: time.Now()}
	mode := o.progress
	if mode == "auto" {
		mode = "lines"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	switch mode {
	case "bar":
		p.bar = progressbar.NewOptions64(o.duration.Milliseconds(),
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("measuring"),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	case "lines":
		p.lines = true
	}
	return p
}

func (p *benchProgress) update(elapsed time.Duration, calls int64) {
	rate := float64(calls) / max(elapsed.Seconds(), 1e-3)
	switch {
	case p.bar != nil:
		p.bar.Describe(fmt.Sprintf("%d calls, %.0f calls/s", calls, rate))
		_ = p.bar.Set64(min(elapsed.Milliseconds(), p.total.Milliseconds()))
	case p.lines && time.Since(p.lastLine) >= 5*time.Second:
		p.lastLine = time.Now()
		fmt.Fprintf(p.w, "bench: %s/%s  %d calls  %.0f calls/s\n",
			elapsed.Round(time.Second), p.total, calls, rate)
	}
}

func (p *benchProgress) finish() {
	if p.done {
		return
	}
	p.done = true
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Exit()
	}
}

func callersRow(r *benchResult) string {
	row := fmt.Sprintf("%d (one group client, at most %d envelopes in flight)", r.Clients, r.InFlight)
	if r.RateLimit > 0 {
		row += fmt.Sprintf(", paced to at most %.0f calls/s in all (--rate)", r.RateLimit)
	}
	return row
}
