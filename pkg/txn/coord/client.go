package coord

import (
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Cluster is the cluster file; Key the client's private key (its
	// public key is the owner id of every transaction, T3). A gateway or
	// driver process is one client: one key, one nonce sequence (W3).
	Cluster *cluster.Cluster
	Key     ed25519.PrivateKey
	// Admin, if set, signs metadata transactions (M5).
	Admin ed25519.PrivateKey
	// Map is the partition map to start from (default: cluster.json's);
	// MapVersion its metadata version.
	Map        *oracle.Map
	MapVersion uint64
	// Limits must be the replicas' (default txn.DefaultLimits()).
	Limits txn.Limits
	// Tuning are the retry, back-off and recovery parameters.
	Tuning Tuning
	// Seed seeds the back-off jitter; 0 draws one.
	Seed uint64
	// GroupTimeout is the group clients' first retransmission timeout
	// (default 1s); InFlight their envelopes outstanding (default 4).
	GroupTimeout time.Duration
	InFlight     int
	// Registerer receives the metrics (augustus_txn_client_* and the group
	// clients' augustus_client_*); nil registers nothing.
	Registerer prometheus.Registerer
	// Logger receives anomalies; nil discards.
	Logger *slog.Logger
	// Observer, if set, is told what the client does with each transaction
	// (Config.Observer); it is called on the client's goroutine and must
	// not block.
	Observer Observer
	// Dial opens replica connections (default: TLS, pkg/bft/transport).
	Dial client.Dialer
	// DrainTimeout bounds how long Close waits for transactions still
	// terminating (default 5s).
	DrainTimeout time.Duration
}

// Client is the production client library: one goroutine owns a Core and
// feeds it events; one pkg/bft/client.Client per group, shared by every
// caller, packs the calls of concurrent transactions into shared signed
// envelopes (DESIGN.md §3.1). Safe for concurrent use.
type Client struct {
	cfg     ClientConfig
	id      bft.ClientID
	core    *Core
	groups  map[bft.GroupID]*client.Client
	metrics *Metrics

	events   chan func()
	stop     chan struct{}
	loopDone chan struct{}
	ctx      context.Context // bounds the group calls; Close cancels it
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	once     sync.Once
	closing  chan struct{} // closed by the loop when Close asks and the core is idle
	draining bool          // loop only
}

// NewClient connects to every group, starts the client and runs the
// start-up query (W3) within ctx: when it returns, the client knows its
// watermark and next nonce and is finishing what a previous incarnation
// left unfinished.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	if cfg.Cluster == nil || len(cfg.Key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: a cluster and a client key are required", ErrConfig)
	}
	keys, err := txn.KeysFromCluster(cfg.Cluster)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Map == nil {
		if cfg.Map, err = oracle.FromCluster(cfg.Cluster); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	if cfg.Seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		cfg.Seed = binary.LittleEndian.Uint64(b[:])
	}
	c := &Client{
		cfg: cfg, id: bft.ClientID(cfg.Key.Public().(ed25519.PublicKey)),
		groups: make(map[bft.GroupID]*client.Client), metrics: NewMetrics(cfg.Registerer),
		events: make(chan func(), 4096), stop: make(chan struct{}), loopDone: make(chan struct{}),
		closing: make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	gm := client.NewMetrics(cfg.Registerer)
	dom := keys.Domain()
	for _, g := range keys.Groups() {
		gc, err := client.New(ctx, client.Config{
			Cluster: cfg.Cluster, Group: g, Key: cfg.Key, Timeout: cfg.GroupTimeout, InFlight: cfg.InFlight,
			// K2: a signed result counts only with f+1 valid replica
			// signatures over these bytes, which the client returns.
			SignBytes: dom.SignBytes,
			Dial:      cfg.Dial, Logger: cfg.Logger, Metrics: gm,
		})
		if err != nil {
			c.closeGroups()
			c.cancel()
			return nil, fmt.Errorf("coord: connect to group %d: %w", g, err)
		}
		c.groups[g] = gc
	}
	c.core, err = NewCore(Config{
		Owner: c.id, Keys: keys, Map: cfg.Map, MapVersion: cfg.MapVersion, Limits: cfg.Limits,
		Admin: cfg.Admin, Seed: cfg.Seed, Tuning: cfg.Tuning, Metrics: c.metrics, Logger: cfg.Logger,
		Observer: cfg.Observer,
	}, (*clientEnv)(c))
	if err != nil {
		c.closeGroups()
		c.cancel()
		return nil, err
	}
	go c.loop()
	started := make(chan error, 1)
	c.post(func() { c.core.Startup(func(err error) { started <- err }) })
	select {
	case err = <-started:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.shutdown()
		return nil, err
	}
	return c, nil
}

// ID returns the client's id (its public key, the owner of its
// transactions).
func (c *Client) ID() bft.ClientID { return c.id }

// HasAdmin reports whether the client has an admin key to sign metadata
// transactions with (M5): front-ends refuse schema changes without one.
func (c *Client) HasAdmin() bool { return c.cfg.Admin != nil }

