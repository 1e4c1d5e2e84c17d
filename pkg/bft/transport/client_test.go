package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// echoReplies makes nd answer every request through SendReply.
func echoReplies(nd *node) {
	nd.rec.mu.Lock()
	defer nd.rec.mu.Unlock()
	nd.rec.onReq = func(_ context.Context, r *bftpb.Request, _ *ClientConn) {
		nd.srv.SendReply(&bftpb.Reply{
			Client: r.Client, Timestamp: r.Timestamp, Replica: nd.id,
			Status: bftpb.ReplyStatus_REPLY_STATUS_OK, Result: r.Payload,
		})
	}
}

// newClientKey returns a client key and its client id.
func newClientKey(t testing.TB) (ed25519.PrivateKey, []byte) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return priv, []byte(pub)
}

// dialKeyedClient dials nd with a fresh client key and returns the client
// and its id; every stream it opens proves the key.
func dialKeyedClient(t *testing.T, c *cluster, nd *node, opts ...ClientOption) (*Client, []byte) {
	t.Helper()
	key, id := newClientKey(t)
	return dialTestClient(t, c, nd, append(opts, WithClientKey(key))...), id
}

func dialTestClient(t *testing.T, c *cluster, nd *node, opts ...ClientOption) *Client {
	t.Helper()
	opts = append([]ClientOption{WithClientBackoff(fastBackoff), WithClientLogger(quietLog)}, opts...)
	cl, err := DialClient(context.Background(), nd.addr, dialTLS(nil, c.pins), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// recvReply waits for the next reply, failing the test after a deadline.
func recvReply(t *testing.T, cl *Client) *bftpb.Reply {
	t.Helper()
	select {
	case r, ok := <-cl.Replies():
		require.True(t, ok, "replies closed")
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("timed out waiting for a reply")
		return nil
	}
}

// retransmitUntilReply sends r until a reply for its timestamp arrives, as
// the group client does: a request written into a stream that was dying is
// lost.
func retransmitUntilReply(t *testing.T, cl *Client, r *bftpb.Request) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cl.Send(r)
	for {
		select {
		case rep := <-cl.Replies():
			if rep.Timestamp == r.Timestamp {
				return
			}
		case <-tick.C:
			cl.Send(r)
		case <-deadline:
			t.Fatalf("no reply for timestamp %d", r.Timestamp)
		}
	}
}

func TestClientRepliesAreRoutedToTheirClient(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	echoReplies(nd)
	a, ida := dialKeyedClient(t, c, nd)
	b, idb := dialKeyedClient(t, c, nd)
	const n = 20
	for i := range n {
		require.True(t, a.Send(&bftpb.Request{Client: ida, Timestamp: uint64(i + 1), Payload: []byte(fmt.Sprint("a", i))}))
		require.True(t, b.Send(&bftpb.Request{Client: idb, Timestamp: uint64(i + 1), Payload: []byte(fmt.Sprint("b", i))}))
	}
	for _, tc := range []struct {
		cl     *Client
		client string
		prefix string
	}{{a, string(ida), "a"}, {b, string(idb), "b"}} {
		for i := range n {
			r := recvReply(t, tc.cl)
			require.Equal(t, tc.client, string(r.Client))
			require.Equal(t, uint64(i+1), r.Timestamp)
			require.Equal(t, fmt.Sprint(tc.prefix, i), string(r.Result))
		}
	}
	require.Equal(t, float64(2*n), value(t, nd.metrics.recvMsgK[KindClientRequest]))
	require.Equal(t, float64(2*n), value(t, nd.metrics.sentMsgK[KindReply]))
	require.Equal(t, float64(2), value(t, nd.metrics.recvMsgK[KindBind]), "one bind per stream")
}

func TestClientConnSendRepliesOnItsStream(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	nd.rec.mu.Lock()
	nd.rec.onReq = func(_ context.Context, r *bftpb.Request, cc *ClientConn) {
		// The stream's identity and address travel in the reply.
		cc.Send(&bftpb.Reply{Client: r.Client, Timestamp: r.Timestamp, Result: []byte(hex.EncodeToString(cc.ClientID()) + " " + cc.RemoteAddr().String())})
	}
	nd.rec.mu.Unlock()
	cl, id := dialKeyedClient(t, c, nd)
	cl.Send(&bftpb.Request{Client: id, Timestamp: 7})
	r := recvReply(t, cl)
	require.Equal(t, uint64(7), r.Timestamp)
	require.Contains(t, string(r.Result), hex.EncodeToString(id)+" 127.0.0.1:")
}

func TestSendReplyWithoutStreamIsDropped(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	require.Zero(t, nd.srv.SendReply(&bftpb.Reply{Client: []byte("nobody")}))
	require.Equal(t, 1.0, dropped(t, nd.metrics, DropNoClient))
}

func TestClientStreamCarriesOneClientID(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	echoReplies(nd)
	cl, honest := dialKeyedClient(t, c, nd)
	cl.Send(&bftpb.Request{Client: honest, Timestamp: 1})
	require.Equal(t, uint64(1), recvReply(t, cl).Timestamp)
	// A second id on the same stream closes it; the client reconnects.
	cl.Send(&bftpb.Request{Client: []byte("other"), Timestamp: 2})
	waitFor(t, "the stream to be closed", func() bool { return rejected(t, nd.metrics, RejectClientMismatch) == 1 })
	retransmitUntilReply(t, cl, &bftpb.Request{Client: honest, Timestamp: 3})
	// A request without a client id is dropped without closing the stream.
	cl.Send(&bftpb.Request{Timestamp: 4})
	cl.Send(&bftpb.Request{Client: honest, Timestamp: 5})
	for recvReply(t, cl).Timestamp != 5 { // skip replies to retransmissions
	}
	require.Equal(t, 1.0, dropped(t, nd.metrics, DropNoClientID))
}

func TestClientReconnectsAfterServerRestart(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	echoReplies(nd)
	cl, id := dialKeyedClient(t, c, nd)
	cl.Send(&bftpb.Request{Client: id, Timestamp: 1})
	require.Equal(t, uint64(1), recvReply(t, cl).Timestamp)
	c.stopServer(nd)
	waitFor(t, "the client to notice", func() bool { return !cl.Connected() })
	lis := listenOn(t, nd.addr)
	nd.rec = &recorder{}
	c.startServer(t, nd, lis)
	echoReplies(nd)
	waitFor(t, "the client to reconnect", cl.Connected)
	retransmitUntilReply(t, cl, &bftpb.Request{Client: id, Timestamp: 2})
}

func TestClientCloseClosesReplies(t *testing.T) {
	c := newCluster(t, 1)
	cl := dialTestClient(t, c, c.nodes[0])
	require.NoError(t, cl.Close())
	_, ok := <-cl.Replies()
	require.False(t, ok)
	require.False(t, cl.Send(&bftpb.Request{Client: []byte("c")}))
}

func TestSlowClientLosesRepliesInsteadOfBlockingTheReplica(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	echoReplies(nd)
	// A client that never reads: its Replies buffer is tiny and nobody drains it.
	cl, slow := dialKeyedClient(t, c, nd, WithReplyBuffer(1))
	cl.Send(&bftpb.Request{Client: slow, Timestamp: 1})
	waitFor(t, "registration", func() bool { return nd.rec.requests() == 1 })
	big := make([]byte, 64<<10)
	for range 2000 {
		nd.srv.SendReply(&bftpb.Reply{Client: slow, Result: big}) // never blocks
	}
	require.Positive(t, dropped(t, nd.metrics, DropQueueFull))
}

func TestFetchStateStreamsChunksAndResumes(t *testing.T) {
	c := newCluster(t, 2)
	const chunks = 10
	src := c.nodes[1]
	src.rec.state = func(ctx context.Context, from uint32, req *transportpb.StateRequest, send func(*transportpb.StateChunk) error) error {
		if from != 0 {
			return status.Error(codes.PermissionDenied, "unexpected replica")
		}
		start := 0
		if len(req.ResumeToken) > 0 {
			start = int(req.ResumeToken[0]) + 1
		}
		for i := start; i < chunks; i++ {
			data := make([]byte, 100<<10)
			data[0] = byte(i)
			if err := send(&transportpb.StateChunk{Seq: req.Seq, Data: data, ResumeToken: []byte{byte(i)}, Last: i == chunks-1}); err != nil {
				return err
			}
		}
		return nil
	}
	fetch := func(token []byte) []byte {
		var got []byte
		err := c.nodes[0].peers.FetchState(context.Background(), 1, &transportpb.StateRequest{Seq: 42, ResumeToken: token},
			func(ch *transportpb.StateChunk) error {
				require.Equal(t, uint64(42), ch.Seq)
				got = append(got, ch.Data[0])
				return nil
			})
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, fetch(nil))
	require.Equal(t, []byte{6, 7, 8, 9}, fetch([]byte{5}))
	require.Equal(t, float64(14), value(t, c.nodes[0].metrics.recvMsgK[KindStateChunk]))
	require.Equal(t, float64(14), value(t, src.metrics.sentMsgK[KindStateChunk]))
}

func TestFetchStateReportsTheServersError(t *testing.T) {
	c := newCluster(t, 2)
	c.nodes[1].rec.state = func(context.Context, uint32, *transportpb.StateRequest, func(*transportpb.StateChunk) error) error {
		return status.Error(codes.NotFound, "no checkpoint at 42")
	}
	err := c.nodes[0].peers.FetchState(context.Background(), 1, &transportpb.StateRequest{Seq: 42}, func(*transportpb.StateChunk) error { return nil })
	require.Equal(t, codes.NotFound, status.Code(err))
	require.Error(t, c.nodes[0].peers.FetchState(context.Background(), 5, &transportpb.StateRequest{}, nil))
}

// A client dialed with WithClientKey hears replies addressed to it on a
// stream it never sent a request on, and again after the stream is remade
// (a new TLS session, a new challenge); the bind never reaches the handler.
func TestClientWithKeyReceivesRepliesWithoutSendingRequests(t *testing.T) {
	c := newCluster(t, 1)
	nd := c.nodes[0]
	cl, id := dialKeyedClient(t, c, nd)
	waitFor(t, "the bind", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: id, Timestamp: 7}) > 0 })
	require.Equal(t, uint64(7), recvReply(t, cl).Timestamp)
	c.stopServer(nd)
	waitFor(t, "the client to notice", func() bool { return !cl.Connected() })
	lis := listenOn(t, nd.addr)
	nd.rec = &recorder{}
	c.startServer(t, nd, lis)
	waitFor(t, "the bind after reconnecting", func() bool { return nd.srv.SendReply(&bftpb.Reply{Client: id, Timestamp: 8}) > 0 })
	for {
		if r := recvReply(t, cl); r.Timestamp == 8 {
			break
		}
	}
	require.Zero(t, nd.rec.requests())
}
