package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// errorKind names the kind of a failed invocation's error for the
// report's errors by kind.
func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, client.ErrRejected):
		return "rejected"
	case errors.Is(err, coord.ErrClosed):
		return "client_closed"
	case errors.Is(err, coord.ErrInvalid):
		return "invalid"
	case errors.Is(err, errWrongResult):
		return "wrong_result"
	}
	return "other"
}

// errorsByKind splits an interval's errors: the failed invocations by
// kind, then those that timed out and those left outstanding (nil if
// none).
func errorsByKind(m *measured) map[string]int64 {
	out := map[string]int64{}
	for k, n := range m.failedByKind {
		out[k] += n
	}
	if m.timedOut > 0 {
		out["timed_out"] = m.timedOut
	}
	if m.outstanding > 0 {
		out["outstanding"] = m.outstanding
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func latencyOf(h *hdrhistogram.Histogram) LatencyMs {
	if h == nil || h.TotalCount() == 0 {
		return LatencyMs{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencyMs{Mean: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)), P95: ms(h.ValueAtQuantile(95)),
		P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// fmtCounts lists a map as "k v, k v" in key order ("none" if empty).
func fmtCounts[V int64 | float64 | string](m map[string]V) string {
	if len(m) == 0 {
		return "none"
	}
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %v", k, m[k])
	}
	return strings.Join(parts, ", ")
}
