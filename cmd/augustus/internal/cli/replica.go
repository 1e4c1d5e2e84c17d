package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

// Applications a replica can run (--app).
const (
	appNoop = "noop"
	appLog  = "log"
	appTxn  = "txn"
)

// checkAppName refuses an unknown --app at once.
func checkAppName(name string) error {
	switch name {
	case appLog, appNoop, appTxn:
		return nil
	}
	return fmt.Errorf("--app %q: want %q, %q or %q", name, appTxn, appLog, appNoop)
}

type replicaOptions struct {
	dir      string
	id       string
	data     string
	app      string
	logLevel string
	pprof    string
	// The store's sizes (--cache-size, --memtable-size, --row-cache-size).
	sizes storeSizes
}

// storeSizes are the flags of the store's memory (augustus replica, and
// start, which passes them on to every replica).
type storeSizes struct {
	cache, memTable byteSize
	// rowCache may be 0: no row cache.
	rowCache byteSize
}

// newStoreSizes returns the flags' values of the store's sizes, at their
// defaults.
func newStoreSizes() storeSizes {
	return storeSizes{
		cache:    byteSize{v: storage.DefaultCacheSize, min: minStoreSize, max: maxCacheSize},
		memTable: byteSize{v: storage.DefaultMemTableSize, min: minStoreSize, max: maxMemTableSize},
		rowCache: byteSize{v: storage.DefaultRowCacheSize, min: minRowCacheSize, max: maxCacheSize, zero: true},
	}
}

// flags registers --cache-size, --memtable-size and --row-cache-size.
func (s *storeSizes) flags(fl *pflag.FlagSet) {
	fl.Var(&s.cache, "cache-size", "the store's block cache: sstable blocks kept in memory (e.g. 256MiB)")
	fl.Var(&s.memTable, "memtable-size", "the store's memtable: writes gathered in memory before a flush to an sstable (e.g. 32MiB)")
	fl.Var(&s.rowCache, "row-cache-size", "the store's row cache: committed values of the replicated keys read and written lately, outside the Go heap (at least 32MiB; 0 turns it off)")
}

// options sets the store's options from the sizes.
func (s *storeSizes) options(o *storage.Options) {
	o.CacheSize = int64(s.cache.v)
	o.MemTableSize = s.memTable.v
	o.RowCacheSize = int64(s.rowCache.v)
	if s.rowCache.v == 0 {
		o.RowCacheSize = -1
	}
}

func newReplicaCommand() *cobra.Command {
	o := replicaOptions{}
	o.sizes = newStoreSizes()
	cmd := &cobra.Command{
		Use:   "replica --dir DIR --id NAME",
		Short: "Run one replica of a cluster",
		Long: `Run one replica: the PBFT node, its pebble store and the application.

It reads DIR/cluster.json and its private key DIR/keys/NAME.key, checks that the
key is the one cluster.json lists for NAME, listens on the replica's peer and
client addresses, and serves Prometheus metrics on its metrics address
(http://METRICS_ADDR/metrics, with the Go and process collectors). SIGINT or
SIGTERM stop it cleanly; its state survives in --data.

Applications (--app): "txn" (the default) is the Augustus transaction engine
(short transactions across groups; what "augustus txn", the demo console and
the SQL layer use); "log" keeps append-only logs per key (append, read, len;
what "augustus bench --workload log" and the process tests use); "noop" executes nothing and returns empty results
(what "augustus bench --workload noop" measures).`,
		Example: `  augustus replica --dir ./cluster --id g0r1
  augustus replica --dir ./cluster --id g0r1 --app log
  augustus replica --dir ./cluster --id g0r0 --app noop --log-level debug --pprof 127.0.0.1:6060`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplica(cmd.Context(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json and keys/; required)")
	fl.StringVar(&o.id, "id", "", "the replica's name in cluster.json, e.g. g0r1 (required)")
	fl.StringVar(&o.data, "data", "", "data directory of the replica's store (default DIR/data/NAME)")
	fl.StringVar(&o.app, "app", appTxn, `application: "txn" (the transaction engine), "log" or "noop"`)
	fl.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&o.pprof, "pprof", "", "serve net/http/pprof on this address (host:port; off by default)")
	o.sizes.flags(fl)
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("id")
	return cmd
}

// newApp returns the application named by --app.
// newApp makes the application replica name of cluster c runs.
func newApp(name string, c *cluster.Cluster, replicaName string, reg prometheus.Registerer, log *slog.Logger) (replica.Application, error) {
	switch name {
	case appLog:
		return replica.LogApp{}, nil
	case appNoop:
		return replica.NoopApp{}, nil
	case appTxn:
		g, _, err := c.ReplicaID(replicaName)
		if err != nil {
			return nil, err
		}
		cfg, err := partition.ConfigFromCluster(c, g)
		if err != nil {
			return nil, fmt.Errorf("--app txn: %w", err)
		}
		cfg.Metrics, cfg.Logger = partition.NewMetrics(reg), log
		e, err := partition.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("--app txn: %w", err)
		}
		return e, nil
	}
	return nil, checkAppName(name)
}

