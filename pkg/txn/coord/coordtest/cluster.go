// Package coordtest runs in-process clusters for tests of the client library
// and of the commands built on it: groups of replicas on loopback (real
// TLS, gRPC, PBFT and pebble) with the transaction engine
// (pkg/txn/partition) as their application, short timeouts, and a cluster
// directory (cluster.json and keys) a client can load.
//
// It is test support: it imports the replica runtime, which pkg/txn/coord
// itself never does.
package coordtest

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

// Cluster is a running in-process cluster.
type Cluster struct {
	t       testing.TB
	Dir     string
	Cluster *cluster.Cluster
	running map[string]*running
}

type running struct {
	cancel context.CancelFunc
	done   chan error
}

// Options shape a cluster.
type Options struct {
	// Groups of 3F+1 replicas (defaults 2 and 1).
	Groups, F int
	// Clients and Admins are the key pairs written (defaults 4 and 1).
	Clients, Admins int
	// Logs receives the replicas' warnings (default: discarded).
	Logs io.Writer
}

// Start generates a cluster in a temporary directory and starts every
// replica; they stop when the test ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Groups == 0 {
		o.Groups = 2
	}
	if o.F == 0 {
		o.F = 1
	}
	if o.Clients == 0 {
		o.Clients = 4
	}
	if o.Admins == 0 {
		o.Admins = 1
	}
	dir := t.TempDir()
	c, err := cluster.Generate(cluster.GenerateOptions{Dir: dir, ClusterID: "coordtest", Groups: o.Groups, F: o.F,
		BasePort: 20000, Clients: o.Clients, Admins: o.Admins, ClientPolicy: cluster.PolicyListed})
	if err != nil {
		t.Fatal(err)
	}
	// Every replica listens on a loopback port the kernel picks; the
	// listeners are handed to the replicas, so no port is chosen twice.
	peers, clients := map[string]net.Listener{}, map[string]net.Listener{}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for gi := range c.Groups {
		for ri := range c.Groups[gi].Replicas {
			rep := &c.Groups[gi].Replicas[ri]
			peers[rep.Name], clients[rep.Name] = listen(), listen()
			rep.PeerAddr, rep.ClientAddr, rep.MetricsAddr = peers[rep.Name].Addr().String(), clients[rep.Name].Addr().String(), ""
		}
	}
	if err := c.Save(filepath.Join(dir, cluster.FileName)); err != nil {
		t.Fatal(err)
	}
	logs := o.Logs
	if logs == nil {
		logs = io.Discard
	}
	cl := &Cluster{t: t, Dir: dir, Cluster: c, running: map[string]*running{}}
	for _, g := range c.Groups {
		for _, rep := range g.ReplicasByIndex() {
			cl.start(g.ID, rep.Name, peers[rep.Name], clients[rep.Name], logs)
		}
	}
	t.Cleanup(cl.Stop)
	return cl
}

func (cl *Cluster) start(g uint32, name string, peer, client net.Listener, logs io.Writer) {
	t := cl.t
	key, err := cluster.LoadReplicaKey(cl.Dir, name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := partition.ConfigFromCluster(cl.Cluster, bft.GroupID(g))
	if err != nil {
		t.Fatal(err)
	}
	app, err := partition.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replica.New(replica.Config{
		Cluster: cl.Cluster, Name: name, Key: key, DataDir: filepath.Join(cl.Dir, "data", name), App: app,
		PeerListener: peer, ClientListener: client,
		ConfigureCore: func(c *bft.Config) {
			c.CheckpointInterval, c.LogWindow = 16, 64
			c.RequestTimeout, c.ViewChangeTimeout, c.StatusInterval = 100, 100, 10
		},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("replica %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { rr.done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-rr.done:
		t.Fatalf("replica %s did not start: %v", name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not start within 30s", name)
	}
	cl.running[name] = rr
}

// Stop stops every replica (the test's cleanup does it too).
func (cl *Cluster) Stop() {
	for name, rr := range cl.running {
		rr.cancel()
		if err := <-rr.done; err != nil {
			cl.t.Errorf("replica %s: %v", name, err)
		}
		delete(cl.running, name)
	}
}

// ClientKey returns client i's private key (client0, client1, ...).
func (cl *Cluster) ClientKey(i int) ed25519.PrivateKey {
	k, err := cluster.LoadClientKey(cl.Dir, cluster.ClientName(i))
	if err != nil {
		cl.t.Fatal(err)
	}
	return k
}

// AdminKey returns admin i's private key.
func (cl *Cluster) AdminKey(i int) ed25519.PrivateKey {
	k, err := cluster.LoadAdminKey(cl.Dir, cluster.AdminName(i))
	if err != nil {
		cl.t.Fatal(err)
	}
	return k
}

// String names the cluster.
func (cl *Cluster) String() string {
	return fmt.Sprintf("%d groups in %s", len(cl.Cluster.Groups), cl.Dir)
}
