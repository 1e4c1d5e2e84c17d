package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// testKey is a self-signed Ed25519 certificate, as pkg/bft/auth builds them.
type testKey struct {
	cert tls.Certificate
	pub  ed25519.PublicKey
}

func newTestKey(t testing.TB) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "augustus-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	require.NoError(t, err)
	return testKey{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}, pub: pub}
}

// pins maps pinned public keys to replica indexes.
type pins map[string]uint32

func (p pins) identity(cs tls.ConnectionState) (uint32, error) {
	if len(cs.PeerCertificates) == 0 {
		return 0, errors.New("no certificate")
	}
	pub, ok := cs.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	if !ok {
		return 0, errors.New("not an Ed25519 key")
	}
	id, ok := p[string(pub)]
	if !ok {
		return 0, errors.New("key not pinned")
	}
	return id, nil
}

// verifyPinned accepts a server certificate whose key is pinned.
func (p pins) verifyPinned(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("no certificate")
	}
	c, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return err
	}
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return errors.New("not an Ed25519 key")
	}
	if _, ok := p[string(pub)]; !ok {
		return errors.New("server key not pinned")
	}
	return nil
}

// serverTLS lets clients connect without certificates; replicas present
// theirs and PeerIdentity checks them per stream.
func serverTLS(k testKey) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{k.cert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

// dialTLS presents k (if any) and accepts only pinned servers.
func dialTLS(k *testKey, p pins) *tls.Config {
	c := &tls.Config{
		InsecureSkipVerify:    true, // self-signed: VerifyPeerCertificate pins the key
		VerifyPeerCertificate: p.verifyPinned,
		MinVersion:            tls.VersionTLS13,
	}
	if k != nil {
		c.Certificates = []tls.Certificate{k.cert}
	}
	return c
}

// recorder is a Handler that records what arrives.
type recorder struct {
	mu    sync.Mutex
	msgs  []received
	reqs  []*bftpb.Request
	gate  chan struct{}                       // if non-nil, OnMessage waits until it is closed
	sink  func(from uint32, m *bftpb.Message) // if set, replaces recording
	inbox *Inbox                              // if set, messages go there
	onReq func(ctx context.Context, r *bftpb.Request, c *ClientConn)
	state func(ctx context.Context, from uint32, req *transportpb.StateRequest, send func(*transportpb.StateChunk) error) error
}

type received struct {
	from uint32
	m    *bftpb.Message
	at   time.Time
}

func (r *recorder) OnMessage(ctx context.Context, from uint32, m *bftpb.Message) {
	r.mu.Lock()
	gate, sink, inbox := r.gate, r.sink, r.inbox
	r.mu.Unlock()
	if inbox != nil {
		inbox.Put(ctx, from, m)
		return
	}
	if sink != nil {
		sink(from, m)
		return
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return
		}
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, received{from: from, m: m, at: time.Now()})
	r.mu.Unlock()
}

func (r *recorder) OnRequest(ctx context.Context, req *bftpb.Request, c *ClientConn) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	f := r.onReq
	r.mu.Unlock()
	if f != nil {
		f(ctx, req, c)
	}
}

func (r *recorder) OnFetchState(ctx context.Context, from uint32, req *transportpb.StateRequest, send func(*transportpb.StateChunk) error) error {
	if r.state == nil {
		return errors.New("no state")
	}
	return r.state(ctx, from, req, send)
}

func (r *recorder) messages() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.msgs...)
}

func (r *recorder) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

// node is one in-process replica endpoint.
type node struct {
	id      uint32
	key     testKey
	addr    string
	rec     *recorder
	srv     *Server
	peers   *Peers
	metrics *Metrics
	faults  *Faults
	served  chan struct{}
}

type cluster struct {
	nodes []*node
	pins  pins
}

type clusterOpt func(*PeersConfig)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// fastBackoff keeps reconnection tests quick.
var fastBackoff = Backoff{Min: 5 * time.Millisecond, Max: 100 * time.Millisecond}

