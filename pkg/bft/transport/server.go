package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// DefaultMaxMessageBytes is the default largest gRPC message, sent or
// received: a PRE-PREPARE carries a whole batch, several MB under load.
const DefaultMaxMessageBytes = 64 << 20

// Handler receives what arrives at a Server. Its methods are called
// concurrently from one goroutine per stream, and in order for each stream.
//
// Blocking in OnMessage or OnRequest is how the owner applies back-pressure:
// while a call has not returned, that stream is not read, so its sender fills
// the HTTP/2 flow-control window and then its own bounded queue, where it
// drops. Other streams keep flowing. A blocking call must return when ctx is
// done (the stream ended or the server is closing): Close waits for it.
type Handler interface {
	// OnMessage delivers a message from replica from, the index the TLS
	// certificate of the stream authenticates; m.From has been overwritten
	// with it. m belongs to the handler.
	OnMessage(ctx context.Context, from uint32, m *bftpb.Message)
	// OnRequest delivers a client request and the stream it came on. The
	// request is not verified: its client id is what the client claims. If
	// the stream is bound (its holder proved a client key, bind.go), the
	// request carries that id; replies are routed by proven client id with
	// Server.SendReply, or pushed with conn.Send to a stream bound to their
	// client.
	OnRequest(ctx context.Context, r *bftpb.Request, conn *ClientConn)
	// OnFetchState serves a state-transfer request from replica from by
	// calling send for each chunk, in order; it returns when the state is
	// sent or ctx is done. An error ends the stream with that error (use
	// status errors to pick the gRPC code).
	OnFetchState(ctx context.Context, from uint32, req *transportpb.StateRequest, send func(*transportpb.StateChunk) error) error
}

// BatchHandler is a Handler that also takes the messages of one write of a
// peer (a PeerBatch) at once, in order, so it can verify their signatures
// together. The Server calls OnMessages instead of OnMessage when its
// Handler implements it; ms and its messages belong to the handler until
// it returns (the messages for good).
type BatchHandler interface {
	Handler
	OnMessages(ctx context.Context, from uint32, ms []*bftpb.Message)
}

// ServerConfig configures a Server.
type ServerConfig struct {
	// TLS is the server's TLS configuration. Replicas must present client
	// certificates; clients may (ClientAuth RequestClientCert or stricter).
	TLS *tls.Config
	// PeerIdentity maps a peer certificate to a replica index. Peer and
	// FetchState streams from a peer it rejects fail with PermissionDenied.
	PeerIdentity IdentityFunc
	// Handler receives messages, requests and state requests.
	Handler Handler
	// MaxMessageBytes bounds one received or sent message (default
	// DefaultMaxMessageBytes).
	MaxMessageBytes int
	// ReplyQueue bounds the replies waiting on one client stream (default
	// 1024); when it is full, new replies to that stream are dropped.
	ReplyQueue int
	// MaxConcurrentStreams bounds the streams of one connection (default 256).
	MaxConcurrentStreams uint32
	// Metrics receives the server's metrics (default: unregistered).
	Metrics *Metrics
	// Logger receives the server's logs (default slog.Default()).
	Logger *slog.Logger
}

// Server serves the Transport gRPC service of one replica: Peer streams from
// the other replicas, Client streams and FetchState.
type Server struct {
	h       Handler
	ident   IdentityFunc
	metrics *Metrics
	log     *slog.Logger
	grpc    *grpc.Server
	replyQ  int

	mu      sync.RWMutex
	clients map[string][]*ClientConn // client id → its open streams
	nextID  atomic.Uint64
}

// NewServer builds a Server; Serve starts serving.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.TLS == nil || cfg.PeerIdentity == nil || cfg.Handler == nil {
		return nil, fmt.Errorf("%w: server needs TLS, PeerIdentity and Handler", ErrConfig)
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.ReplyQueue <= 0 {
		cfg.ReplyQueue = 1024
	}
	if cfg.MaxConcurrentStreams == 0 {
		cfg.MaxConcurrentStreams = 256
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		h:       cfg.Handler,
		ident:   cfg.PeerIdentity,
		metrics: cfg.Metrics,
		log:     cfg.Logger.With("component", "transport-server"),
		replyQ:  cfg.ReplyQueue,
		clients: make(map[string][]*ClientConn),
	}
	s.grpc = grpc.NewServer(
		grpc.Creds(newCreds(cfg.TLS, nil, 0, cfg.Metrics)),
		grpc.ForceServerCodecV2(&codec{metrics: cfg.Metrics, rpc: rpcFetchState}),
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.MaxSendMsgSize(cfg.MaxMessageBytes),
		grpc.MaxConcurrentStreams(cfg.MaxConcurrentStreams),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WaitForHandlers(true),
	)
	transportpb.RegisterTransportServer(s.grpc, &service{s: s})
	return s, nil
}

