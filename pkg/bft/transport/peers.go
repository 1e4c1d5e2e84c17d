package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// PeersConfig configures the outgoing side of a replica.
type PeersConfig struct {
	// Self is this replica's index; it is never sent to.
	Self uint32
	// Addrs maps every other replica of the group to its address
	// (host:port). An entry for Self is ignored.
	Addrs map[uint32]string
	// TLS is the client-side TLS configuration (with this replica's
	// certificate, for mutual TLS).
	TLS *tls.Config
	// PeerIdentity maps the certificate of a dialed server to a replica
	// index; a server that is not the replica configured at its address fails
	// the handshake.
	PeerIdentity IdentityFunc
	// QueueMessages and QueueBytes bound each peer's send queue (defaults
	// DefaultQueueMessages and DefaultQueueBytes).
	QueueMessages, QueueBytes int
	// MaxMessageBytes bounds one message (default DefaultMaxMessageBytes);
	// larger ones are dropped.
	MaxMessageBytes int
	// Backoff paces reconnection attempts.
	Backoff Backoff
	// DialTimeout bounds how long opening a stream may take before it is
	// abandoned and retried (default 5s).
	DialTimeout time.Duration
	// Interceptor, if set, decides drops and delays of every message (tests).
	Interceptor Interceptor
	// Metrics receives the metrics (default: unregistered).
	Metrics *Metrics
	// Logger receives the logs (default slog.Default()).
	Logger *slog.Logger
}

// Peers is the outgoing side of a replica: one long-lived Peer stream to
// each other replica of the group, each owned by one goroutine that drains a
// bounded queue and reconnects with exponential back-off and jitter.
//
// Send and Broadcast never block. Each peer's queue is bounded in messages
// and bytes; when a message does not fit, the oldest queued messages are
// dropped and counted. Blocking the protocol goroutine on a slow or dead
// peer would let one faulty replica stall the group, while a dropped message
// is one PBFT already tolerates (it retransmits and fetches what is missing).
type Peers struct {
	self    uint32
	links   map[uint32]*link
	order   []uint32 // peers in index order, for Broadcast
	maxMsg  int
	icpt    Interceptor
	metrics *Metrics
	log     *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewPeers starts one goroutine per peer. They run until ctx is done or
// Close is called.
func NewPeers(ctx context.Context, cfg PeersConfig) (*Peers, error) {
	if cfg.TLS == nil || cfg.PeerIdentity == nil {
		return nil, fmt.Errorf("%w: peers need TLS and PeerIdentity", ErrConfig)
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	bo := cfg.Backoff.withDefaults()
	p := &Peers{
		self:    cfg.Self,
		links:   make(map[uint32]*link, len(cfg.Addrs)),
		maxMsg:  cfg.MaxMessageBytes,
		icpt:    cfg.Interceptor,
		metrics: cfg.Metrics,
		log:     cfg.Logger.With("component", "transport-peers", "self", cfg.Self),
	}
	for id, addr := range cfg.Addrs {
		if id == cfg.Self {
			continue
		}
		cc, err := dial(addr, newCreds(cfg.TLS, cfg.PeerIdentity, id, cfg.Metrics), bo, cfg.MaxMessageBytes,
			&codec{metrics: cfg.Metrics, rpc: rpcFetchState})
		if err != nil {
			for _, l := range p.links {
				l.conn.Close()
			}
			return nil, fmt.Errorf("transport: peer %d at %q: %w", id, addr, err)
		}
		label := peerLabel(id)
		p.links[id] = &link{
			to:          id,
			addr:        addr,
			conn:        cc,
			client:      transportpb.NewTransportClient(cc),
			q:           newSendQueue(cfg.QueueMessages, cfg.QueueBytes, cfg.Metrics.queueMsgs.WithLabelValues(label), cfg.Metrics.queueBytes.WithLabelValues(label)),
			backoff:     bo,
			dialTimeout: cfg.DialTimeout,
			metrics:     cfg.Metrics,
			reconnects:  cfg.Metrics.reconnects.WithLabelValues(label),
			log:         p.log.With("peer", id, "addr", addr),
			maxBatch:    min(cfg.MaxMessageBytes, maxPeerBatchBytes),
		}
		p.order = append(p.order, id)
	}
	slices.Sort(p.order)
	ctx, p.cancel = context.WithCancel(ctx)
	for _, id := range p.order {
		l := p.links[id]
		p.wg.Go(func() { l.run(ctx) })
	}
	return p, nil
}

// dial builds a lazily connecting gRPC channel to addr.
func dial(addr string, creds *identityCreds, bo Backoff, maxMsg int, c *codec) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           bo.Config(),
			MinConnectTimeout: 5 * time.Second,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(c), grpc.MaxCallSendMsgSize(maxMsg), grpc.MaxCallRecvMsgSize(maxMsg)),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
	)
}

