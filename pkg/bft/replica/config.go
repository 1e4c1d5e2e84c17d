package replica

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/transport"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Config configures a replica.
type Config struct {
	// Cluster is the cluster file; Name the replica's name in it (g0r1).
	Cluster *cluster.Cluster
	Name    string
	// Key is the replica's private key (its public key is in Cluster).
	Key ed25519.PrivateKey
	// DataDir holds the replica's pebble store.
	DataDir string
	// App is the replicated application; nil means NoopApp.
	App Application

	// TickInterval is the duration of one core tick (default 10ms).
	TickInterval time.Duration
	// ConfigureCore adjusts the core configuration derived from the cluster
	// (tests shorten timeouts).
	ConfigureCore func(*bft.Config)

	// PeerListener and ClientListener, if set, are used instead of listening
	// on the cluster file's addresses.
	PeerListener, ClientListener net.Listener
	// Interceptor injects delay and loss on outgoing links (tests).
	Interceptor transport.Interceptor

	Logger         *slog.Logger
	Registerer     prometheus.Registerer
	StorageOptions storage.Options
}

func (c *Config) validate() error {
	switch {
	case c.Cluster == nil:
		return fmt.Errorf("%w: no cluster", ErrConfig)
	case c.Name == "":
		return fmt.Errorf("%w: no replica name", ErrConfig)
	case len(c.Key) != ed25519.PrivateKeySize:
		return fmt.Errorf("%w: no private key for %s", ErrConfig, c.Name)
	case c.DataDir == "":
		return fmt.Errorf("%w: no data directory", ErrConfig)
	}
	g, rep, err := c.Cluster.Replica(c.Name)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	keys, err := c.Cluster.GroupKeys(bft.GroupID(g.ID))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !c.Key.Public().(ed25519.PublicKey).Equal(keys[rep.Index]) {
		return fmt.Errorf("%w: the private key does not match the public key of %s in the cluster file", ErrConfig, c.Name)
	}
	if c.TickInterval == 0 {
		c.TickInterval = 10 * time.Millisecond
	}
	if c.App == nil {
		c.App = NoopApp{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