// Metrics returns the client's metrics.
func (c *Client) Metrics() *Metrics { return c.metrics }

// GroupView returns the view of the last replies of group g that this
// client accepted (f+1 matching ones; 0 before any, or for a group not in
// the cluster). Tools use it to explain a slow transaction: a higher view
// after it than before means the group changed its primary meanwhile.
func (c *Client) GroupView(g bft.GroupID) bft.View {
	if gc := c.groups[g]; gc != nil {
		return gc.View()
	}
	return 0
}

// OpSource is anything that yields a transaction's operations: a
// *txn.Builder, or Ops.
type OpSource interface{ Ops() []txn.Op }

// Ops is a list of operations as an OpSource.
type Ops []txn.Op

// Ops returns the operations.
func (o Ops) Ops() []txn.Op { return o }

// Do runs a transaction and returns its result: err is nil when it
// committed; an *AbortedError (with res set) when it aborted for good after
// the retries K1 and K5 allow — errors.Is(err, txn.ErrConflict),
// txn.ErrCompareFailed, txn.ErrKeyExists, txn.ErrKeyNotFound,
// txn.ErrStaleMetadata tell why; a wrapped *client.RejectedError when the
// groups rejected it (errors.Is(err, client.ErrRejected)); ctx.Err() when ctx
// ended first. In that last case the transaction may still commit: the
// client goes on terminating whatever it sent (no locks stay behind), but
// starts no retry.
func (c *Client) Do(ctx context.Context, ops OpSource, opts Options) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list := cloneOps(ops.Ops())
	type outcome struct {
		res *Result
		err error
	}
	ch := make(chan outcome, 1)
	var h Handle
	if !c.post(func() {
		h = c.core.start(list, opts, func(res *Result, err error) { ch <- outcome{res, err} })
	}) {
		return nil, ErrClosed
	}
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		c.post(func() { c.core.Cancel(h) })
		return nil, ctx.Err()
	case <-c.loopDone:
		return nil, ErrClosed
	}
}

// Stats returns a snapshot of the core's state.
func (c *Client) Stats() Stats {
	ch := make(chan Stats, 1)
	if !c.post(func() { ch <- c.core.Stats() }) {
		return Stats{}
	}
	select {
	case s := <-ch:
		return s
	case <-c.loopDone:
		return Stats{}
	}
}

// Close waits up to DrainTimeout for the transactions still terminating
// (so none stays pending because this process went away), then stops the
// client and its group clients. Callers still in Do get ErrClosed.
func (c *Client) Close() error {
	c.once.Do(func() {
		if c.post(func() { c.draining = true; c.checkDrained() }) {
			t := time.NewTimer(c.cfg.DrainTimeout)
			select {
			case <-c.closing:
			case <-t.C:
			}
			t.Stop()
		}
		c.shutdown()
	})
	return nil
}

func (c *Client) shutdown() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.loopDone
	c.cancel()
	c.wg.Wait()
	c.closeGroups()
}

func (c *Client) closeGroups() {
	for _, gc := range c.groups {
		_ = gc.Close()
	}
}

// loop owns the core.
func (c *Client) loop() {
	defer close(c.loopDone)
	for {
		select {
		case f := <-c.events:
			f()
			if c.draining {
				c.checkDrained()
			}
		case <-c.stop:
			return
		}
	}
}

func (c *Client) checkDrained() {
	if c.core.Idle() {
		select {
		case <-c.closing:
		default:
			close(c.closing)
		}
	}
}

// post hands f to the loop; false if the client stopped.
func (c *Client) post(f func()) bool {
	select {
	case <-c.stop:
		return false
	default:
	}
	select {
	case c.events <- f:
		return true
	case <-c.stop:
		return false
	}
}

// clientEnv is the Client as the core's Env.
type clientEnv Client

// Invoke implements Env: the call goes to the group's client (which packs
// it into an envelope with the other calls waiting, and accepts a result on
// f+1 matching replies with valid signatures, K2); the result comes back to
// the loop.
func (e *clientEnv) Invoke(g bft.GroupID, payload []byte, done func(client.Result)) {
	c := (*Client)(e)
	gc := c.groups[g]
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var res client.Result
		if gc == nil {
			res.Err = fmt.Errorf("%w: no group %d", ErrConfig, g)
		} else {
			res.Value, res.Sigs, res.Err = gc.InvokeSigned(c.ctx, payload)
			if errors.Is(res.Err, context.Canceled) && c.ctx.Err() != nil {
				res.Err = ErrClosed
			}
		}
		c.post(func() { done(res) })
	}()
}

// AfterFunc implements Env with a wall-clock timer whose firing runs on the
// loop.
func (e *clientEnv) AfterFunc(d time.Duration, f func()) func() {
	c := (*Client)(e)
	canceled := false // read and written on the loop only
	t := time.AfterFunc(d, func() {
		c.post(func() {
			if !canceled {
				f()
			}
		})
	})
	return func() {
		canceled = true
		t.Stop()
	}
}

// Now implements Env.
func (e *clientEnv) Now() time.Time { return time.Now() }
