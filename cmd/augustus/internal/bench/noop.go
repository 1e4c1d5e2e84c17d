package bench

import "bytes"

// The noop workload: calls of --size bytes that the replicas of one group
// order and execute as no-ops (replicas started with --app noop): it
// measures ordering alone.
func init() {
	register(&Spec{
		Names: []string{"noop"}, Order: 10, Family: FamilyGroup,
		Help: `Workloads of one replica group (--group), through one group client: "noop" sends
calls of --size bytes that the replicas order and execute as no-ops (start the
replicas with --app noop: it measures ordering). The report gives calls/s,
envelopes/s and calls per envelope (from the client's metrics), requests per
PBFT batch (from the replicas), latency percentiles of single calls, and CPU
time per call summed over the group's replica processes:
process_cpu_seconds_total scraped from every replica's /metrics before and after
the measured interval (a replica left out says why), per call and per PBFT batch
(batches executed in the interval, from the replicas' metrics; --replica-cpu
breaks it down replica by replica). CPU of this process is reported separately.
On a machine that also runs the replicas, the bench competes with them for the
CPU. The report names the cluster's durability mode ("sync" in cluster.json).
`,
		Example: `  augustus init --dir ./c --groups 1 && augustus start --dir ./c --app noop &
  augustus bench --workload noop --dir ./c --clients 64 --duration 20s --size 1024
  augustus bench --workload noop --dir ./c --clients 64 --duration 20s --rate 5000
  augustus start --dir ./c --app noop --pprof & augustus bench --dir ./c --clients 64 --duration 20s --replica-cpu --profile ./prof`,
		newGroup: func(env *groupEnv, _ string) (Workload, error) {
			value := bytes.Repeat([]byte{'x'}, env.o.size)
			return &groupWorkload{env: env, app: "noop", payload: func(int) []byte { return value }}, nil
		},
	})
}