// Serve accepts connections on lis until ctx is done or Close is called; it
// then stops the server (closing every stream and waiting for the handlers to
// return) and returns nil. Any other error of the listener is returned, and
// ErrClosed if the server was closed before. Serve may be called for several
// listeners at once (say a replica port and a client port); the end of any
// of their contexts stops the whole server.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	stop := context.AfterFunc(ctx, s.grpc.Stop)
	defer stop()
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return ErrClosed
	}
	return err
}

// Close stops the server at once: listeners and streams are closed, and
// Close returns when every handler has returned.
func (s *Server) Close() { s.grpc.Stop() }

// SendReply pushes r to every open stream of client r.Client without
// blocking, and returns how many streams took it. A stream whose reply queue
// is full drops it (counted as "queue_full"); a client with no stream is
// counted as "no_client". r is marshaled once.
func (s *Server) SendReply(r *bftpb.Reply) int {
	s.mu.RLock()
	conns := s.clients[string(r.GetClient())]
	s.mu.RUnlock()
	if len(conns) == 0 {
		s.metrics.drop(DropNoClient)
		return 0
	}
	e, err := encodeReply(r)
	if err != nil {
		s.metrics.drop(DropEncode)
		return 0
	}
	n := 0
	for _, c := range conns {
		if c.sendEncoded(e) {
			n++
		}
	}
	return n
}

// register binds c to client id; the slice is copied on write so SendReply
// can iterate without the lock.
func (s *Server) register(id string, c *ClientConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.clients[id]
	conns := make([]*ClientConn, len(old), len(old)+1)
	copy(conns, old)
	s.clients[id] = append(conns, c)
}

func (s *Server) unregister(id string, c *ClientConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.clients[id]
	conns := make([]*ClientConn, 0, len(old))
	for _, o := range old {
		if o != c {
			conns = append(conns, o)
		}
	}
	if len(conns) == 0 {
		delete(s.clients, id)
	} else {
		s.clients[id] = conns
	}
}

// acceptedHeader is the response header a server sends when it accepts a
// Peer or Client stream; a dialer writes nothing before it sees it.
const acceptedHeader = "augustus-accepted"

// service implements transportpb.TransportServer.
type service struct {
	transportpb.UnimplementedTransportServer
	s *Server
}

func (v *service) identify(ctx context.Context, rpc string) (uint32, error) {
	id, reason, err := peerReplica(ctx, v.s.ident)
	if err != nil {
		v.s.metrics.reject(reason)
		v.s.log.Warn("rejected peer", "rpc", rpc, "err", err)
		return 0, status.Error(codes.PermissionDenied, err.Error())
	}
	return id, nil
}

// recvError turns the error of RecvMsg into the handler's result.
func (v *service) recvError(err error) error {
	if status.Code(err) == codes.ResourceExhausted {
		v.s.metrics.drop(DropTooLarge)
	}
	return err
}

