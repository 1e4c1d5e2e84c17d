package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Workload is one benchmark workload. The runner calls NewCaller once per
// caller and measured interval and Caller.Do once per invocation; Classify
// says how an invocation that returned an error counts. A workload that
// drives the MySQL gateway (--mysql H:P) or the embedded database/sql
// driver implements the same interface: Setup checks its options, Load
// creates and fills its table, a Caller holds one connection and runs one
// statement (or transaction) per Do, Classify maps MySQL errors 1213 and
// 1062 to aborts.
type Workload interface {
	// Setup prepares the workload before anything is sent: it resolves its
	// defaults and checks its options against the cluster and against
	// every interval the process will measure (runs), so that a bad flag
	// fails at once. It must not wait on the network.
	Setup(runs []RunConfig) error
	// Load fills the database (--load) through the connected target; a
	// workload with nothing to load returns nil, nil.
	Load(ctx context.Context) (*LoadResult, error)
	// NewCaller returns caller i's state for the interval rc: its own
	// random source and generator (and, for a SQL workload, its own
	// connection; a Caller that is an io.Closer is closed after the
	// interval). One goroutine uses it at a time.
	NewCaller(rc RunConfig, i int) (Caller, error)
	// Classify says what an invocation's error counts as, and why: the
	// reason of an abort, the kind of a failure.
	Classify(err error) (Class, string)
}

// Caller is one caller of a workload in one measured interval.
type Caller interface {
	// Do runs one transaction (or call) within ctx and says how it ended.
	// Under --rate (the open loop) the runner calls it when the
	// transaction's turn comes on the schedule; otherwise again as soon as
	// it returns.
	Do(ctx context.Context) Outcome
}

// Class is what an invocation's outcome counts as.
type Class int

const (
	// Committed: the transaction committed (the call completed with a
	// valid result).
	Committed Class = iota
	// Aborted: the transaction aborted for good, as the workload expects
	// under contention (a lock conflict, a failed guard): counted by
	// reason, not an error.
	Aborted
	// Failed: an error, counted by kind; the run fails.
	Failed
	// Fatal: the run cannot measure anything (the replicas reject the
	// calls, another application answers): it stops at once with this
	// error, warm-up included.
	Fatal
)

// Outcome is how one invocation ended.
type Outcome struct {
	// Err is nil when the transaction committed (the call completed).
	Err error
	// Kind names the invocation for the report's breakdown by kind
	// ("post", "timeline"; "" for none).
	Kind string
	// Groups is the number of groups the committed transaction involved
	// (0: unknown), for the single- and multi-group split.
	Groups int
	// Absent counts reads that found nothing where the workload's --load
	// puts a value: the database is not loaded.
	Absent int
}

// RunConfig is one measured interval of a process: the share of
// multi-group transactions (--multi-group) and of Byzantine callers
// (--byzantine). The workloads of one replica group have one, the zero
// value.
type RunConfig struct {
	MultiGroupPct int
	ByzantinePct  int
}

// Family is what a workload runs against.
type Family int

const (
	// FamilyGroup: one replica group through the group client
	// (pkg/bft/client), replicas started with --app noop or log.
	FamilyGroup Family = iota + 1
	// FamilyTxn: the transaction engine through pkg/txn/coord, replicas
	// started with --app txn, any number of groups.
	FamilyTxn
)

// WorkloadFlags are a workload's own flags.
type WorkloadFlags interface {
	// Check refuses the flags' values at once: values that are wrong, or
	// flags set for another workload than the one run.
	Check(workload string) error
}

// Spec registers a workload: how `augustus bench` names it, documents it
// and builds it. Each workload's file registers its Spec in an init
// function, so adding a workload touches that one file.
type Spec struct {
	// Names are the --workload values (A, B, C and D share one Spec).
	Names []string
	// Order places the workload in --help and in the list of names.
	Order  int
	Family Family
	// Help is the workload's paragraph of `augustus bench --help`; Example
	// its lines of the examples.
	Help, Example string
	// Flags registers the workload's own flags on fs (nil: none); the
	// values go to the returned WorkloadFlags, one per command line.
	Flags func(fs *pflag.FlagSet) WorkloadFlags

	// newGroup builds a workload of FamilyGroup, newTxn one of FamilyTxn;
	// f is what Flags returned (nil without Flags).
	newGroup func(env *groupEnv, name string) (Workload, error)
	newTxn   func(env *txnEnv, name string, f WorkloadFlags) (txnWorkload, error)
}

// specs are the registered workloads, in Order.
var specs []*Spec

// register adds a workload (from an init function).
func register(s *Spec) {
	for _, n := range s.Names {
		if lookup(n) != nil {
			panic(fmt.Sprintf("bench: workload %q registered twice", n))
		}
	}
	specs = append(specs, s)
	slices.SortStableFunc(specs, func(a, b *Spec) int { return a.Order - b.Order })
}

// lookup returns the Spec that runs the workload name (nil if none).
func lookup(name string) *Spec {
	for _, s := range specs {
		if slices.Contains(s.Names, name) {
			return s
		}
	}
	return nil
}

// workloadNames lists the --workload values of family f (0: all), quoted.
func workloadNames(f Family) string {
	var names []string
	for _, s := range specs {
		if f == 0 || s.Family == f {
			for _, n := range s.Names {
				names = append(names, fmt.Sprintf("%q", n))
			}
		}
	}
	return strings.Join(names, ", ")
}
