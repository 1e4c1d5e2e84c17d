package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// ClientOption configures DialClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	queueMsgs, queueBytes int
	replyBuffer           int
	maxMsg                int
	backoff               Backoff
	dialTimeout           time.Duration
	metrics               *Metrics
	logger                *slog.Logger
	key                   ed25519.PrivateKey
}

// WithClientQueue bounds the requests waiting to be sent (defaults
// DefaultQueueMessages and DefaultQueueBytes); when full, the oldest are
// dropped.
func WithClientQueue(msgs, bytes int) ClientOption {
	return func(o *clientOptions) { o.queueMsgs, o.queueBytes = msgs, bytes }
}

// WithReplyBuffer sets the capacity of the Replies channel (default 1024).
// While it is full the client stops reading its stream, and the replica
// drops replies for it.
func WithReplyBuffer(n int) ClientOption { return func(o *clientOptions) { o.replyBuffer = n } }

// WithClientMaxMessageBytes bounds one message (default DefaultMaxMessageBytes).
func WithClientMaxMessageBytes(n int) ClientOption { return func(o *clientOptions) { o.maxMsg = n } }

// WithClientBackoff paces reconnection attempts.
func WithClientBackoff(b Backoff) ClientOption { return func(o *clientOptions) { o.backoff = b } }

// WithClientDialTimeout bounds how long opening a stream may take (default 5s).
func WithClientDialTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.dialTimeout = d }
}

// WithClientMetrics sets the metrics (default: unregistered).
func WithClientMetrics(m *Metrics) ClientOption { return func(o *clientOptions) { o.metrics = m } }

// WithClientLogger sets the logger (default slog.Default()).
func WithClientLogger(l *slog.Logger) ClientOption { return func(o *clientOptions) { o.logger = l } }

// WithClientKey binds every stream the client opens to the client id of
// key (its Ed25519 public key) at once, by proving possession of the key
// (see bind.go), so the replica can push replies to the stream before the
// client sends that replica a request of its own — after every reconnect,
// too. A group client sends its requests to the primary only but hears
// replies from every replica. Without it, streams are bound to no client
// and receive no replies routed by client id.
func WithClientKey(key ed25519.PrivateKey) ClientOption {
	return func(o *clientOptions) { o.key = key }
}

// Client is a client's stream to one replica (for clients that are not
// replicas: the group client opens one per replica). It reconnects on
// failure; requests queued while disconnected are sent after reconnecting,
// within the queue's bounds.
type Client struct {
	addr    string
	conn    *grpc.ClientConn
	client  transportpb.TransportClient
	q       *sendQueue
	replies chan *bftpb.Reply
	maxMsg  int
	backoff Backoff
	dialTO  time.Duration
	metrics *Metrics
	log     *slog.Logger
	up      atomic.Bool
	key     ed25519.PrivateKey // proves the client id on every stream (WithClientKey)

	cancel context.CancelFunc
	done   chan struct{}
}

