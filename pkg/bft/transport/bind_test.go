package transport

import (
	"context"
	"crypto/ed25519"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft/auth/zip215test"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// rawStream is a client stream opened by hand: the test sends what it
// likes and counts the replies that reach it.
type rawStream struct {
	s       transportpb.Transport_ClientClient
	nonce   []byte
	replies atomic.Int64
	ended   chan error
}

// openRaw opens a client stream on cc's connection and reads its challenge.
func openRaw(t *testing.T, raw transportpb.TransportClient) *rawStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := raw.Client(ctx)
	require.NoError(t, err)
	md, err := s.Header()
	require.NoError(t, err)
	nonces := md.Get(BindNonceHeader)
	require.Len(t, nonces, 1, "the replica issues one challenge per stream")
	r := &rawStream{s: s, nonce: []byte(nonces[0]), ended: make(chan error, 1)}
	require.Len(t, r.nonce, bindNonceSize)
	go func() {
		for {
			var f frame
			if err := s.RecvMsg(&f); err != nil {
				r.ended <- err
				return
			}
			f.release()
			r.replies.Add(1)
		}
	}()
	return r
}

func (r *rawStream) exporter(t *testing.T) []byte {
	t.Helper()
	e, err := ExporterOf(r.s.Context())
	require.NoError(t, err)
	return e
}

func (r *rawStream) send(t *testing.T, req *bftpb.Request) {
	t.Helper()
	e, err := encodeRequest(req)
	require.NoError(t, err)
	require.NoError(t, r.s.SendMsg(e))
}

// endedWith waits for the server to close the stream.
func (r *rawStream) endedWith(t *testing.T) codes.Code {
	t.Helper()
	select {
	case err := <-r.ended:
		return status.Code(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream was not closed")
		return codes.OK
	}
}

// A stream that claims another client's id, without proving that client's
// key, receives none of its replies: not by an unsigned bind, not by a
// request carrying the id, not by a bind signed with another key. The
// victim, whose stream proved its key, receives every one.
func TestBindWithoutTheClientsKeyReceivesNothing(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	nd.rec.mu.Lock()
	nd.rec.onReq = func(_ context.Context, r *bftpb.Request, cc *ClientConn) {
		// A handler answering on the stream a request came on reaches only
		// a stream bound to the request's client.
		cc.Send(&bftpb.Reply{Client: r.Client, Timestamp: r.Timestamp})
	}
	nd.rec.mu.Unlock()
	victim, id := dialKeyedClient(t, c, nd)
	waitFor(t, "the victim's bind", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: id, Timestamp: 1}) == 1 })
	require.Equal(t, uint64(1), recvReply(t, victim).Timestamp)

	raw := rawClient(t, c, nd, nil)
	// 1. An unsigned bind for the victim's id binds nothing; the stream
	// stays open.
	unsigned := openRaw(t, raw)
	unsigned.send(t, BindRequest(id))
	waitFor(t, "the unproven bind to be counted", func() bool { return rejected(t, nd.metrics, RejectUnprovenBind) == 1 })
	// 2. A request carrying the victim's id reaches the handler (its
	// signature is for the replica to check) but binds nothing, and the
	// handler's answer on that stream is dropped.
	unsigned.send(t, &bftpb.Request{Client: id, Timestamp: 9, Payload: []byte("x")})
	waitFor(t, "the request to reach the handler", func() bool { return nd.rec.requests() == 1 })
	waitFor(t, "the answer on the unbound stream to be dropped", func() bool { return dropped(t, nd.metrics, DropNotBound) == 1 })
	// 3. A bind signed with another key for the victim's id closes the
	// stream.
	forger := openRaw(t, raw)
	other, _ := newClientKey(t)
	forger.send(t, &bftpb.Request{Client: id, Signature: ed25519.Sign(other, BindSignBytes(id, forger.nonce, forger.exporter(t)))})
	require.Equal(t, codes.PermissionDenied, forger.endedWith(t))
	require.Equal(t, 1.0, rejected(t, nd.metrics, RejectBadBind))

	// Replies to the victim go to the victim's stream only.
	const n = 50
	for i := range n {
		require.Equal(t, 1, nd.srv.SendReply(&bftpb.Reply{Client: id, Timestamp: uint64(100 + i)}), "one stream is bound to the victim")
	}
	for i := range n {
		require.Equal(t, uint64(100+i), recvReply(t, victim).Timestamp)
	}
	require.Zero(t, unsigned.replies.Load())
	require.Zero(t, forger.replies.Load())
}

