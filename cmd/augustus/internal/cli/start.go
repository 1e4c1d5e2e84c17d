package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/internal/backoff"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

type startOptions struct {
	dir      string
	app      string
	logLevel string
	grace    time.Duration
	pprof    bool
	// pprofBase is the pprof port of the first replica (--pprof).
	pprofBase int
	restart   string
	// The replicas' store sizes (--cache-size, --memtable-size,
	// --row-cache-size), passed on to every replica (replicaArgs).
	sizes storeSizes
	// tests shorten the restart pacing (zero: the supervisor's defaults).
	restartBackoff   backoff.Config
	maxStartFailures int
	stableAfter      time.Duration
}

func newStartCommand() *cobra.Command {
	o := startOptions{}
	o.sizes = newStoreSizes()
	cmd := &cobra.Command{
		Use:   "start --dir DIR",
		Short: "Run every replica of a local cluster as child processes and keep them running",
		Long: `Run every replica of the cluster in DIR as a child process of this binary
("augustus replica --dir DIR --id NAME"), print where each listens, and forward
their logs to stderr, each line prefixed with the replica's name.

start is a supervisor: when a replica exits, it says which, how (exit status or
signal) and, if the replica printed why, that last line; the other replicas
keep running, since a group of 3f+1 replicas serves with up to f of them down.
With --restart on-failure (the default) a replica that crashed or failed is
started again after a back-off: 0.5s, doubling (with jitter) for each start-up
failure in a row, up to 30s. A replica that fails at start-up (exits within 10s
of starting) 5 times in a row is left down, with the reason, while the others
serve: fix the cause (a wrong key file, a busy port, ...) and start it again,
by hand (augustus replica --dir DIR --id NAME) or by restarting start.
--restart always also restarts replicas that exited with status 0; --restart
never leaves every replica that exits down.

Ctrl-C or SIGTERM stops them all: SIGTERM to each replica, then SIGKILL to those
still running after --grace. start exits with status 1 if every replica is down
and none will be restarted.

All replicas of the cluster run on this machine, so this is for clusters whose
addresses are local (what "augustus init" writes by default).

--app picks the application of every replica: "txn" (the default) is the
transaction engine that "augustus txn" and "augustus bench --workload bank|A|..."
use; "log" keeps append-only logs per key (bench --workload log); "noop"
executes nothing (bench --workload noop).`,
		Example: `  augustus init --dir ./cluster
  augustus start --dir ./cluster                 # the transaction engine (augustus txn)
  augustus start --dir ./cluster --app noop --log-level warn
  augustus start --dir ./cluster --restart never --grace 30s
  augustus start --dir ./cluster --cache-size 256MiB --memtable-size 32MiB --row-cache-size 128MiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStart(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "cluster directory written by augustus init (required)")
	fl.StringVar(&o.app, "app", appTxn, `application every replica runs: "txn" (the transaction engine), "log" or "noop"`)
	fl.StringVar(&o.logLevel, "log-level", "info", "log level of the replicas: debug, info, warn or error")
	fl.DurationVar(&o.grace, "grace", 10*time.Second, "how long replicas get to stop after SIGTERM before SIGKILL (> 0)")
	fl.BoolVar(&o.pprof, "pprof", false, "serve net/http/pprof on each replica, at 127.0.0.1:PORT+k for the k-th replica of the table (PORT: --pprof-base-port)")
	fl.IntVar(&o.pprofBase, "pprof-base-port", defaultPprofBasePort, "with --pprof: the port of the first replica's pprof endpoint")
	o.sizes.flags(fl)
	fl.StringVar(&o.restart, "restart", restartOnFailure, `when to restart a replica that exited: "on-failure" (crashed or failed), "always" or "never"`)
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// checkRestartPolicy validates --restart.
func checkRestartPolicy(p string) error {
	switch p {
	case restartOnFailure, restartAlways, restartNever:
		return nil
	}
	return fmt.Errorf("--restart %q: want %q, %q or %q", p, restartOnFailure, restartAlways, restartNever)
}

// checkPositive refuses a duration flag that must be positive.
func checkPositive(flag string, d time.Duration, what string) error {
	if d <= 0 {
		return fmt.Errorf("--%s %s: must be positive (%s)", flag, d, what)
	}
	return nil
}

func runStart(ctx context.Context, stdout, stderr io.Writer, o startOptions) error {
	if err := checkAppName(o.app); err != nil {
		return err
	}
	if _, err := newLogger(io.Discard, o.logLevel); err != nil {
		return err
	}
	if err := checkPositive("grace", o.grace, "how long replicas get to stop after SIGTERM"); err != nil {
		return err
	}
	if o.restart == "" {
		o.restart = restartOnFailure
	}
	if o.pprofBase == 0 {
		o.pprofBase = defaultPprofBasePort
	}
	if o.pprofBase < 1 || o.pprofBase > 65535 {
		return fmt.Errorf("--pprof-base-port %d: want a port", o.pprofBase)
	}
	if err := checkRestartPolicy(o.restart); err != nil {
		return err
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	names := replicaNames(c)
	index := make(map[string]int, len(names))
	for k, n := range names {
		index[n] = k
	}
	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(stdout, format, args...)
	}
	// changed wakes the main loop after an event, to check whether any
	// replica is left that runs or will run.
	changed := make(chan struct{}, 1)
	var sup *supervisor
	sup, err = newSupervisor(supervisorConfig{
		args: func(name string) []string { return replicaArgs(o, name, index[name]) },
		output: func(name string) (io.Writer, func(), error) {
			w := &prefixWriter{mu: &outMu, w: stderr, prefix: fmt.Sprintf("%-*s | ", maxLen(names), name)}
			return w, w.Flush, nil
		},
		policy:           o.restart,
		backoff:          o.restartBackoff,
		maxStartFailures: o.maxStartFailures,
		stableAfter:      o.stableAfter,
		onEvent: func(ev supEvent) {
			say("%s\n", describeEvent(ev, o, c, sup))
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		return err
	}
	stop := func() error {
		if killed := sup.Close(o.grace); len(killed) > 0 {
			return fmt.Errorf("replicas %s did not stop within %s of SIGTERM and were killed", strings.Join(killed, ", "), o.grace)
		}
		return nil
	}

	pids := make(map[string]int, len(names))
	for _, name := range names {
		pid, err := sup.Start(name)
		if err != nil {
			_ = stop()
			return err
		}
		pids[name] = pid
	}
	printStartTable(stdout, &outMu, c, pids, o)

	// Wait until every replica serves its metrics (or has no metrics
	// address), or is down for good, or we are told to stop.
	upCtx, cancelUp := context.WithTimeout(ctx, 60*time.Second)
	up := make(chan error, 1)
	go func() { up <- waitReplicasUp(upCtx, c, sup) }()
	upDone := false
	for {
		select {
		case err := <-up:
			cancelUp()
			upDone = true
			if err != nil && ctx.Err() == nil {
				say("warning: %v\n", err)
			} else if err == nil {
				say("%s\n", upSummary(c, sup))
			}
			continue
		case <-changed:
			if !sup.Idle() {
				continue
			}
			cancelUp()
			if !upDone {
				<-up
			}
			say("Every replica is down and none will be restarted; stopping.\n")
			_ = stop()
			return &exitError{code: 1, err: errors.New("every replica is down")}
		case <-ctx.Done():
		}
		break
	}
	cancelUp()
	if !upDone {
		<-up
	}
	say("Stopping %d replicas (SIGTERM, SIGKILL after %s)...\n", len(names), o.grace)
	if err := stop(); err != nil {
		return err
	}
	say("All replicas stopped.\n")
	return nil
}

// describeEvent turns a supervisor event into the line start prints.
func describeEvent(ev supEvent, o startOptions, c *cluster.Cluster, sup *supervisor) string {
	switch ev.Kind {
	case evExited:
		line := fmt.Sprintf("replica %s (pid %d) exited after %s: %s", ev.Name, ev.Pid, roundRun(ev.Ran), describeExit(ev.Err))
		if ev.Cause != "" {
			line += ": " + ev.Cause
		}
		return line + ". " + groupHealth(c, sup, ev.Name)
	case evRestarting:
		why := "--restart " + o.restart
		if ev.StartFailures > 0 {
			why = fmt.Sprintf("start-up failure %d of %d in a row", ev.StartFailures, ev.MaxStartFailures)
		}
		return fmt.Sprintf("replica %s: restarting in %s (%s)", ev.Name, ev.Delay.Round(10*time.Millisecond), why)
	case evRestarted:
		if ev.StartFailures > 0 {
			return fmt.Sprintf("replica %s restarted (pid %d)", ev.Name, ev.Pid)
		}
		return fmt.Sprintf("replica %s restarted (pid %d); it recovers from its store and catches up with the others", ev.Name, ev.Pid)
	case evNotRestarted:
		return fmt.Sprintf("replica %s: not restarted (--restart %s); start it by hand with: augustus replica --dir %s --id %s", ev.Name, o.restart, o.dir, ev.Name)
	case evGaveUp:
		cause := ev.Cause
		if cause == "" {
			cause = describeExit(ev.Err)
		}
		return fmt.Sprintf("replica %s is left down: it failed at start-up %d times in a row; last error: %s. "+
			"The other replicas keep serving. Fix the cause, then start it with: augustus replica --dir %s --id %s (or restart augustus start)",
			ev.Name, ev.StartFailures, cause, o.dir, ev.Name)
	case evSpawnFailed:
		return fmt.Sprintf("replica %s: could not be started: %v", ev.Name, ev.Err)
	}
	return fmt.Sprintf("replica %s: event %d", ev.Name, ev.Kind)
}

// roundRun rounds how long a replica ran for a message: to 10ms below a
// second ("exited after 40ms", not "after 0s"), to 100ms above.
func roundRun(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// groupHealth says how many replicas of name's group run, against f.
func groupHealth(c *cluster.Cluster, sup *supervisor, name string) string {
	g, _, err := c.Replica(name)
	if err != nil {
		return ""
	}
	running := 0
	for _, r := range g.Replicas {
		if _, ok := sup.Running(r.Name); ok {
			running++
		}
	}
	n, down := len(g.Replicas), len(g.Replicas)-running
	if down <= c.F {
		return fmt.Sprintf("Group %d: %d of %d replicas running; it serves with up to f=%d down.", g.ID, running, n, c.F)
	}
	return fmt.Sprintf("Group %d: %d of %d replicas running: more than f=%d down, so it cannot order calls until enough come back.", g.ID, running, n, c.F)
}

// upSummary says which replicas are up, and why the others are not.
func upSummary(c *cluster.Cluster, sup *supervisor) string {
	names := replicaNames(c)
	var down []string
	for _, n := range names {
		if _, ok := sup.Running(n); ok {
			continue
		}
		why := "not running"
		if reason, ok := sup.Down(n); ok {
			why = "left down after failing at start-up: " + reason
		} else if sup.Alive(n) {
			why = "restarting"
		}
		down = append(down, fmt.Sprintf("%s is down (%s)", n, why))
	}
	if len(down) == 0 {
		return fmt.Sprintf("All %d replicas are up. Ctrl-C stops them.", len(names))
	}
	return fmt.Sprintf("%d of %d replicas are up; %s. Ctrl-C stops them.", len(names)-len(down), len(names), strings.Join(down, "; "))
}

func maxLen(names []string) int {
	m := 0
	for _, n := range names {
		m = max(m, len(n))
	}
	return m
}

func printStartTable(stdout io.Writer, mu *sync.Mutex, c *cluster.Cluster, pids map[string]int, o startOptions) {
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(stdout, "Cluster %s (%s): %d group(s) of %d replicas, f=%d, app %q, restart %s\n",
		c.ClusterID, o.dir, len(c.Groups), c.N(), c.F, o.app, o.restart)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := "REPLICA\tPID\tPEER\tCLIENT\tMETRICS"
	if o.pprof {
		header += "\tPPROF"
	}
	fmt.Fprintln(tw, header)
	k := 0
	for _, g := range c.Groups {
		for _, r := range g.ReplicasByIndex() {
			metrics := "-"
			if r.MetricsAddr != "" {
				metrics = "http://" + r.MetricsAddr + "/metrics"
			}
			line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s", r.Name, pids[r.Name], r.PeerAddr, r.ClientAddr, metrics)
			if o.pprof {
				line += "\thttp://" + pprofAddr(o.pprofBase, k) + "/debug/pprof/"
			}
			fmt.Fprintln(tw, line)
			k++
		}
	}
	_ = tw.Flush()
}

// waitReplicasUp polls every replica's metrics endpoint until each one
// answers, has no metrics address, or is down and will not be restarted.
func waitReplicasUp(ctx context.Context, c *cluster.Cluster, sup *supervisor) error {
	pending := map[string]string{}
	for _, g := range c.Groups {
		for _, r := range g.Replicas {
			if r.MetricsAddr != "" {
				pending[r.Name] = r.MetricsAddr
			}
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(pending) > 0 {
		for name, addr := range pending {
			if !sup.Alive(name) {
				delete(pending, name)
				continue
			}
			if _, err := scrape(ctx, addr); err == nil {
				delete(pending, name)
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			var left []string
			for n := range pending {
				left = append(left, n)
			}
			sort.Strings(left)
			return fmt.Errorf("replicas %s do not serve metrics yet: %w", strings.Join(left, ", "), ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// replicaArgs is the command line of the k-th replica, name, under start:
// start's options that every replica takes, passed on. A zero block cache
// or memtable size (startOptions built without newStoreSizes, as tests and
// the demo do) is left out, so the replica takes its default; the row cache
// size, whose 0 means "off", is passed on when it was given.
func replicaArgs(o startOptions, name string, k int) []string {
	args := []string{"replica", "--dir", o.dir, "--id", name, "--app", o.app, "--log-level", o.logLevel}
	if o.sizes.cache.v != 0 {
		args = append(args, "--cache-size", fmt.Sprint(o.sizes.cache.v))
	}
	if o.sizes.memTable.v != 0 {
		args = append(args, "--memtable-size", fmt.Sprint(o.sizes.memTable.v))
	}
	// The row cache's 0 means "off", so it is passed on only when given.
	if o.sizes.rowCache.given {
		args = append(args, "--row-cache-size", fmt.Sprint(o.sizes.rowCache.v))
	}
	if o.pprof {
		args = append(args, "--pprof", pprofAddr(o.pprofBase, k))
	}
	return args
}