// HTTP/2 flow-control windows of every transport connection. Setting them
// turns off gRPC's bandwidth-delay estimator, which otherwise sends a PING
// (and gets a PING ack back) with the first DATA frame of every burst: on a
// replica link every round is a burst, so that doubled the writes (and the
// system calls and TLS records) per protocol message. Large static windows
// are what the estimator converges to on a LAN anyway; the bounded send
// queues, not the windows, hold a slow peer back.
const (
	streamWindow = 8 << 20
	connWindow   = 16 << 20
)

// Close stops every peer goroutine, drops what is queued and waits for them.
func (p *Peers) Close() error {
	p.cancel()
	p.wg.Wait()
	return nil
}

// Send queues m for replica to and returns at once; it reports whether m was
// queued (it may still be evicted later by newer messages). m is marshaled
// before Send returns, so the caller may reuse it.
func (p *Peers) Send(to uint32, m *bftpb.Message) bool {
	e, err := EncodeMessage(m)
	if err != nil {
		p.metrics.drop(DropEncode)
		return false
	}
	return p.SendEncoded(to, e)
}

// Broadcast queues m for every other replica, marshaling it once, and returns
// how many queues took it.
func (p *Peers) Broadcast(m *bftpb.Message) int {
	e, err := EncodeMessage(m)
	if err != nil {
		p.metrics.drop(DropEncode)
		return 0
	}
	return p.BroadcastEncoded(e)
}

// BroadcastEncoded is Broadcast of an already encoded message.
func (p *Peers) BroadcastEncoded(e *Encoded) int {
	n := 0
	for _, id := range p.order {
		if p.SendEncoded(id, e) {
			n++
		}
	}
	return n
}

// SendEncoded is Send of an already encoded message; e is shared, not copied.
func (p *Peers) SendEncoded(to uint32, e *Encoded) bool {
	return p.sendEncoded(to, e, true)
}

// Queue queues m for replica to like Send, but the peer's goroutine is
// woken only by Flush: the messages queued between two Flushes leave
// together, as one write on the stream (PeerBatch).
func (p *Peers) Queue(to uint32, m *bftpb.Message) bool {
	e, err := EncodeMessage(m)
	if err != nil {
		p.metrics.drop(DropEncode)
		return false
	}
	return p.sendEncoded(to, e, false)
}

// QueueBroadcast queues m for every other replica like Broadcast, to leave
// at the next Flush; it marshals m once.
func (p *Peers) QueueBroadcast(m *bftpb.Message) int {
	e, err := EncodeMessage(m)
	if err != nil {
		p.metrics.drop(DropEncode)
		return 0
	}
	n := 0
	for _, id := range p.order {
		if p.sendEncoded(id, e, false) {
			n++
		}
	}
	return n
}

// Flush wakes the goroutine of every peer with queued messages: what was
// queued for a peer since the last Flush leaves in one write.
func (p *Peers) Flush() {
	for _, id := range p.order {
		if l := p.links[id]; l.pending.Swap(false) {
			l.q.wake()
		}
	}
}

func (p *Peers) sendEncoded(to uint32, e *Encoded, wake bool) bool {
	l := p.links[to]
	if l == nil {
		p.metrics.drop(DropUnknownPeer)
		return false
	}
	// The message travels in a PeerBatch, behind its tag and length.
	if e.Len()+binaryPrefixMax > p.maxMsg {
		p.metrics.drop(DropTooLarge)
		return false
	}
	q := queued{e: e}
	if p.icpt != nil {
		v := p.icpt.Intercept(to, e.kind)
		switch {
		case v.Drop && v.Partition:
			p.metrics.drop(DropPartition)
			return false
		case v.Drop:
			p.metrics.drop(DropFault)
			return false
		case v.Delay > 0:
			q.due = time.Now().Add(v.Delay)
		}
	}
	evicted, refused := l.q.pushQuiet(q)
	for range evicted {
		p.metrics.drop(DropQueueFull)
	}
	if refused != "" {
		p.metrics.drop(refused)
		return false
	}
	if wake {
		l.q.wake()
	} else {
		l.pending.Store(true)
	}
	return true
}

// Connected reports whether the stream to replica to is open and was
// accepted by the peer.
func (p *Peers) Connected(to uint32) bool {
	l := p.links[to]
	return l != nil && l.up.Load()
}

// QueueLen returns the messages and bytes waiting for replica to.
func (p *Peers) QueueLen(to uint32) (msgs, bytes int) {
	if l := p.links[to]; l != nil {
		return l.q.len()
	}
	return 0, 0
}

