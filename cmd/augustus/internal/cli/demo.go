package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
)

type demoOptions struct {
	dir         string
	basePort    int
	callTimeout time.Duration
	readyWait   time.Duration
	grace       time.Duration
}

func newDemoCommand() *cobra.Command {
	o := demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a local replica group and open a console on it",
		Long: `Create (or reuse) a local cluster in --dir — one group of 4 replicas (f=1) on
127.0.0.1 — start its replicas as child processes, wait until the group answers,
and open a console where you append to and read replicated logs, watch the
replicas' view and progress, and kill -9 and restart replicas to see the group
survive one fault.

Until the SQL layer exists, the console speaks the replicated log application;
the SQL shell takes its place when that layer lands. Replica logs go to
DIR/logs/. Leaving the console stops the replicas; their state stays in DIR, so
the next "augustus demo" continues where this one stopped.`,
		Example: `  augustus demo
  augustus demo --dir /tmp/demo --base-port 7100
  printf 'append k hello\nread k\nquit\n' | augustus demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "augustus-demo", "cluster directory; created with a new cluster if it holds none")
	fl.IntVar(&o.basePort, "base-port", 7000, "first port of a new cluster (12 ports: peer, client, metrics per replica)")
	fl.DurationVar(&o.callTimeout, "call-timeout", 15*time.Second, "how long a console command waits for the group")
	fl.DurationVar(&o.readyWait, "ready-timeout", 60*time.Second, "how long to wait for the group to answer at start")
	fl.DurationVar(&o.grace, "grace", 10*time.Second, "how long replicas get to stop after SIGTERM before SIGKILL")
	return cmd
}

func runDemo(ctx context.Context, in io.Reader, stdout, stderr io.Writer, o demoOptions) error {
	for _, d := range []struct {
		flag string
		v    time.Duration
		what string
	}{
		{"call-timeout", o.callTimeout, "how long a console command waits for the group"},
		{"ready-timeout", o.readyWait, "how long to wait for the group at start"},
		{"grace", o.grace, "how long replicas get to stop after SIGTERM"},
	} {
		if err := checkPositive(d.flag, d.v, d.what); err != nil {
			return err
		}
	}
	if o.basePort < 1 || o.basePort > 65535-11 {
		return fmt.Errorf("--base-port %d: want 1..%d (a new cluster takes 12 ports from it)", o.basePort, 65535-11)
	}
	c, created, err := demoCluster(stdout, o)
	if err != nil {
		return err
	}
	if err := checkPortsFree(c); err != nil {
		return err
	}
	g := &c.Groups[0]
	logDir := filepath.Join(o.dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("demo: replica log directory: %w", err)
	}
	// The console's kill and restart are how the demo shows faults, so its
	// supervisor never restarts a replica on its own.
	sup, err := newSupervisor(supervisorConfig{
		args: func(name string) []string {
			return []string{"replica", "--dir", o.dir, "--id", name, "--app", appLog, "--log-level", "info"}
		},
		output: func(name string) (io.Writer, func(), error) {
			f, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, nil, err
			}
			return f, func() { _ = f.Close() }, nil
		},
		policy: restartNever,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintf(stdout, "Stopping the replicas...\n")
		if killed := sup.Close(o.grace); len(killed) > 0 {
			fmt.Fprintf(stdout, "Replicas %s did not stop within %s and were killed.\n", strings.Join(killed, ", "), o.grace)
		}
		fmt.Fprintf(stdout, "Stopped. The cluster and its data stay in %s: run augustus demo --dir %s to continue, or delete it.\n", o.dir, o.dir)
	}()
	for _, r := range g.ReplicasByIndex() {
		if _, err := sup.Start(r.Name); err != nil {
			return err
		}
	}
	verb := "Reusing"
	if created {
		verb = "Created"
	}
	fmt.Fprintf(stdout, "%s the local cluster in %s; started %d replicas (logs in %s).\n", verb, o.dir, len(g.Replicas), logDir)

	key, err := cluster.LoadClientKey(o.dir, c.Clients[0].Name)
	if err != nil {
		return err
	}
	startCtx, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cm := client.NewMetrics(nil)
	cl, err := client.New(startCtx, client.Config{
		Cluster: c, Group: bft.GroupID(g.ID), Key: key, Timeout: 500 * time.Millisecond,
		Logger:  quiet, // also the connections' logger
		Metrics: cm,
	})
	cancelStart()
	if err != nil {
		return fmt.Errorf("demo: connect to the group: %w", err)
	}
	defer cl.Close()

	fmt.Fprintf(stdout, "Waiting for the group to answer...\n")
	if err := waitGroupAnswers(ctx, cl, o.readyWait); err != nil {
		return fmt.Errorf("demo: the group did not answer within %s (see the logs in %s): %w", o.readyWait, logDir, err)
	}
	k := &console{out: stdout, cl: cl, metrics: cm, sup: sup, group: g, f: c.F, callTimeout: o.callTimeout}
	fmt.Fprint(stdout, demoBanner(g, c.F))
	lines, err := newLineReader(ctx, in, stdout, filepath.Join(o.dir, ".console_history"))
	if err != nil {
		return err
	}
	defer lines.Close()
	_, k.echo = lines.(*pipeReader)
	return k.run(ctx, lines)
}

func demoBanner(g *cluster.Group, f int) string {
	return fmt.Sprintf(`
The group answers: %d replicas ordering calls with PBFT, tolerating f=%d faulty.

The SQL shell arrives with the SQL layer. Until then this console talks to
the replicated log application: every command below is ordered by the group
and its result accepted only when f+1 = %d replicas return the same one.
Type help for the commands.

`, len(g.Replicas), f, f+1)
}

// demoCluster loads the cluster in o.dir or creates one.
func demoCluster(stdout io.Writer, o demoOptions) (*cluster.Cluster, bool, error) {
	path := filepath.Join(o.dir, cluster.FileName)
	if _, err := os.Stat(path); err == nil {
		c, err := cluster.Load(path)
		if err != nil {
			return nil, false, err
		}
		if len(c.Clients) == 0 {
			return nil, false, fmt.Errorf("demo: %s lists no client; the demo needs one (or use another --dir)", path)
		}
		return c, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("demo: %w", err)
	}
	opts := cluster.DefaultGenerateOptions(o.dir)
	opts.Groups, opts.BasePort = 1, o.basePort
	c, err := cluster.Generate(opts)
	if err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// checkPortsFree fails early, and clearly, if a replica address is taken.
func checkPortsFree(c *cluster.Cluster) error {
	for _, g := range c.Groups {
		for _, r := range g.Replicas {
			for _, addr := range []string{r.PeerAddr, r.ClientAddr, r.MetricsAddr} {
				if addr == "" {
					continue
				}
				lis, err := net.Listen("tcp", addr)
				if err != nil {
					return fmt.Errorf("demo: %s of replica %s is not free (is another demo or cluster running? use another --dir and --base-port): %w", addr, r.Name, err)
				}
				_ = lis.Close()
			}
		}
	}
	return nil
}

// waitGroupAnswers retries a read-only call until the group answers.
func waitGroupAnswers(ctx context.Context, cl *client.Client, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_, err := cl.Invoke(ctx, replica.LogLen("demo"))
	return err
}
