package bench

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// Metric names of the replicas' LSM backlog (pkg/storage).
const (
	metricCompactionDebt    = "augustus_storage_compaction_debt_bytes"
	metricCompactionRunning = "augustus_storage_compactions_running"
)

// settlePoll is how often settleAfterLoad scrapes the replicas; the stores
// count as settled after settleQuiet scrapes in a row with no compaction or
// flush running anywhere. Pebble starts a compaction as soon as a level's
// score passes 1, so two seconds without one means the LSM has its steady
// shape. Its debt estimate is no criterion: it counts all of L0 and the
// base level whenever L0 holds anything, so it stays above 0 at rest.
const (
	settlePoll  = 500 * time.Millisecond
	settleQuiet = 4
)

// settleAfterLoad waits, after --load, until no replica's store runs a
// compaction or flush (settleQuiet scrapes in a row), for at most timeout
// (--settle-timeout; 0 does not wait). A bulk load leaves the LSM a
// backlog that takes tens of seconds of CPU to compact, and that CPU would
// be charged to the first measured interval: the 0 % multi-group run of a
// series looked dearer than the ones after it. It returns how long it
// waited; a replica it cannot scrape, or one without the metrics (an older
// build), is left out and named, and running out of time is reported, not
// an error: the measurement goes on and says so.
func (e *txnEnv) settleAfterLoad(ctx context.Context, timeout time.Duration) (time.Duration, string) {
	if timeout <= 0 {
		return 0, "not waited for (--settle-timeout 0)"
	}
	start := time.Now()
	deadline := start.Add(timeout)
	lastReport := start
	quiet := 0
	skipped := map[string]string{}
	watched := allReplicas(e.c)
	for {
		debt, running := 0.0, 0.0
		for _, sc := range scrapeReplicas(ctx, watched) {
			d, ok1 := sc.m.value(metricCompactionDebt)
			n, ok2 := sc.m.value(metricCompactionRunning)
			switch {
			case sc.err != nil:
				skipped[sc.name] = shortError(sc.err)
			case !ok1 || !ok2:
				skipped[sc.name] = "its metrics have no " + metricCompactionDebt
			default:
				debt += d
				running += n
			}
		}
		watched = slices.DeleteFunc(watched, func(r cluster.Replica) bool { _, gone := skipped[r.Name]; return gone })
		if running == 0 {
			quiet++
		} else {
			quiet = 0
		}
		waited := time.Since(start)
		if quiet >= settleQuiet {
			return waited, "settled" + skippedNote(skipped)
		}
		if time.Now().After(deadline) {
			return waited, fmt.Sprintf("%.0f compactions still running (%.1f MiB of debt) after --settle-timeout %s; measuring anyway%s",
				running, debt/(1<<20), timeout, skippedNote(skipped))
		}
		if time.Since(lastReport) >= progressInterval {
			fmt.Fprintf(e.stderr, "bench: waiting for the replicas' compactions after the load: %.0f running, %.1f MiB of debt (%s so far)\n",
				running, debt/(1<<20), waited.Round(time.Second))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Since(start), "interrupted"
		case <-time.After(settlePoll):
		}
	}
}

func skippedNote(skipped map[string]string) string {
	if len(skipped) == 0 {
		return ""
	}
	var parts []string
	for name, why := range skipped {
		parts = append(parts, name+": "+why)
	}
	sort.Strings(parts)
	return " (not watched: " + strings.Join(parts, "; ") + ")"
}