// FetchState asks replica from for the state described by req and calls fn
// with each chunk, in order, until the last chunk, an error of fn (returned
// as is) or the end of ctx. It waits for the connection to be ready. The
// stream shares the peer's connection but not its queue.
func (p *Peers) FetchState(ctx context.Context, from uint32, req *transportpb.StateRequest, fn func(*transportpb.StateChunk) error) error {
	l := p.links[from]
	if l == nil {
		return fmt.Errorf("%w: %d", ErrUnknownPeer, from)
	}
	if c, ok := p.icpt.(linkCutter); ok && c.IsCut(from) {
		return ErrLinkCut
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := l.client.FetchState(ctx, req, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	g := p.metrics.stream(rpcFetchState, "client")
	g.Inc()
	defer g.Dec()
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p.metrics.received(KindStateChunk, len(c.GetData()))
		if err := fn(c); err != nil {
			return err
		}
		if c.GetLast() {
			return nil
		}
	}
}

// link is the outgoing stream to one peer and the goroutine that owns it.
type link struct {
	to          uint32
	addr        string
	conn        *grpc.ClientConn
	client      transportpb.TransportClient
	q           *sendQueue
	backoff     Backoff
	dialTimeout time.Duration
	metrics     *Metrics
	reconnects  interface{ Inc() }
	log         *slog.Logger
	up          atomic.Bool // a stream is open and accepted
	// pending: messages were queued since the last Flush.
	pending atomic.Bool
	// maxBatch bounds the bytes of one PeerBatch.
	maxBatch int
}

// run owns the link until ctx is done: it opens the stream, pumps the queue
// into it and, when the stream fails, waits with back-off and opens it again.
func (l *link) run(ctx context.Context) {
	defer func() {
		for range l.q.close() {
			l.metrics.drop(DropClosed)
		}
		l.conn.Close()
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	attempt := 0
	for {
		up, err := l.session(ctx, timer)
		if ctx.Err() != nil {
			return
		}
		if up {
			attempt = 0
			l.log.Warn("peer stream lost; reconnecting", "err", err)
		} else {
			l.log.Debug("cannot open peer stream", "err", err, "attempt", attempt)
		}
		l.reconnects.Inc()
		d := l.backoff.delay(attempt)
		attempt++
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

// session opens one stream and sends until it fails. up reports whether
// the peer accepted the stream (which resets the back-off).
func (l *link) session(ctx context.Context, timer *time.Timer) (up bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := l.open(sctx, cancel)
	if err != nil {
		return false, err
	}
	g := l.metrics.stream(rpcPeer, "client")
	g.Inc()
	l.up.Store(true)
	l.log.Debug("peer stream open")
	defer func() {
		l.up.Store(false)
		g.Dec()
	}()

	// The server answers only when the stream ends: a receive that returns
	// tells us the stream or its connection is gone, even while idle.
	ended := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { ended <- stream.RecvMsg(new(transportpb.PeerStreamEnd)) })
	defer func() {
		cancel()
		wg.Wait()
	}()

	// Everything queued when the goroutine wakes leaves in one PeerBatch
	// (up to maxBatch bytes): one gRPC message, one TLS record and one
	// write per round of the sender rather than per protocol message.
	var b peerBatch
	for {
		b.reset()
		wait := l.q.popReady(time.Now(), l.maxBatch, &b)
		if len(b.items) == 0 {
			if !wait.IsZero() {
				// The oldest message is delayed (fault injection).
				timer.Reset(time.Until(wait))
				select {
				case <-ctx.Done():
					timer.Stop()
					return true, ctx.Err()
				case err := <-ended:
					timer.Stop()
					return true, endError(err)
				case <-timer.C:
				}
				continue
			}
			select {
			case <-ctx.Done():
				return true, ctx.Err()
			case err := <-ended:
				return true, endError(err)
			case <-l.q.notify:
				continue
			}
		}
		if err := stream.SendMsg(&b); err != nil {
			for range b.items {
				l.metrics.drop(DropStreamError)
			}
			if errors.Is(err, io.EOF) {
				// The server ended the stream; its status says why.
				err = endError(<-ended)
			}
			return true, err
		}
		l.metrics.peerWrites.Inc()
		for _, q := range b.items {
			l.metrics.sent(q.e.kind, q.e.Len())
		}
	}
}

// maxPeerBatchBytes bounds one PeerBatch; a larger message goes alone.
const maxPeerBatchBytes = 4 << 20

func endError(err error) error {
	if err == nil {
		return errors.New("transport: peer ended the stream")
	}
	return err
}

// open opens the Peer stream and waits, at most dialTimeout, for the server
// to accept it (its response headers), so that nothing is written into a
// stream the server is about to refuse.
func (l *link) open(ctx context.Context, cancel context.CancelFunc) (transportpb.Transport_PeerClient, error) {
	t := time.AfterFunc(l.dialTimeout, cancel)
	defer t.Stop()
	stream, err := l.client.Peer(ctx)
	if err != nil {
		return nil, err
	}
	md, err := stream.Header()
	if err == nil && len(md.Get(acceptedHeader)) == 0 {
		// The stream failed before the server accepted it; gRPC hands the
		// status to the receive.
		err = endError(stream.RecvMsg(new(transportpb.PeerStreamEnd)))
	}
	if err != nil {
		return nil, err
	}
	return stream, nil
}
