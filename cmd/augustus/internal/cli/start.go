package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

type startOptions struct {
	dir      string
	app      string
	logLevel string
	grace    time.Duration
	pprof    bool
}

func newStartCommand() *cobra.Command {
	o := startOptions{}
	cmd := &cobra.Command{
		Use:   "start --dir DIR",
		Short: "Run every replica of a local cluster as child processes",
		Long: `Run every replica of the cluster in DIR as a child process of this binary
("augustus replica --dir DIR --id NAME"), print where each listens, and forward
their logs to stderr, each line prefixed with the replica's name.

Ctrl-C or SIGTERM stops them all: SIGTERM to each replica, then SIGKILL to those
still running after --grace. If a replica dies on its own, start says which and
how, stops the others and exits with status 1.

All replicas of the cluster run on this machine, so this is for clusters whose
addresses are local (what "augustus init" writes by default).`,
		Example: `  augustus init --dir ./cluster --groups 1
  augustus start --dir ./cluster
  augustus start --dir ./cluster --app noop --log-level warn`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStart(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "cluster directory written by augustus init (required)")
	fl.StringVar(&o.app, "app", appLog, `application every replica runs: "log" or "noop"`)
	fl.StringVar(&o.logLevel, "log-level", "info", "log level of the replicas: debug, info, warn or error")
	fl.DurationVar(&o.grace, "grace", 10*time.Second, "how long replicas get to stop after SIGTERM before SIGKILL")
	fl.BoolVar(&o.pprof, "pprof", false, "serve net/http/pprof on each replica, at 127.0.0.1:6060+k for the k-th replica of the table")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// pprofAddr is where `start --pprof` has replica k serve pprof.
func pprofAddr(k int) string { return fmt.Sprintf("127.0.0.1:%d", 6060+k) }

func runStart(ctx context.Context, stdout, stderr io.Writer, o startOptions) error {
	if _, err := newApp(o.app); err != nil {
		return err
	}
	if _, err := newLogger(io.Discard, o.logLevel); err != nil {
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
	sup, err := newSupervisor(
		func(name string) []string {
			args := []string{"replica", "--dir", o.dir, "--id", name, "--app", o.app, "--log-level", o.logLevel}
			if o.pprof {
				args = append(args, "--pprof", pprofAddr(index[name]))
			}
			return args
		},
		func(name string) (io.Writer, func(), error) {
			w := &prefixWriter{mu: &outMu, w: stderr, prefix: fmt.Sprintf("%-*s | ", maxLen(names), name)}
			return w, w.Flush, nil
		})
	if err != nil {
		return err
	}
	type exit struct {
		name string
		pid  int
		err  error
	}
	died := make(chan exit, len(names))
	sup.onExit = func(name string, pid int, err error, expected bool) {
		if !expected {
			died <- exit{name, pid, err}
		}
	}
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(stdout, format, args...)
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
	// address), or one dies, or we are told to stop.
	upCtx, cancelUp := context.WithTimeout(ctx, 60*time.Second)
	up := make(chan error, 1)
	go func() { up <- waitMetricsUp(upCtx, c) }()
	select {
	case err := <-up:
		cancelUp()
		if err != nil && ctx.Err() == nil {
			say("warning: %v\n", err)
		} else if err == nil {
			say("All %d replicas are up. Ctrl-C stops them.\n", len(names))
		}
	case d := <-died:
		cancelUp()
		<-up
		say("replica %s (pid %d) exited unexpectedly during start-up: %v; stopping the others\n", d.name, d.pid, describeExit(d.err))
		_ = stop()
		return &exitError{code: 1, err: fmt.Errorf("replica %s exited unexpectedly: %v", d.name, describeExit(d.err))}
	}

	select {
	case <-ctx.Done():
		say("Stopping %d replicas (SIGTERM, SIGKILL after %s)...\n", len(names), o.grace)
		if err := stop(); err != nil {
			return err
		}
		say("All replicas stopped.\n")
		return nil
	case d := <-died:
		say("replica %s (pid %d) exited unexpectedly: %v; stopping the others\n", d.name, d.pid, describeExit(d.err))
		_ = stop()
		return &exitError{code: 1, err: fmt.Errorf("replica %s exited unexpectedly: %v", d.name, describeExit(d.err))}
	}
}

func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
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
	fmt.Fprintf(stdout, "Cluster %s (%s): %d group(s) of %d replicas, f=%d, app %q\n",
		c.ClusterID, o.dir, len(c.Groups), c.N(), c.F, o.app)
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
				line += "\thttp://" + pprofAddr(k) + "/debug/pprof/"
			}
			fmt.Fprintln(tw, line)
			k++
		}
	}
	_ = tw.Flush()
}

// waitMetricsUp polls every replica's metrics endpoint until all answer.
func waitMetricsUp(ctx context.Context, c *cluster.Cluster) error {
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