// newCluster starts n replicas on loopback, each with a Server and Peers.
func newCluster(t testing.TB, n int, opts ...clusterOpt) *cluster {
	t.Helper()
	c := &cluster{pins: pins{}}
	for i := range n {
		k := newTestKey(t)
		c.pins[string(k.pub)] = uint32(i)
		c.nodes = append(c.nodes, &node{id: uint32(i), key: k, rec: &recorder{}, metrics: NewMetrics(nil), faults: NewFaults(uint64(i))})
	}
	for _, nd := range c.nodes {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		nd.addr = lis.Addr().String()
		c.startServer(t, nd, lis)
	}
	addrs := map[uint32]string{}
	for _, nd := range c.nodes {
		addrs[nd.id] = nd.addr
	}
	for _, nd := range c.nodes {
		cfg := PeersConfig{
			Self:         nd.id,
			Addrs:        addrs,
			TLS:          dialTLS(&nd.key, c.pins),
			PeerIdentity: c.pins.identity,
			Backoff:      fastBackoff,
			Interceptor:  nd.faults,
			Metrics:      nd.metrics,
			Logger:       quietLog,
		}
		for _, o := range opts {
			o(&cfg)
		}
		p, err := NewPeers(context.Background(), cfg)
		require.NoError(t, err)
		nd.peers = p
		t.Cleanup(func() { p.Close() })
	}
	return c
}

// startServer serves nd on lis until the test ends (or stopServer).
func (c *cluster) startServer(t testing.TB, nd *node, lis net.Listener) {
	t.Helper()
	srv, err := NewServer(ServerConfig{
		TLS:          serverTLS(nd.key),
		PeerIdentity: c.pins.identity,
		Handler:      nd.rec,
		Metrics:      nd.metrics,
		Logger:       quietLog,
	})
	require.NoError(t, err)
	nd.srv = srv
	served := make(chan struct{})
	nd.served = served
	go func() {
		defer close(served)
		if err := srv.Serve(context.Background(), lis); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
}

// stopServer closes nd's server and waits for Serve to return.
func (c *cluster) stopServer(nd *node) {
	nd.srv.Close()
	<-nd.served
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitFor is waitFor that reports the cluster's drops and reconnects when it
// times out.
func (c *cluster) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, nd := range c.nodes {
				var drops, reconnects []string
				for _, r := range dropReasons {
					if v := dropped(t, nd.metrics, r); v > 0 {
						drops = append(drops, fmt.Sprintf("%s=%v", r, v))
					}
				}
				for _, o := range c.nodes {
					if v := value(t, nd.metrics.reconnects.WithLabelValues(peerLabel(o.id))); v > 0 {
						reconnects = append(reconnects, fmt.Sprintf("%d=%v", o.id, v))
					}
				}
				t.Logf("node %d: received %d, drops %v, reconnects %v", nd.id, nd.rec.count(), drops, reconnects)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func prepare(replica uint32, seq uint64, payload int) *bftpb.Message {
	return &bftpb.Message{
		From: 99, // a lie the receiver must overwrite
		Body: &bftpb.Message_Prepare{Prepare: &bftpb.Prepare{
			View: 1, Seq: seq, Replica: replica, Digest: make([]byte, 32), Signature: make([]byte, payload),
		}},
	}
}

// value reads a counter or gauge.
func value(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	require.NoError(t, c.Write(&d))
	switch {
	case d.Counter != nil:
		return d.Counter.GetValue()
	case d.Gauge != nil:
		return d.Gauge.GetValue()
	}
	panic(fmt.Sprintf("not a counter or gauge: %v", c.Desc()))
}

func dropped(t testing.TB, m *Metrics, reason string) float64 {
	return value(t, m.dropped.WithLabelValues(reason))
}

func rejected(t testing.TB, m *Metrics, reason string) float64 {
	return value(t, m.rejected.WithLabelValues(reason))
}

func decodeErrors(t testing.TB, m *Metrics, rpc string) float64 {
	return value(t, m.decodeErrs.WithLabelValues(rpc))
}

// listenOn listens again on an address a stopped server used.
func listenOn(t testing.TB, addr string) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	return lis
}
