// Package cli assembles the cobra command tree of the augustus binary.
//
// Only subcommands that work are registered: DESIGN.md §1 lists the full
// contract (init, replica, start, gateway, demo, sql, bench, version); each
// appears in --help when its layer lands.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the command line and returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "augustus: %v\n", err)
		return 1
	}
	return 0
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// NewRootCommand builds the augustus command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "augustus",
		Short: "Augustus: a Byzantine-fault-tolerant distributed database",
		Long: `Augustus is a distributed database that stays correct while up to f of every
3f+1 replicas (and any number of clients) crash, lie or collude. Groups of
replicas order requests with PBFT; data is range-partitioned over groups.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newInitCommand(), newReplicaCommand(), newStartCommand(), newBenchCommand(), newDemoCommand(), newTxnCommand(), newGatewayCommand(), newVersionCommand())
	return root
}
