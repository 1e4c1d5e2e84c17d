package txntest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

// Cluster is a simulated multi-group Augustus cluster: a bfttest.World with
// one PBFT group per partition, each replica running the production event
// loop (pkg/bft/host) with the production transaction engine
// (pkg/txn/partition) on pebble, and the partition map every replica and
// client routes with. Clients reach it through Conns, one production group
// client (client.Core) per group, sharing one client key across groups as a
// real client process does.
type Cluster struct {
	W       *bfttest.World
	Groups  []*bfttest.Group
	Keys    *txn.Keys
	Map     *oracle.Map
	Clients *bfttest.ClientKeys
	// Admin signs metadata transactions (M5).
	Admin ed25519.PrivateKey
	// Limits are the engines' limits.
	Limits txn.Limits
}

// ClusterConfig describes a cluster.
type ClusterConfig struct {
	Seed    uint64
	Groups  int
	F       int
	Net     bfttest.NetConfig
	HealAt  int64
	ExecLag int64
	// Faulty[g] maps replica slots of group g to Byzantine behaviours.
	Faulty map[int]map[int]bfttest.Behavior
	Limits txn.Limits
	Trace  interface{ Write([]byte) (int, error) }
	Cov    *bfttest.Coverage
}

// ClusterID is the simulated cluster's id (the PBFT layer's SimConfig uses
// it too).
const ClusterID = "sim"

// GroupKey returns a key that the range map of a cluster of n groups puts
// in group g: the first byte selects the range.
func GroupKey(g, n int, name string) []byte {
	return append([]byte{byte(g * (256 / n))}, name...)
}

// NewCluster builds the cluster's groups (not started).
func NewCluster(cc ClusterConfig) (*Cluster, error) {
	w := bfttest.NewWorld(cc.Seed, cc.Net, cc.HealAt, cc.Trace)
	w.SetExecLag(cc.ExecLag)
	c := &Cluster{W: w, Clients: bfttest.NewClientKeys(false), Limits: cc.Limits}
	if c.Limits == (txn.Limits{}) {
		c.Limits = txn.DefaultLimits()
	}
	seed := sha256.Sum256([]byte(fmt.Sprintf("augustus-sim-admin-%d", cc.Seed)))
	c.Admin = ed25519.NewKeyFromSeed(seed[:])
	var ranges []oracle.Range
	for g := 0; g < cc.Groups; g++ {
		start := []byte{}
		if g > 0 {
			start = []byte{byte(g * (256 / cc.Groups))}
		}
		ranges = append(ranges, oracle.Range{Start: start, Groups: []bft.GroupID{bft.GroupID(g)}})
	}
	m, err := oracle.New(ranges)
	if err != nil {
		return nil, err
	}
	c.Map = m
	// The groups' keys exist before their engines: every engine checks
	// certificates of every group (E10).
	verifiers := make(map[bft.GroupID]txn.ReplicaVerifier, cc.Groups)
	var groupKeys []*bfttest.Keys
	for g := 0; g < cc.Groups; g++ {
		k := bfttest.NewGroupKeys(g, 3*cc.F+1, false, c.Clients)
		groupKeys = append(groupKeys, k)
		verifiers[bft.GroupID(g)] = simVerifier{k: k, n: 3*cc.F + 1}
	}
	keys, err := txn.NewKeysWithVerifiers(ClusterID, verifiers, []ed25519.PublicKey{c.Admin.Public().(ed25519.PublicKey)})
	if err != nil {
		return nil, err
	}
	c.Keys = keys
	for g := 0; g < cc.Groups; g++ {
		gid := bft.GroupID(g)
		newApp := func() host.Application {
			e, err := partition.New(partition.Config{Group: gid, Keys: keys, InitialMap: m, Limits: c.Limits})
			if err != nil {
				panic(err)
			}
			return e
		}
		grp := w.AddGroup(bfttest.GroupConfig{F: cc.F, Keys: groupKeys[g], Clients: c.Clients, NewApp: newApp,
			Faulty: cc.Faulty[g], Twins: -1, Cov: cc.Cov, RepeatedCalls: true,
			// Checkpoints every 8 batches, not the PBFT simulator's 4: a
			// saved checkpoint copies the WAL, and this simulator's seeds
			// run more replicas; state transfer is the PBFT simulator's
			// subject and still happens here.
			Configure: func(c *bft.Config) { c.CheckpointInterval, c.LogWindow = 8, 16 }})
		c.Groups = append(c.Groups, grp)
	}
	return c, nil
}

