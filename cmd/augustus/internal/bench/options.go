package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// Options are the values of `augustus bench`'s flags. AddFlags makes one
// per command line; Run reads it.
type Options struct {
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
	inFlight    int
	// replicaCPU reports CPU per replica (per PBFT batch and per call for
	// one group; per committed transaction for the transaction workloads).
	replicaCPU bool
	// profileDir, if set, receives a CPU profile of each replica, pulled
	// from its pprof endpoint (Host.PprofAddr) during the measured
	// interval.
	profileDir string
	pprofBase  int
	// rate, if positive, runs the open loop: rate transactions (calls) per
	// second in all, at most clients in flight (openloop.go).
	rate float64

	// txn are the transaction workloads' flags (txn.go).
	txn txnOptions
	// perWorkload holds each Spec's own flags (Spec.Flags).
	perWorkload map[*Spec]WorkloadFlags
	// fs is the flag set, for the report's exact configuration.
	fs *pflag.FlagSet
}

// Defaults are the defaults the command line chooses for bench's flags.
type Defaults struct {
	// PprofBasePort is where `augustus start --pprof` has the first
	// replica serve pprof.
	PprofBasePort int
}

// Host is what the command line lends bench: what it owns and bench uses.
type Host struct {
	// Version is the build's version line (`augustus version`), for the
	// report.
	Version string
	// LoadCluster loads DIR/cluster.json, saying what to do when there is
	// none.
	LoadCluster func(dir string) (*cluster.Cluster, error)
	// AppHint adds to a transaction client's start-up error the command
	// that starts the cluster with the transaction engine.
	AppHint func(err error, dir string) error
	// PprofAddr is where the replica named name serves pprof under
	// `augustus start --pprof --pprof-base-port base`.
	PprofAddr func(c *cluster.Cluster, name string, base int) string
}

// maxRate bounds --rate: the open loop's scheduler hands out at most a few
// million starts per second on one core.
const maxRate = 1_000_000

// AddFlags registers bench's flags on fs, the workloads' own included, and
// returns where their values go.
func AddFlags(fs *pflag.FlagSet, d Defaults) *Options {
	o := &Options{fs: fs, perWorkload: map[*Spec]WorkloadFlags{}}
	fs.StringVar(&o.workload, "workload", "noop", fmt.Sprintf(`%s, or a transaction workload: %s`, workloadNames(FamilyGroup), workloadNames(FamilyTxn)))
	fs.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json, keys/; required)")
	fs.Uint32Var(&o.group, "group", 0, "the group to drive (noop, log)")
	fs.IntVar(&o.clients, "clients", 16, "concurrent callers sharing the one client; with --rate, the most transactions (calls) in flight at once")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured interval")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before the measured interval, not counted")
	fs.IntVar(&o.size, "size", 0, "bytes per call (noop) or per appended value (log); the transaction workloads' value size (0: the workload's)")
	fs.StringVar(&o.clientKey, "client-key", "", "the client's private key file (default DIR/keys/client0.key)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the result as JSON to this file (checked before the run), with the exact configuration, the build version and the machine")
	fs.StringVar(&o.progress, "progress", "auto", `live progress: "bar" (a progress bar), "lines" (a line every 5s), "off", or "auto" (bar on a terminal, else lines)`)
	fs.DurationVar(&o.callTimeout, "call-timeout", 30*time.Second, "a call without a result after this long counts as an error (> 0)")
	fs.IntVar(&o.window, "window", 0, "envelopes outstanding (W; 0: the cluster's client_window, which is also the most allowed)")
	fs.IntVar(&o.inFlight, "inflight", 0, "envelopes the client keeps outstanding at once (0: the client's default; at most --window)")
	fs.BoolVar(&o.replicaCPU, "replica-cpu", false, "report each replica's CPU: per PBFT batch and per call (noop, log), per committed transaction (transaction workloads)")
	fs.StringVar(&o.profileDir, "profile", "", "pull a CPU profile of each replica into this directory during the measured interval (replicas started with augustus start --pprof)")
	fs.IntVar(&o.pprofBase, "pprof-base-port", d.PprofBasePort, "with --profile: the k-th replica of the cluster serves pprof on 127.0.0.1:PORT+k (as augustus start --pprof)")
	fs.Float64Var(&o.rate, "rate", 0, fmt.Sprintf("an open loop: start this many calls (transaction workloads: transactions) per second in all, each on its schedule, at most --clients in flight; up to %d (0: closed loop, each caller calls again as soon as its call returns)", maxRate))
	addTxnFlags(fs, &o.txn)
	for _, s := range specs {
		if s.Flags != nil {
			o.perWorkload[s] = s.Flags(fs)
		}
	}
	return o
}

