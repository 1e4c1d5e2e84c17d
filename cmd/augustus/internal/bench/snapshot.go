package bench

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// snapshot is the state of the counters at one end of a measured
// interval: every replica's CPU (and start time, to see restarts) and PBFT
// batches, the client's counters, this process's CPU.
type snapshot struct {
	replicaCPU map[string]float64
	// replicaStart is each replica process's start time: a replica whose
	// process restarted between two snapshots has a CPU counter that
	// started over.
	replicaStart map[string]float64
	replicaGroup map[string]string
	// missing says why a replica has no CPU figure in this snapshot.
	missing map[string]string
	// replicaBatches and replicaBatchSum are each replica's PBFT batch
	// size histogram (requests = envelopes per batch): count and sum.
	replicaBatches, replicaBatchSum map[string]float64
	// counters are the client's counters (metric -> label value -> value);
	// envCalls and envCount its envelope size histogram (calls per
	// envelope).
	counters           map[string]map[string]float64
	envCalls, envCount float64
	clientCPU          float64
}

// takeSnapshot scrapes every replica of groups, in parallel, and reads
// counters (name -> the label that splits it) and the envelope size
// histogram from the client's registry.
func takeSnapshot(ctx context.Context, groups []*cluster.Group, reg *prometheus.Registry, counters map[string]string) snapshot {
	s := snapshot{replicaCPU: map[string]float64{}, replicaStart: map[string]float64{}, replicaGroup: map[string]string{},
		missing: map[string]string{}, replicaBatches: map[string]float64{}, replicaBatchSum: map[string]float64{},
		clientCPU: processCPUSeconds()}
	s.counters = gatherCounters(reg, counters)
	s.envCalls, s.envCount = gatherHistogram(reg, "augustus_client_envelope_size_calls")
	var reps []cluster.Replica
	for _, g := range groups {
		for _, r := range g.Replicas {
			s.replicaGroup[r.Name] = fmt.Sprint(g.ID)
			reps = append(reps, r)
		}
	}
	for _, sc := range scrapeReplicas(ctx, reps) {
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
		if fam, ok := sc.m[metricBatchSize]; ok && len(fam.GetMetric()) > 0 {
			h := fam.GetMetric()[0].GetHistogram()
			s.replicaBatchSum[sc.name] = h.GetSampleSum()
			s.replicaBatches[sc.name] = float64(h.GetSampleCount())
		}
	}
	return s
}

// restarted is why a replica whose CPU counter started over is left out.
const restarted = "it restarted during the interval, so its CPU counter started over"

// cpuDelta returns each replica's CPU over the interval, and why the
// others have none: a replica that restarted during the interval (its
// counter started over) is left out rather than counted negative; one
// without a figure says what failed at the end of the interval, else at
// its start.
func cpuDelta(before, after snapshot) (cpu map[string]float64, missing map[string]string) {
	cpu, missing = map[string]float64{}, map[string]string{}
	for name, a := range after.replicaCPU {
		b, ok := before.replicaCPU[name]
		if !ok {
			continue
		}
		if after.replicaStart[name] != before.replicaStart[name] || a < b {
			missing[name] = restarted
			continue
		}
		cpu[name] = a - b
	}
	for _, snap := range []snapshot{after, before} {
		for name, why := range snap.missing {
			if _, ok := missing[name]; !ok {
				missing[name] = why
			}
		}
	}
	if len(missing) == 0 {
		missing = nil
	}
	return cpu, missing
}

// gatherHistogram returns the sum and count of the histogram name of reg
// (summed over its label values).
func gatherHistogram(reg *prometheus.Registry, name string) (sum, count float64) {
	if reg == nil {
		return 0, 0
	}
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
	if reg == nil {
		return out
	}
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
func counterDelta(before, after snapshot, name string) map[string]float64 {
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
