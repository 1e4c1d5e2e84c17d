package client

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/transport"
)

// Errors returned by Invoke.
var (
	ErrClosed = errors.New("client: closed")
	// ErrStale means f+1 replicas say the envelope's timestamp is below the
	// client's low watermark: it will never execute (another process uses
	// this client key, or the clock went backwards).
	ErrStale = errors.New("client: request is stale at the replicas")
	// ErrBadReply means f+1 replicas agreed on a result that does not decode.
	ErrBadReply = errors.New("client: malformed result")
)

// Conn is a connection to one replica.
type Conn interface {
	Send(*bftpb.Request) bool
	Replies() <-chan *bftpb.Reply
	Close() error
}

// Dialer opens a connection to a replica of the group.
type Dialer func(ctx context.Context, r cluster.Replica, pub ed25519.PublicKey) (Conn, error)

// Config configures a Client.
type Config struct {
	Cluster *cluster.Cluster
	Group   bft.GroupID
	// Key is the client's private key; its public key is the client id.
	Key ed25519.PrivateKey
	// Window is W (default: the cluster's client window): the replicas
	// refuse timestamps more than W above the client's low watermark.
	Window int
	// InFlight bounds the envelopes outstanding at once, at most Window
	// (default 4). Calls that arrive while InFlight envelopes are out wait
	// and leave together in the next one: fewer, fuller envelopes cost the
	// replicas fewer signature checks per call (DESIGN.md §3.1), at the price
	// of waiting for a free slot. Below InFlight, a further envelope leaves
	// while others are out only if it is at least as full as the last one
	// sent (or full); see Core.Flush.
	InFlight int
	// Timeout is the first retransmission timeout (default 1s); it doubles
	// on each retransmission up to 16 times.
	Timeout time.Duration
	// MaxEnvelopeCalls and MaxEnvelopeBytes bound one envelope (defaults
	// DefaultMaxEnvelopeCalls and 1 MiB, encoded). Fewer, fuller envelopes
	// cost the replicas less per call: each envelope is verified by every
	// replica and answered by every replica.
	MaxEnvelopeCalls int
	MaxEnvelopeBytes int
	// SignBytes, if set, names the call results that replicas sign
	// (DESIGN.md §3.2): a reply counts toward f+1 matching only if it carries
	// a valid signature of its replica over SignBytes(result) for each of
	// them, and InvokeSigned returns those signatures.
	SignBytes func(result []byte) []byte
	// Dial opens replica connections (default: TransportDialer, with Logger
	// and TransportMetrics).
	Dial    Dialer
	Logger  *slog.Logger
	Metrics *Metrics
	// TransportMetrics receives the connections' metrics (default: none).
	TransportMetrics *transport.Metrics
	// Now is the clock (tests); it also seeds the first timestamp.
	Now func() time.Time
}

// DefaultInFlight is Config.InFlight's default.
const DefaultInFlight = 4

// DefaultMaxEnvelopeCalls is Config.MaxEnvelopeCalls's default. With
// DefaultInFlight envelopes out, it bounds the calls a client has in flight
// at once: at 256, 4,096 callers left three quarters of them waiting in the
// client's queue (measured: 57K calls/s, p50 71 ms; at 1,024, 95K calls/s,
// p50 41 ms, docs/benchmarks/bft.md).
const DefaultMaxEnvelopeCalls = 1024

// Client submits calls to one group: a goroutine drives a Core with the
// wall clock and the replicas' connections. It is safe for concurrent use.
type Client struct {
	cfg   Config
	id    bft.ClientID
	conns []Conn
	core  *Core

	calls   chan *call
	replies chan *bftpb.Reply
	// connCtx bounds the replica connections; Close cancels it.
	connCtx    context.Context
	cancelConn context.CancelFunc
	stop       chan struct{}
	done       chan struct{}
	wg         sync.WaitGroup
	closeMu    sync.Once
	// view is the highest view f+1 matching replies showed (C3); the loop
	// writes it, View reads it.
	view atomic.Uint64
	// ticks counts the loop's retransmission ticks (tests).
	ticks atomic.Uint64
}