// Help is the long help of `augustus bench`: the runner, then each
// workload's paragraph, then what every report holds.
func Help() string {
	var b strings.Builder
	b.WriteString(helpIntro)
	var family Family
	for _, s := range specs {
		if s.Family != family {
			family = s.Family
			if h := familyHelp[family]; h != "" {
				b.WriteString("\n")
				b.WriteString(h)
			}
		}
		b.WriteString("\n")
		b.WriteString(strings.TrimLeft(s.Help, "\n"))
	}
	b.WriteString(helpOutro)
	return b.String()
}

// Example is the examples of `augustus bench --help`, each workload's.
func Example() string {
	var lines []string
	for _, s := range specs {
		if ex := strings.Trim(s.Example, "\n"); ex != "" {
			lines = append(lines, ex)
		}
	}
	return strings.Join(lines, "\n")
}

// familyHelp is the paragraph that introduces a family's workloads.
var familyHelp = map[Family]string{FamilyTxn: txnHelp}

const helpIntro = `Measure a running cluster under one workload (--workload): throughput,
latency percentiles (HDR histograms), aborts and retries by reason, errors by
kind, and the CPU of every replica and of this process per committed
transaction (per call).

--clients concurrent callers share one client, so concurrent calls travel
together in signed envelopes, as they do from a gateway. Without --rate each
caller starts its next call as soon as its last one returns (a closed loop).
--rate N runs a true open loop instead: N calls (transaction workloads:
transactions) per second in all, evenly spaced, each started on its schedule
whether or not earlier ones finished, with at most --clients in flight. A
call's latency counts from its scheduled start, so a slow cluster shows in the
percentiles (no coordinated omission); a call the schedule cannot start because
--clients are in flight counts as missed and is reported. The report says
whether the cluster kept up with the offered load. A replica's CPU per call
falls as its PBFT batches fill, that is as the call rate rises, so compare two
runs' CPU per call at equal rates.

After --warmup, calls are measured for --duration, with a progress bar on a
terminal (--progress).
`

const helpOutro = `
--profile DIR pulls a CPU profile (10s, or the measured interval if shorter) from
each replica during the measured interval and writes DIR/NAME.pprof (go tool
pprof DIR/NAME.pprof): start the replicas with augustus start --pprof
(--pprof-base-port here must match start's). Transaction workloads profile every
replica of every group, into DIR/multi-M-byz-B/NAME.pprof per measured interval.

Errors are counted, never hidden: a call that returns an error, a call that hits
--call-timeout, and a call still without a result at the end (calls in flight
when the interval ends get min(--call-timeout, 5s) to finish) each count as an
error, in the report and the JSON. bench exits with status 1 when any call
failed, or when no call completed in the last 5s of the interval (or in the
whole interval, if it is shorter): the cluster stopped answering.

The report is a table no wider than 120 columns; notes that would widen it
(replicas left out of the CPU figures and why, the problems of a failed run)
follow it. --json FILE also writes the result, with the exact configuration
(every flag's value), the build version and the machine (CPU model, cores,
kernel, Go version).
`

// Run runs the workload of o; stdout receives the report, stderr the
// progress.
func Run(ctx context.Context, stdout, stderr io.Writer, o *Options, h Host) error {
	for _, f := range o.perWorkload {
		if s, ok := f.(standalone); ok {
			if ran, err := s.runInstead(stdout); ran {
				return err
			}
		}
	}
	spec := lookup(o.workload)
	if spec == nil {
		return fmt.Errorf("--workload %q: want %s", o.workload, workloadNames(0))
	}
	for _, s := range specs {
		if f := o.perWorkload[s]; f != nil {
			if err := f.Check(o.workload); err != nil {
				return err
			}
		}
	}
	switch spec.Family {
	case FamilyGroup:
		return runGroup(ctx, stdout, stderr, o, h, spec)
	case FamilyTxn:
		return runTxn(ctx, stdout, stderr, o, h, spec)
	}
	return fmt.Errorf("bench: workload %q has no family", o.workload)
}

// standalone is a workload's flag that replaces the run with something
// else (the bank's --check-history checks files and exits).
type standalone interface {
	runInstead(stdout io.Writer) (bool, error)
}

// badRate reports whether --rate is neither 0 (the closed loop) nor a
// positive finite rate within maxRate.
func badRate(r float64) bool { return r < 0 || math.IsNaN(r) || math.IsInf(r, 0) || r > maxRate }

// checkProgress checks --progress.
func checkProgress(mode string) error {
	switch mode {
	case "auto", "bar", "lines", "off":
		return nil
	}
	return fmt.Errorf("--progress %q: want \"auto\", \"bar\", \"lines\" or \"off\"", mode)
}

// configOf is the report's exact configuration: every flag's value,
// defaults included (nil without a flag set).
func configOf(o *Options) map[string]string {
	if o.fs == nil {
		return nil
	}
	out := map[string]string{}
	o.fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		out[f.Name] = v
	})
	return out
}

// changedFlags lists the flags set on the command line, sorted.
func changedFlags(o *Options) []string {
	if o.fs == nil {
		return nil
	}
	var out []string
	o.fs.Visit(func(f *pflag.Flag) { out = append(out, f.Name) })
	sort.Strings(out)
	return out
}
