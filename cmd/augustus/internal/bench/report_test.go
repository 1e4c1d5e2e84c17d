package bench

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// A replica left out of the CPU figures says why; one that restarted
// during the interval (its counter started over) is left out rather than
// counted negative.
func TestBenchCPUFiguresSayWhyAReplicaIsLeftOut(t *testing.T) {
	before := snapshot{
		replicaCPU:   map[string]float64{"g0r0": 10, "g0r1": 10, "g0r2": 10},
		replicaStart: map[string]float64{"g0r0": 100, "g0r1": 100, "g0r2": 100},
		missing:      map[string]string{"g0r3": "no metrics_addr in cluster.json"},
	}
	after := snapshot{
		replicaCPU:   map[string]float64{"g0r0": 2, "g0r1": 13},
		replicaStart: map[string]float64{"g0r0": 150, "g0r1": 100},
		missing:      map[string]string{"g0r2": "metrics at 127.0.0.1:7008 unreachable: connection refused", "g0r3": "no metrics_addr in cluster.json"},
	}
	res := &GroupResult{Calls: 1000, MeasuredSecs: 1, ReplicasInGroup: 4}
	res.fillCounters(before, after)
	require.Equal(t, 1, res.ReplicasScraped)
	require.Equal(t, map[string]float64{"g0r1": 3}, res.ReplicaCPUSeconds)
	require.InDelta(t, 3.0, res.ReplicaCPUMsPerCall, 1e-9)
	require.Equal(t, map[string]string{
		"g0r0": "it restarted during the interval, so its CPU counter started over",
		"g0r2": "metrics at 127.0.0.1:7008 unreachable: connection refused",
		"g0r3": "no metrics_addr in cluster.json",
	}, res.ReplicasMissing)
	var out strings.Builder
	require.NoError(t, printGroupResult(&out, res))
	require.Contains(t, out.String(), "left out: g0r0: it restarted")
}

// requireNarrow fails if a line of out is wider than reportWidth.
func requireNarrow(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), reportWidth, "a line %d columns wide:\n%s\nin:\n%s", utf8.RuneCountInString(line), line, out)
	}
}

// allRestarted is a pair of snapshots across which every replica of
// groups groups of 4 restarted.
func allRestarted(groups int) (before, after snapshot) {
	before = snapshot{replicaCPU: map[string]float64{}, replicaStart: map[string]float64{}, replicaGroup: map[string]string{}}
	after = snapshot{replicaCPU: map[string]float64{}, replicaStart: map[string]float64{}, replicaGroup: map[string]string{}}
	for g := range groups {
		for r := range 4 {
			n := fmt.Sprintf("g%dr%d", g, r)
			before.replicaCPU[n], after.replicaCPU[n] = 10, 2
			before.replicaStart[n], after.replicaStart[n] = 100, 200
			before.replicaGroup[n], after.replicaGroup[n] = fmt.Sprint(g), fmt.Sprint(g)
		}
	}
	return before, after
}

// When every replica restarted during the interval, each one's reason
// used to widen the CPU cell to about 600 columns: the reasons now follow
// the table, and no line of the report is wider than a terminal of 120
// columns — the transaction report with the longest rows it has (the
// Byzantine callers', every kind of abort, a failed run's problems), and
// the group report likewise.
func TestReportsStayNarrowWhenEveryReplicaRestarted(t *testing.T) {
	before, after := allRestarted(4)
	res := &TxnRun{Workload: "buzzer", Shape: "social", Items: 100000, ValueSize: 140, Groups: 4, MeasuredSeconds: 10, Committed: 1000,
		Mix: "timeline 85%, post 7.5%, follow 7.5% (100000 users); 30% Byzantine callers", RateLimit: 5000, Scheduled: 50000, Missed: 123,
		AbortedReasons: map[string]int64{"conflict": 12, "comparison failed": 3, "key exists": 2, "not found": 1},
		ByKind:         map[string]KindResult{"timeline": {Committed: 850}, "post": {Committed: 75}, "follow": {Committed: 75, Aborted: 2}},
		Byzantine:      &byzRunStats{Abandoned: 123456, CommitVoted: 100000, SeenTerminated: 99999, MeanTerminationMs: 1234, LeftPending: 3},
		FirstError:     strings.Repeat("a very long error message that goes on ", 10),
		Profiles:       map[string]string{"g0r0": "none: 127.0.0.1:6060: dial tcp 127.0.0.1:6060: connect: connection refused (is the replica started with augustus start --pprof?)"},
		perReplica:     true, replicasPerGroup: 4}
	res.fillCPU(before, after)
	require.Len(t, res.ReplicasMissing, 16)
	res.judge(&Options{})
	res.Problems = append(res.Problems, strings.Repeat("x", 300))
	res.OK = false
	var out strings.Builder
	require.NoError(t, printTxnRun(&out, res))
	requireNarrow(t, out.String())
	require.Contains(t, out.String(), "16 left out (below)")
	require.Contains(t, out.String(), "left out: g3r3: it restarted during the interval, so its CPU counter started over")
	require.Contains(t, out.String(), "FAILED")

	before, after = allRestarted(1)
	gres := &GroupResult{Workload: "noop", Calls: 1000, MeasuredSecs: 1, ReplicasInGroup: 4, FirstError: res.FirstError, Errors: 1, FailedCalls: 1,
		RateLimit: 100000, ScheduledCalls: 100000, MissedCalls: 99000,
		Provenance: Provenance{Machine: thisMachine(), Version: "augustus dev (commit 0123456789ab, go1.26, linux/amd64)"}}
	gres.fillCounters(before, after)
	gres.judge(&Options{})
	out.Reset()
	require.NoError(t, printGroupResult(&out, gres))
	requireNarrow(t, out.String())
	require.Contains(t, out.String(), "left out: g0r2: it restarted")
	require.Contains(t, out.String(), "first error: a very long error message")
	require.Contains(t, out.String(), "1 (1 failed, 0 hit the 0s call timeout, 0 outstanding at the end)")
}

// The Fig. 5 table fits in 120 columns at the paper's scale.
func TestFig5TableIsNarrow(t *testing.T) {
	var out strings.Builder
	printFig5(&out, []Fig5Row{{MultiGroupPct: 100, ByzantinePct: 30, CorrectCallers: 224, TxnPerSecond: 12345, BaselineTxnPerSecond: 12345,
		LossPct: -12.5, MeanLatencyMs: 1234.5, P99LatencyMs: 12345.6, Abandoned: 1234567, Recovered: 1234567}})
	requireNarrow(t, out.String())
}

func TestWrapTextBreaksAtSpacesAndCutsLongWords(t *testing.T) {
	require.Equal(t, []string{"a bb", "ccc"}, wrapText("a bb ccc", 5, ""))
	require.Equal(t, []string{"abcde", "fgh"}, wrapText("abcdefgh", 5, ""))
	require.Equal(t, []string{"ab", "  cd", "  ef"}, wrapText("ab cd ef", 4, "  "))
	require.Equal(t, []string{"x", "  ab", "  cd", "  e"}, wrapText("x abcde", 4, "  "))
	require.Equal(t, []string{""}, wrapText("", 10, ""))
	require.Equal(t, []string{"→ é ×"}, wrapText("→ é ×", 5, ""), "runes, not bytes")
}