// DialClient starts a client stream to the replica at addr and returns at
// once; the connection is made, and remade after failures, in the
// background until ctx is done or Close is called. tlsConfig must verify the
// replica (pkg/bft/auth pins its public key).
func DialClient(ctx context.Context, addr string, tlsConfig *tls.Config, opts ...ClientOption) (*Client, error) {
	if tlsConfig == nil {
		return nil, fmt.Errorf("%w: client needs TLS", ErrConfig)
	}
	o := clientOptions{replyBuffer: 1024, maxMsg: DefaultMaxMessageBytes, dialTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.metrics == nil {
		o.metrics = NewMetrics(nil)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	bo := o.backoff.withDefaults()
	cc, err := dial(addr, newCreds(tlsConfig, nil, 0, o.metrics), bo, o.maxMsg, &codec{metrics: o.metrics, rpc: rpcClient})
	if err != nil {
		return nil, fmt.Errorf("transport: replica at %q: %w", addr, err)
	}
	c := &Client{
		addr:    addr,
		conn:    cc,
		client:  transportpb.NewTransportClient(cc),
		q:       newSendQueue(o.queueMsgs, o.queueBytes, nil, nil),
		replies: make(chan *bftpb.Reply, max(o.replyBuffer, 1)),
		maxMsg:  o.maxMsg,
		backoff: bo,
		dialTO:  o.dialTimeout,
		metrics: o.metrics,
		log:     o.logger.With("component", "transport-client", "addr", addr),
		done:    make(chan struct{}),
	}
	if o.key != nil {
		if len(o.key) != ed25519.PrivateKeySize {
			_ = cc.Close()
			return nil, fmt.Errorf("%w: client key has %d bytes", ErrConfig, len(o.key))
		}
		c.key = o.key
	}
	ctx, c.cancel = context.WithCancel(ctx)
	go c.run(ctx)
	return c, nil
}

// Send queues r and returns at once; it reports whether r was queued (false
// if the client is closed or r is too large). When the queue is full the
// oldest queued request is dropped.
//
// An unsigned bind request (BindRequest) is not sent: on its own it binds
// nothing, and a client made with WithClientKey binds each stream with a
// proof.
func (c *Client) Send(r *bftpb.Request) bool {
	if IsBind(r) && len(r.GetSignature()) == 0 {
		select {
		case <-c.done:
			return false
		default:
			return true
		}
	}
	e, err := encodeRequest(r)
	if err != nil {
		c.metrics.drop(DropEncode)
		return false
	}
	if e.Len() > c.maxMsg {
		c.metrics.drop(DropTooLarge)
		return false
	}
	evicted, refused := c.q.push(queued{e: e})
	for range evicted {
		c.metrics.drop(DropQueueFull)
	}
	if refused != "" {
		c.metrics.drop(refused)
		return false
	}
	return true
}

// Replies delivers the replies the replica pushes on this stream. It is
// closed after Close, or after ctx is done.
func (c *Client) Replies() <-chan *bftpb.Reply { return c.replies }

// Connected reports whether a stream is open and accepted right now.
func (c *Client) Connected() bool { return c.up.Load() }

// Close stops the client and waits for its goroutines.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	defer close(c.replies)
	defer c.conn.Close()
	defer func() {
		for range c.q.close() {
			c.metrics.drop(DropClosed)
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	attempt := 0
	for {
		up, err := c.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if up {
			attempt = 0
			c.log.Warn("client stream lost; reconnecting", "err", err)
		} else {
			c.log.Debug("cannot open client stream", "err", err, "attempt", attempt)
		}
		c.metrics.reconnects.WithLabelValues("client").Inc()
		d := c.backoff.delay(attempt)
		attempt++
		timer.Reset(d)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
	}
}

func (c *Client) session(ctx context.Context) (up bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, nonce, err := c.open(sctx, cancel)
	if err != nil {
		return false, err
	}
	if c.key != nil {
		if err := c.bind(stream, nonce); err != nil {
			return false, err
		}
	}
	c.up.Store(true)
	defer c.up.Store(false)
	g := c.metrics.stream(rpcClient, "client")
	g.Inc()
	defer g.Dec()

	ended := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { ended <- c.recvLoop(sctx, stream) })
	defer func() {
		cancel()
		wg.Wait()
	}()
	for {
		q, ok := c.q.pop()
		if !ok {
			select {
			case <-ctx.Done():
				return true, ctx.Err()
			case err := <-ended:
				return true, err
			case <-c.q.notify:
				continue
			}
		}
		if err := stream.SendMsg(q.e); err != nil {
			c.metrics.drop(DropStreamError)
			if errors.Is(err, io.EOF) {
				err = <-ended
			}
			return true, err
		}
		c.metrics.sent(q.e.kind, q.e.Len())
	}
}

func (c *Client) recvLoop(ctx context.Context, stream transportpb.Transport_ClientClient) error {
	for {
		var f frame
		if err := stream.RecvMsg(&f); err != nil {
			return endError(err)
		}
		n := len(f.bytes())
		r, err := decodeReply(f.bytes())
		f.release()
		if err != nil {
			c.metrics.decodeError(rpcClient)
			c.log.Warn("malformed reply; closing stream", "bytes", n, "err", err)
			return err
		}
		c.metrics.received(KindReply, n)
		select {
		case c.replies <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// open opens a stream and waits until the server accepts it; it returns the
// server's bind challenge.
func (c *Client) open(ctx context.Context, cancel context.CancelFunc) (transportpb.Transport_ClientClient, []byte, error) {
	t := time.AfterFunc(c.dialTO, cancel)
	defer t.Stop()
	stream, err := c.client.Client(ctx)
	if err != nil {
		return nil, nil, err
	}
	md, err := stream.Header()
	if err == nil && len(md.Get(acceptedHeader)) == 0 {
		err = endError(stream.RecvMsg(new(bftpb.Reply)))
	}
	if err != nil {
		return nil, nil, err
	}
	var nonce []byte
	if v := md.Get(BindNonceHeader); len(v) == 1 {
		nonce = []byte(v[0])
	}
	return stream, nonce, nil
}

// bind proves the client's key on a new stream (bind.go).
func (c *Client) bind(stream transportpb.Transport_ClientClient, nonce []byte) error {
	if len(nonce) != bindNonceSize {
		return fmt.Errorf("%w: the replica sent no challenge (%d bytes)", ErrBind, len(nonce))
	}
	exporter, err := ExporterOf(stream.Context())
	if err != nil {
		return err
	}
	e, err := encodeRequest(SignedBindRequest(c.key, nonce, exporter))
	if err != nil {
		return err
	}
	e.kind = KindBind
	if err := stream.SendMsg(e); err != nil {
		return err
	}
	c.metrics.sent(KindBind, e.Len())
	return nil
}