// A signed bind works once, on the stream and TLS session it was made for:
// replayed on another stream of the same connection (another nonce) or on
// another connection (another TLS session: another exporter value) it
// closes the stream, and so does a signature over a fresh nonce made with
// the exporter value of another session (a relay).
func TestReplayedBindFailsOnAnotherStreamOrSession(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	key, id := newClientKey(t)

	conn1 := rawClient(t, c, nd, nil)
	first := openRaw(t, conn1)
	e1 := first.exporter(t)
	signed := SignedBindRequest(key, first.nonce, e1)
	first.send(t, signed)
	waitFor(t, "the bind", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: id}) == 1 })

	sameSession := openRaw(t, conn1)
	require.Equal(t, e1, sameSession.exporter(t), "one TLS session, one exporter value")
	sameSession.send(t, signed)
	require.Equal(t, codes.PermissionDenied, sameSession.endedWith(t))

	conn2 := rawClient(t, c, nd, nil)
	replay := openRaw(t, conn2)
	require.NotEqual(t, e1, replay.exporter(t), "another TLS session, another exporter value")
	replay.send(t, signed)
	require.Equal(t, codes.PermissionDenied, replay.endedWith(t))

	relay := openRaw(t, conn2)
	relay.send(t, SignedBindRequest(key, relay.nonce, e1))
	require.Equal(t, codes.PermissionDenied, relay.endedWith(t))
	require.Equal(t, 3.0, rejected(t, nd.metrics, RejectBadBind))

	// The same key binds a stream of the second session when it signs
	// that session's challenge.
	honest := openRaw(t, conn2)
	honest.send(t, SignedBindRequest(key, honest.nonce, honest.exporter(t)))
	waitFor(t, "the second bind", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: id}) == 2 })
	waitFor(t, "both streams to get the replies", func() bool { return first.replies.Load() >= 2 && honest.replies.Load() >= 1 })
	require.Zero(t, sameSession.replies.Load()+replay.replies.Load()+relay.replies.Load())
}

// Binding is per stream and stays with the client id it proved: a second
// bind for another key on a bound stream closes it.
func TestBoundStreamRefusesASecondClient(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	ka, ida := newClientKey(t)
	kb, _ := newClientKey(t)
	s := openRaw(t, rawClient(t, c, nd, nil))
	s.send(t, SignedBindRequest(ka, s.nonce, s.exporter(t)))
	s.send(t, SignedBindRequest(ka, s.nonce, s.exporter(t))) // the same again: no-op
	waitFor(t, "the bind", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: ida}) == 1 })
	s.send(t, SignedBindRequest(kb, s.nonce, s.exporter(t)))
	require.Equal(t, codes.InvalidArgument, s.endedWith(t))
	require.Equal(t, 1.0, rejected(t, nd.metrics, RejectClientMismatch))
	waitFor(t, "the stream to be unregistered", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: ida}) == 0 })
}

// BenchmarkBindVerify is the server's cost of one bind (once per client
// stream): an Ed25519 verification.
func BenchmarkBindVerify(b *testing.B) {
	key, _ := newClientKey(b)
	nonce, exporter := make([]byte, bindNonceSize), make([]byte, bindExporterSize)
	r := SignedBindRequest(key, nonce, exporter)
	b.ReportAllocs()
	for b.Loop() {
		if err := verifyBind(r, nonce, exporter); err != nil {
			b.Fatal(err)
		}
	}
}

// A bind is checked by the ZIP-215 rules, like every signature of Augustus:
// one that crypto/ed25519 rejects and ZIP-215 accepts binds, a wrong one
// does not.
func TestBindAcceptsZIP215Signatures(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	id := []byte(priv.Public().(ed25519.PublicKey))
	nonce, exporter := []byte("nonce-0123456789"), []byte("exporter-0123456789-0123456789-01")
	sig := zip215test.Sign(priv, BindSignBytes(id, nonce, exporter))
	require.False(t, ed25519.Verify(id, BindSignBytes(id, nonce, exporter), sig))
	require.NoError(t, verifyBind(&bftpb.Request{Client: id, Signature: sig}, nonce, exporter))
	require.Error(t, verifyBind(&bftpb.Request{Client: id, Signature: sig}, []byte("another nonce..."), exporter))
}