// New dials every replica of the group and starts the client. ctx bounds
// only the start; the connections live until Close.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cfg.Cluster == nil || len(cfg.Key) != ed25519.PrivateKeySize {
		return nil, errors.New("client: a cluster and a client key are required")
	}
	g, err := cfg.Cluster.Group(cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	keys, err := cfg.Cluster.GroupKeys(cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if cfg.Window <= 0 {
		cfg.Window = cfg.Cluster.ClientWindow
	}
	if cfg.Window <= 0 {
		cfg.Window = 16
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	if cfg.InFlight > cfg.Window {
		cfg.InFlight = cfg.Window
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.MaxEnvelopeCalls <= 0 {
		cfg.MaxEnvelopeCalls = DefaultMaxEnvelopeCalls
	}
	if cfg.MaxEnvelopeBytes <= 0 {
		cfg.MaxEnvelopeBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Dial == nil {
		cfg.Dial = TransportDialer(cfg.Key, cfg.TransportMetrics, cfg.Logger)
	}
	signer, err := auth.NewSigner(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c := &Client{
		cfg:     cfg,
		id:      bft.ClientID(cfg.Key.Public().(ed25519.PublicKey)),
		calls:   make(chan *call, 4096),
		replies: make(chan *bftpb.Reply, 4096),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	dom := bft.NewDomain(cfg.Cluster.ClusterID, cfg.Group)
	macKeys := make([]auth.MACKey, len(keys))
	for i, pub := range keys {
		if macKeys[i], err = auth.DeriveMACKey(cfg.Key, pub); err != nil {
			return nil, fmt.Errorf("client: MAC key for replica %d: %w", i, err)
		}
	}
	verifySig, err := replicaSignatureVerifier(keys)
	if err != nil {
		return nil, err
	}
	core := CoreConfig{
		ID: c.id, F: cfg.Cluster.F, N: len(keys), Domain: dom, Sign: signer.Sign,
		VerifyReply: func(rep *bftpb.Reply) bool {
			mac := rep.Mac
			rep.Mac = nil
			ok := auth.VerifyMAC(macKeys[rep.Replica], dom.ReplyBytes(rep), mac) == nil
			rep.Mac = mac
			return ok
		},
		SignBytes:       cfg.SignBytes,
		VerifySignature: verifySig,
		Window:          cfg.Window, InFlight: cfg.InFlight, Timeout: cfg.Timeout,
		MaxEnvelopeCalls: cfg.MaxEnvelopeCalls, MaxEnvelopeBytes: cfg.MaxEnvelopeBytes, Metrics: cfg.Metrics,
	}
	c.connCtx, c.cancelConn = context.WithCancel(context.Background())
	for _, rep := range g.ReplicasByIndex() {
		conn, err := cfg.Dial(c.connCtx, rep, keys[rep.Index])
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("client: dial %s: %w", rep.Name, err)
		}
		c.conns = append(c.conns, conn)
	}
	for _, conn := range c.conns {
		conn := conn
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				select {
				case rep, ok := <-conn.Replies():
					if !ok {
						return
					}
					select {
					case c.replies <- rep:
					case <-c.stop:
						return
					}
				case <-c.stop:
					return
				}
			}
		}()
	}
	c.core = NewCore(core, c.conns, cfg.Now())
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.done)
		c.run()
	}()
	return c, nil
}

// run owns the core: it feeds it calls, replies and ticks.
//
// The ticker runs only while envelopes are outstanding: a tick only
// retransmits overdue envelopes (C4), and an idle client that woke 20
// times a second for nothing cost a process that holds many clients
// (a gateway with a client per group, the bench's Byzantine callers with one
// per key and group) CPU taken from the replicas on the same machine:
// 192 idle clients, 3840 wake-ups a second.
func (c *Client) run() {
	resolution := c.cfg.Timeout / 4
	if resolution > 50*time.Millisecond {
		resolution = 50 * time.Millisecond
	}
	tick := time.NewTicker(resolution)
	tick.Stop()
	ticking := false
	defer tick.Stop()
	for {
		select {
		case cl := <-c.calls:
			c.core.queue = append(c.core.queue, cl)
			// Take every call already waiting, so they share an envelope (C1).
			for drained := false; !drained; {
				select {
				case cl := <-c.calls:
					c.core.queue = append(c.core.queue, cl)
				default:
					drained = true
				}
			}
		case rep := <-c.replies:
			c.core.Deliver(rep, c.cfg.Now())
			c.view.Store(uint64(c.core.View()))
		case <-tick.C:
			c.ticks.Add(1)
			c.core.Tick(c.cfg.Now())
		case <-c.stop:
			c.core.FailAll(ErrClosed)
			return
		}
		c.core.Flush(c.cfg.Now())
		// Since Go 1.23 a stopped or reset ticker delivers no stale tick.
		if busy := c.core.Outstanding() > 0; busy && !ticking {
			tick.Reset(resolution)
			ticking = true
		} else if !busy && ticking {
			tick.Stop()
			ticking = false
		}
	}
}

// View returns the view the client believes current: the lowest view among
// the f+1 matching replies of the last accepted result that raised it (C3).
func (c *Client) View() bft.View { return bft.View(c.view.Load()) }

// ID returns the client id (its public key).
func (c *Client) ID() bft.ClientID { return c.id }

// Invoke submits one call and waits for its result, accepted from f+1
// matching replies. If ctx ends first Invoke returns ctx.Err(); the call
// may still execute.
func (c *Client) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	v, _, err := c.InvokeSigned(ctx, payload)
	return v, err
}