// simVerifier checks the simulator's stand-in replica signatures for
// txn.Keys.
type simVerifier struct {
	k *bfttest.Keys
	n int
}

func (v simVerifier) N() int { return v.n }
func (v simVerifier) VerifyReplica(id bft.ReplicaID, msg, sig []byte) error {
	return v.k.VerifyReplica(id, msg, sig)
}

// Start starts every replica and its ticker.
func (c *Cluster) Start(tickEvery int64) {
	for _, g := range c.Groups {
		g.Start()
		for _, r := range g.Instances() {
			r := r
			var tick func()
			tick = func() {
				r.Tick()
				c.W.After(tickEvery, tick)
			}
			c.W.After(tickEvery+int64(r.ID()), tick)
		}
	}
}

// Conns are one client process's connections to every group: one
// production group client per group, all under one client key.
type Conns struct {
	c      *Cluster
	groups []*bfttest.GroupClient
}

// Connect makes client idx's connections.
func (c *Cluster) Connect(idx, inFlight int, timeout int64) *Conns {
	cs := &Conns{c: c}
	for _, g := range c.Groups {
		cs.groups = append(cs.groups, bfttest.NewGroupClient(g, bfttest.GroupClientConfig{
			Index: idx, InFlight: inFlight, Timeout: timeout, SignBytes: c.Keys.Domain().SignBytes,
		}))
	}
	return cs
}

// ID returns the client's id (its owner id in transactions).
func (cs *Conns) ID() bft.ClientID { return cs.groups[0].ID() }

// Signer signs as the client (a Byzantine client forging envelopes needs it).
func (cs *Conns) Group(g bft.GroupID) *bfttest.GroupClient { return cs.groups[g] }

// Invoke sends one call to group g.
func (cs *Conns) Invoke(g bft.GroupID, payload []byte, done func(client.Result)) {
	if debugCalls {
		call, _ := txn.DecodeCall(payload)
		id := txn.TxnID{}
		if call != nil && call.Txn != nil {
			id = txn.ID(ClusterID, call.Txn)
		}
		cs.c.W.Tracef("client %x -> g%d: %s %v", cs.ID()[:2], g, call.Kind, id)
		inner := done
		done = func(r client.Result) {
			res, _ := txn.DecodeResult(r.Value)
			var verr error
			if res != nil && len(r.Sigs) > 0 {
				gs := groupSigs(g, r.Sigs)
				verr = cs.c.Keys.VerifyVotes(res.ID, res.Decision, &gs)
			}
			cs.c.W.Tracef("client %x <- g%d: %v err=%v sigs=%d verify=%v", cs.ID()[:2], g, res, r.Err, len(r.Sigs), verr)
			inner(r)
		}
	}
	cs.groups[g].Invoke(payload, done)
}

var debugCalls = os.Getenv("TXNSIM_CALLS") != ""

// Tick runs the group clients' retransmission timers.
func (cs *Conns) Tick() {
	for _, gc := range cs.groups {
		gc.Tick()
	}
}

// AfterFunc runs f after d of simulated time; cancel stops it.
func (cs *Conns) AfterFunc(d time.Duration, f func()) (cancel func()) {
	stopped := false
	cs.c.W.After(d.Microseconds(), func() {
		if !stopped {
			f()
		}
	})
	return func() { stopped = true }
}

// Now is the simulated clock.
func (cs *Conns) Now() time.Time { return bfttest.SimTime(cs.c.W.Now()) }
