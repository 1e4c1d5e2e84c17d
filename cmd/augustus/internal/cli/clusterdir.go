package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// loadClusterDir loads <dir>/cluster.json, saying what to do when there is
// none.
func loadClusterDir(dir string) (*cluster.Cluster, error) {
	if dir == "" {
		return nil, errors.New("no cluster directory: pass --dir (a directory written by `augustus init`)")
	}
	path := filepath.Join(dir, cluster.FileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no %s in %s: create a cluster with `augustus init --dir %s`", cluster.FileName, dir, dir)
	}
	c, err := cluster.Load(path)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// replicaNames lists the names of every replica of the cluster, in group
// and index order.
func replicaNames(c *cluster.Cluster) []string {
	var names []string
	for _, g := range c.Groups {
		for _, r := range g.ReplicasByIndex() {
			names = append(names, r.Name)
		}
	}
	return names
}

// describeNames shortens a list of names for an error message.
func describeNames(names []string) string {
	if len(names) > 12 {
		return strings.Join(names[:12], ", ") + fmt.Sprintf(", ... (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

// newLogger returns a text logger at the named level ("debug", "info",
// "warn", "error").
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// withAppHint adds to a client's start-up error that the replicas of dir run
// another application the command that starts them with the transaction
// engine: the start-up query is the first call a transaction client makes,
// so a cluster started with --app noop or log shows there.
func withAppHint(err error, dir string) error {
	if errors.Is(err, coord.ErrNotTxnEngine) {
		return fmt.Errorf("%w (augustus start --dir %s --app txn)", err, dir)
	}
	return err
}
