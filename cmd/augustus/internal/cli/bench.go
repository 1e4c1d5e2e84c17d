package cli

import (
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/cmd/augustus/internal/bench"
)

// newBenchCommand is `augustus bench`: the workloads, the runner and the
// report live in package bench; this file only builds the command.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "bench --workload NAME --dir DIR",
		Short:   "Measure throughput, latency, aborts and CPU of a cluster under a workload",
		Long:    bench.Help(),
		Example: bench.Example(),
		Args:    cobra.NoArgs,
	}
	o := bench.AddFlags(cmd.Flags(), bench.Defaults{PprofBasePort: defaultPprofBasePort})
	_ = cmd.MarkFlagRequired("dir")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		info, _ := debug.ReadBuildInfo()
		return bench.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, bench.Host{
			Version:     versionLine(Version, Commit, info),
			LoadCluster: loadClusterDir,
			AppHint:     withAppHint,
			PprofAddr:   replicaPprofAddr,
		})
	}
	return cmd
}
