package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

type initOptions struct {
	dir                string
	groups, f          int
	basePort           int
	host               string
	clients            int
	admins             int
	clientPolicy       string
	clusterID          string
	checkpointInterval uint64
	logWindow          uint64
	sync               string
}

func newInitCommand() *cobra.Command {
	o := initOptions{}
	def := cluster.DefaultGenerateOptions("")
	cmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Write a new cluster: cluster.json and one private key per replica and client",
		Long: `Write a new cluster into DIR: cluster.json (groups, replica addresses, public
keys, f, the initial partition map, the client policy, the SQL accounts) and
keys/<name>.key, one Ed25519 private key per replica, client and admin (mode
0600).

The cluster gets one SQL account, root, with a generated password: init
prints it once and writes it to keys/sql-root.password (mode 0600);
cluster.json holds only its hash (MySQL's mysql_native_password hash), which
every augustus gateway of the cluster checks logins against.

Every group has 3f+1 replicas. Replica k (counting g0r0, g0r1, ..., g1r0, ...)
gets three consecutive ports from --base-port + 3k: peer, client and metrics.
init never overwrites an existing cluster.`,
		Example: `  # the local demo layout: 1 group of 4 replicas (f=1) on 127.0.0.1:7000-7011
  augustus init --dir ./cluster

  # 2 groups of 4 replicas on 127.0.0.1:7000-7023
  augustus init --dir ./cluster2 --groups 2

  # one group of 7 replicas (f=2), two clients, checkpoints every 8 batches
  augustus init --dir /tmp/c --groups 1 --f 2 --clients 2 --checkpoint-interval 8 --log-window 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInit(cmd.OutOrStdout(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "directory to write the cluster into (created if needed; required)")
	// One group by default: bench's noop and log workloads use group 0
	// only; transactions across groups ask for more (--groups 2, as
	// README's Transactions section; the demo makes its own 2 groups).
	fl.IntVar(&o.groups, "groups", 1, "number of replica groups")
	fl.IntVar(&o.f, "f", def.F, "faulty replicas each group tolerates; groups have 3f+1 replicas")
	fl.IntVar(&o.basePort, "base-port", def.BasePort, "first port; replica k uses base-port+3k .. base-port+3k+2")
	fl.StringVar(&o.host, "host", def.Host, "host (name or IP) of every replica address")
	fl.IntVar(&o.clients, "clients", def.Clients, "number of client keys to create (client0, client1, ...)")
	fl.IntVar(&o.admins, "admins", def.Admins, "number of admin keys to create (admin0, ...): only their holders may change the partition map and schema (metadata transactions)")
	fl.StringVar(&o.clientPolicy, "client-policy", def.ClientPolicy, `"listed" (only the clients in cluster.json) or "open" (any client key)`)
	fl.StringVar(&o.clusterID, "cluster-id", "", "cluster id (default: a random augustus-<hex>)")
	fl.Uint64Var(&o.checkpointInterval, "checkpoint-interval", cluster.DefaultCheckpointInterval, "K: a checkpoint every K sequence numbers")
	fl.Uint64Var(&o.logWindow, "log-window", cluster.DefaultLogWindow, "L: the log window above the stable checkpoint, a multiple of K and at least 2K")
	fl.StringVar(&o.sync, "sync", cluster.SyncFsync, `durability: "fsync" (a replica syncs its log before what depends on it leaves; survives a power cut of every replica) or "none" (never syncs; survives power cuts of at most f replicas at a time)`)
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

func runInit(out io.Writer, o initOptions) error {
	switch o.clientPolicy {
	case cluster.PolicyListed, cluster.PolicyOpen:
	default:
		return fmt.Errorf("--client-policy %q: want %q or %q", o.clientPolicy, cluster.PolicyListed, cluster.PolicyOpen)
	}
	if o.clientPolicy == cluster.PolicyListed && o.clients < 1 {
		return fmt.Errorf("--clients %d: the %q policy needs at least one client (or use --client-policy %s)", o.clients, cluster.PolicyListed, cluster.PolicyOpen)
	}
	switch o.sync {
	case cluster.SyncFsync, cluster.SyncNone:
	default:
		return fmt.Errorf("--sync %q: want %q or %q", o.sync, cluster.SyncFsync, cluster.SyncNone)
	}
	k, l := o.checkpointInterval, o.logWindow
	if k == 0 || l%k != 0 || l < 2*k {
		return fmt.Errorf("--log-window %d must be a multiple of --checkpoint-interval %d and at least twice it", l, k)
	}
	c, err := cluster.Generate(cluster.GenerateOptions{
		Dir: o.dir, ClusterID: o.clusterID, Groups: o.groups, F: o.f, BasePort: o.basePort,
		Host: o.host, Clients: o.clients, ClientPolicy: o.clientPolicy, Admins: o.admins,
		SQLRoot: cluster.SQLRootGenerated,
	})
	if err != nil {
		return err
	}
	if k != c.CheckpointInterval || l != c.LogWindow || o.sync != c.Sync {
		c.CheckpointInterval, c.LogWindow, c.Sync = k, l, o.sync
		if err := c.Save(filepath.Join(o.dir, cluster.FileName)); err != nil {
			return err
		}
	}
	printCluster(out, o.dir, c)
	pw, err := cluster.ReadSQLRootPassword(o.dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  SQL user root: password %s (kept in %s, mode 0600; cluster.json holds only its hash)\n",
		pw, cluster.SQLRootPasswordPath(o.dir))
	fmt.Fprintf(out, "\nNext: augustus start --dir %s   (the transaction engine, for augustus txn and SQL; --app noop for augustus bench --workload noop)\n", o.dir)
	admin := ""
	if len(c.Admins) > 0 {
		admin = " --admin " + c.Admins[0].Name
	}
	fmt.Fprintf(out, "Then:  augustus gateway --dir %s%s   and   mysql -h 127.0.0.1 -P 3306 -u root -p\n", o.dir, admin)
	return nil
}

// printCluster says what a cluster directory holds.
func printCluster(out io.Writer, dir string, c *cluster.Cluster) {
	n := c.N()
	fmt.Fprintf(out, "Cluster %s in %s:\n", c.ClusterID, dir)
	fmt.Fprintf(out, "  %s  %d group(s) of %d replicas (f=%d), K=%d, L=%d, W=%d, client policy %q, sync %q\n",
		filepath.Join(dir, cluster.FileName), len(c.Groups), n, c.F, c.CheckpointInterval, c.LogWindow, c.ClientWindow, c.ClientPolicy, c.Sync)
	fmt.Fprintf(out, "  %s  %d replica key(s), %d client key(s), %d admin key(s) (mode 0600)\n\n",
		filepath.Join(dir, cluster.KeysDir)+string(filepath.Separator), len(c.Groups)*n, len(c.Clients), len(c.Admins))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  REPLICA\tGROUP\tINDEX\tPEER\tCLIENT\tMETRICS")
	for _, g := range c.Groups {
		for _, r := range g.ReplicasByIndex() {
			metrics := r.MetricsAddr
			if metrics == "" {
				metrics = "-"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s\n", r.Name, g.ID, r.Index, r.PeerAddr, r.ClientAddr, metrics)
		}
	}
	_ = tw.Flush()
	for _, cl := range c.Clients {
		fmt.Fprintf(out, "  client %s: key %s\n", cl.Name, cluster.KeyPath(dir, cl.Name))
	}
}