func (v *service) Peer(stream transportpb.Transport_PeerServer) error {
	ctx := stream.Context()
	from, err := v.identify(ctx, rpcPeer)
	if err != nil {
		return err
	}
	// Headers tell the dialer it has been accepted (see link.open).
	if err := stream.SendHeader(metadata.Pairs(acceptedHeader, peerLabel(from))); err != nil {
		return err
	}
	g := v.s.metrics.stream(rpcPeer, "server")
	g.Inc()
	defer g.Dec()
	batch, _ := v.s.h.(BatchHandler)
	var msgs []*bftpb.Message
	for {
		var f frame
		if err := stream.RecvMsg(&f); err != nil {
			if err == io.EOF {
				return stream.SendAndClose(&transportpb.PeerStreamEnd{})
			}
			return v.recvError(err)
		}
		// A PeerBatch: every message of the peer's write, decoded (and
		// copied out of the frame) before the frame is released.
		clear(msgs)
		msgs = msgs[:0]
		var bad error
		berr := eachBatchedMessage(f.bytes(), func(b []byte) {
			if bad != nil {
				return
			}
			m, err := decodeMessage(b)
			if errors.Is(err, errNoBody) {
				v.s.metrics.drop(DropNoBody)
				return
			}
			if err != nil {
				bad = err
				return
			}
			m.From = from
			v.s.metrics.received(KindOf(m), len(b))
			msgs = append(msgs, m)
		})
		n := len(f.bytes())
		f.release()
		if bad == nil {
			bad = berr
		}
		if bad != nil {
			// What decoded before the malformed part is delivered; the
			// stream ends.
			v.deliver(ctx, batch, from, msgs)
			v.s.metrics.decodeError(rpcPeer)
			v.s.log.Warn("malformed message; closing stream", "from", from, "bytes", n, "err", bad)
			return status.Error(codes.InvalidArgument, bad.Error())
		}
		v.deliver(ctx, batch, from, msgs)
	}
}

// deliver hands the messages of one PeerBatch to the handler, all at once if
// it takes batches.
func (v *service) deliver(ctx context.Context, batch BatchHandler, from uint32, msgs []*bftpb.Message) {
	if len(msgs) == 0 {
		return
	}
	if batch != nil {
		batch.OnMessages(ctx, from, msgs)
		return
	}
	for _, m := range msgs {
		v.s.h.OnMessage(ctx, from, m)
	}
}

func (v *service) Client(stream transportpb.Transport_ClientServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	var remote net.Addr
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr
	}
	// The bind challenge of this stream (bind.go): a fresh nonce, and the
	// TLS session's exporter value the client's signature must cover.
	exporter, err := ExporterOf(ctx)
	if err != nil {
		cancel()
		v.s.metrics.reject(RejectNoTLS)
		return status.Error(codes.Unauthenticated, err.Error())
	}
	nonce, err := newBindNonce()
	if err != nil {
		cancel()
		return status.Error(codes.Internal, err.Error())
	}
	c := &ClientConn{
		id:       v.s.nextID.Add(1),
		remote:   remote,
		metrics:  v.s.metrics,
		q:        make(chan *Encoded, v.s.replyQ),
		done:     make(chan struct{}),
		nonce:    nonce,
		exporter: exporter,
	}
	if err := stream.SendHeader(metadata.Pairs(acceptedHeader, "client", BindNonceHeader, string(nonce))); err != nil {
		cancel()
		return err
	}
	g := v.s.metrics.stream(rpcClient, "server")
	g.Inc()
	var wg sync.WaitGroup
	wg.Go(func() { c.writeLoop(ctx, stream) })
	defer func() {
		close(c.done)
		cancel()
		wg.Wait()
		if id := c.Bound(); id != "" {
			v.s.unregister(id, c)
		}
		g.Dec()
	}()
	for {
		var f frame
		if err := stream.RecvMsg(&f); err != nil {
			if err == io.EOF {
				return nil
			}
			return v.recvError(err)
		}
		n := len(f.bytes())
		r, err := decodeRequest(f.bytes())
		f.release()
		if err != nil {
			v.s.metrics.decodeError(rpcClient)
			v.s.log.Warn("malformed client request; closing stream", "remote", remote, "bytes", n, "err", err)
			return status.Error(codes.InvalidArgument, err.Error())
		}
		id := string(r.GetClient())
		switch {
		case id == "":
			v.s.metrics.drop(DropNoClientID)
			continue
		case IsBind(r):
			v.s.metrics.received(KindBind, n)
			if err := v.bind(c, r); err != nil {
				return err
			}
			continue // nothing for the owner
		case c.client != "" && c.client != id:
			// A stream bound to one client carries that client's requests
			// only.
			v.s.metrics.reject(RejectClientMismatch)
			return status.Error(codes.InvalidArgument, "transport: a client stream carries one client id")
		}
		// A request on an unbound stream is delivered (its signature, not
		// the stream, authenticates it) but binds nothing: only a proof of
		// the key does.
		v.s.metrics.received(KindClientRequest, n)
		v.s.h.OnRequest(ctx, r, c)
	}
}