// loadReplicaSetup checks everything a replica needs before it opens its
// store: the cluster file, its name in it, its key file and the application.
func loadReplicaSetup(o replicaOptions) (*cluster.Cluster, *cluster.Replica, replica.Config, error) {
	var cfg replica.Config
	if err := checkAppName(o.app); err != nil {
		return nil, nil, cfg, err
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return nil, nil, cfg, err
	}
	_, rep, err := c.Replica(o.id)
	if err != nil {
		return nil, nil, cfg, fmt.Errorf("--id %q: no such replica in %s (replicas: %s)",
			o.id, filepath.Join(o.dir, cluster.FileName), describeNames(replicaNames(c)))
	}
	keyPath := cluster.KeyPath(o.dir, o.id)
	if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, cfg, fmt.Errorf("no key file for replica %s: %s does not exist (init writes one per replica; copy it there)", o.id, keyPath)
	}
	key, err := c.LoadReplicaKeyFile(o.id, keyPath)
	if err != nil {
		if errors.Is(err, cluster.ErrKeyMismatch) {
			return nil, nil, cfg, fmt.Errorf("replica %s: %w (was the key file replaced, or cluster.json regenerated?)", o.id, err)
		}
		return nil, nil, cfg, fmt.Errorf("replica %s: %w", o.id, err)
	}
	data := o.data
	if data == "" {
		data = filepath.Join(o.dir, "data", o.id)
	}
	cfg = replica.Config{Cluster: c, Name: o.id, Key: key, DataDir: data}
	o.sizes.options(&cfg.StorageOptions)
	return c, rep, cfg, nil
}

func runReplica(ctx context.Context, stderr io.Writer, o replicaOptions) error {
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	_, rep, cfg, err := loadReplicaSetup(o)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Registerer = reg
	cfg.Logger = logger // the replica adds its name to every record
	log := logger.With("replica", o.id)
	if cfg.App, err = newApp(o.app, cfg.Cluster, o.id, reg, log); err != nil {
		return err
	}

	// The metrics address is bound now, so a busy port fails the start at
	// once, but served only once the replica has restored its state: a
	// scrape never sees the zeros of a replica still starting.
	var servers httpServers
	defer servers.shutdown(log)
	var metricsLis net.Listener
	if rep.MetricsAddr != "" {
		if metricsLis, err = net.Listen("tcp", rep.MetricsAddr); err != nil {
			return fmt.Errorf("replica %s: listen for metrics on %s: %w", o.id, rep.MetricsAddr, err)
		}
	}
	metricsServed := false // set by the announcing goroutine, read after it ended
	defer func() {
		if metricsLis != nil && !metricsServed {
			_ = metricsLis.Close()
		}
	}()
	if o.pprof != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		lis, err := net.Listen("tcp", o.pprof)
		if err != nil {
			return fmt.Errorf("replica %s: --pprof: %w", o.id, err)
		}
		if err := servers.serve(lis, "pprof", mux, log); err != nil {
			return fmt.Errorf("replica %s: --pprof: %w", o.id, err)
		}
	}

	r, err := replica.New(cfg)
	if err != nil {
		return err
	}
	runDone := make(chan struct{})
	var announce sync.WaitGroup
	announce.Add(1)
	go func() {
		defer announce.Done()
		select {
		case <-r.Ready():
			if metricsLis != nil {
				mux := http.NewServeMux()
				mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
				metricsServed = servers.serve(metricsLis, "metrics", mux, log) == nil
			}
			log.Info("replica ready", "peer_addr", r.PeerAddr(), "client_addr", r.ClientAddr(),
				"metrics_addr", rep.MetricsAddr, "app", o.app, "data", cfg.DataDir, "pid", os.Getpid())
		case <-runDone:
		}
	}()
	err = r.Run(ctx)
	close(runDone)
	announce.Wait()
	if err != nil {
		return fmt.Errorf("replica %s stopped: %w", o.id, err)
	}
	log.Info("replica stopped")
	return nil
}

// httpServers are the replica's HTTP endpoints (metrics, pprof); shutdown
// stops them and waits for their goroutines.
type httpServers struct {
	mu      sync.Mutex
	closed  bool
	servers []*http.Server
	wg      sync.WaitGroup
}

func (s *httpServers) serve(lis net.Listener, what string, h http.Handler, log *slog.Logger) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("shut down")
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "what", what, "addr", lis.Addr(), "err", err)
		}
	}()
	return nil
}

func (s *httpServers) shutdown(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.Lock()
	s.closed = true
	servers := s.servers
	s.mu.Unlock()
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("http server shutdown", "err", err)
			_ = srv.Close()
		}
	}
	s.wg.Wait()
}