// InvokeSigned is Invoke for calls whose results replicas sign
// (Config.SignBytes): with the result it returns the signatures of the
// replicas whose f+1 (or more) matching replies made it accepted.
func (c *Client) InvokeSigned(ctx context.Context, payload []byte) ([]byte, []Signed, error) {
	ch := make(chan Result, 1)
	cl := &call{payload: payload, queued: c.cfg.Now(), done: func(r Result) { ch <- r }}
	select {
	case c.calls <- cl:
	case <-c.done:
		return nil, nil, ErrClosed
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	select {
	case res := <-ch:
		return res.Value, res.Sigs, res.Err
	case <-c.done:
		return nil, nil, ErrClosed
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// Close stops the client; pending calls fail with ErrClosed.
func (c *Client) Close() error {
	c.closeMu.Do(func() {
		close(c.stop)
		c.wg.Wait()
		c.closeConns()
	})
	return nil
}

func (c *Client) closeConns() {
	c.cancelConn()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// replicaSignatureVerifier checks a replica's signature of a result under
// the group's keys by the ZIP-215 rules, as the replicas verify every
// signature (pkg/bft/auth, verifykey.go). It is an auth.Verifier, whose
// cache checks a signature tree's root once for the many results of one
// replica's round (sigtree.go) that reach this client. The cluster file's
// keys always pass its checks (cluster.GroupKeys parses them with
// auth.ParsePublicKey and refuses duplicates).
func replicaSignatureVerifier(keys []ed25519.PublicKey) (func(bft.ReplicaID, []byte, []byte) bool, error) {
	v, err := auth.NewVerifier(auth.VerifierConfig{Replicas: keys, Policy: auth.ClientsListed})
	if err != nil {
		return nil, fmt.Errorf("client: replica keys: %w", err)
	}
	return func(r bft.ReplicaID, msg, sig []byte) bool {
		return v.VerifyReplica(r, msg, sig) == nil
	}, nil
}