// bind handles a bind request on stream c: an unsigned one binds nothing
// (counted); a signed one binds c to its client id once the signature
// verifies against c's challenge, and closes the stream if it does not.
func (v *service) bind(c *ClientConn, r *bftpb.Request) error {
	if len(r.GetSignature()) == 0 {
		v.s.metrics.reject(RejectUnprovenBind)
		return nil
	}
	if err := verifyBind(r, c.nonce, c.exporter); err != nil {
		v.s.metrics.reject(RejectBadBind)
		v.s.log.Warn("client bind refused; closing stream", "remote", c.remote, "err", err)
		return status.Error(codes.PermissionDenied, err.Error())
	}
	id := string(r.GetClient())
	switch c.Bound() {
	case "":
		c.setClient(id)
		v.s.register(id, c)
	case id:
		// Bound already: nothing to do.
	default:
		v.s.metrics.reject(RejectClientMismatch)
		return status.Error(codes.InvalidArgument, "transport: a client stream carries one client id")
	}
	return nil
}

func (v *service) FetchState(req *transportpb.StateRequest, stream transportpb.Transport_FetchStateServer) error {
	ctx := stream.Context()
	from, err := v.identify(ctx, rpcFetchState)
	if err != nil {
		return err
	}
	g := v.s.metrics.stream(rpcFetchState, "server")
	g.Inc()
	defer g.Dec()
	send := func(c *transportpb.StateChunk) error {
		if err := stream.Send(c); err != nil {
			return err
		}
		v.s.metrics.sent(KindStateChunk, len(c.GetData()))
		return nil
	}
	return v.s.h.OnFetchState(ctx, from, req, send)
}

// ClientConn is the server's end of one client stream. Replies pushed to it
// go through a bounded queue to a goroutine that writes them; Send never
// blocks.
type ClientConn struct {
	id      uint64
	remote  net.Addr
	metrics *Metrics
	q       chan *Encoded
	done    chan struct{}
	// nonce and exporter are the stream's bind challenge (bind.go).
	nonce, exporter []byte

	// client is the proven client id, "" until a bind verifies. The
	// stream's goroutine writes it; handlers may read it from others.
	mu     sync.Mutex
	client string
}

// Bound returns the client id the stream proved, "" if none yet.
func (c *ClientConn) Bound() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

func (c *ClientConn) setClient(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client = id
}

// ID is unique among the streams of one Server.
func (c *ClientConn) ID() uint64 { return c.id }

// ClientID is the client id the stream is bound to: its holder proved the
// id's private key on this TLS session (bind.go). It is empty until then.
func (c *ClientConn) ClientID() []byte { return []byte(c.Bound()) }

// RemoteAddr is the client's network address, if known.
func (c *ClientConn) RemoteAddr() net.Addr { return c.remote }

// Done is closed when the stream has ended.
func (c *ClientConn) Done() <-chan struct{} { return c.done }

// Send queues r on this stream without blocking; it reports false if r was
// dropped: queue full, stream ended, or r is addressed to another client
// than the one the stream proved to be (a reply goes only to its client).
func (c *ClientConn) Send(r *bftpb.Reply) bool {
	if id := c.Bound(); id == "" || id != string(r.GetClient()) {
		c.metrics.drop(DropNotBound)
		return false
	}
	e, err := encodeReply(r)
	if err != nil {
		c.metrics.drop(DropEncode)
		return false
	}
	return c.sendEncoded(e)
}

func (c *ClientConn) sendEncoded(e *Encoded) bool {
	select {
	case <-c.done:
		c.metrics.drop(DropClosed)
		return false
	default:
	}
	select {
	case c.q <- e:
		return true
	default:
		c.metrics.drop(DropQueueFull)
		return false
	}
}

func (c *ClientConn) writeLoop(ctx context.Context, stream transportpb.Transport_ClientServer) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-c.q:
			if err := stream.SendMsg(e); err != nil {
				c.metrics.drop(DropStreamError)
				return
			}
			c.metrics.sent(e.kind, e.Len())
		}
	}
}
