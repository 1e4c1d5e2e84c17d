package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// rawConn dials nd as replica `as` (nil: without a certificate) with a codec
// that sends *Encoded bytes verbatim, so a test can put any payload on a
// stream.
func rawConn(t *testing.T, c *cluster, nd *node, as *node) *grpc.ClientConn {
	t.Helper()
	var key *testKey
	if as != nil {
		key = &as.key
	}
	cc, err := grpc.NewClient("passthrough:///"+nd.addr,
		grpc.WithTransportCredentials(newCreds(dialTLS(key, c.pins), nil, 0, NewMetrics(nil))),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(&codec{metrics: NewMetrics(nil)})))
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	return cc
}

func rawClient(t *testing.T, c *cluster, nd *node, as *node) transportpb.TransportClient {
	return transportpb.NewTransportClient(rawConn(t, c, nd, as))
}

var garbage = []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x34}

func TestMalformedPeerPayloadClosesOnlyItsStream(t *testing.T) {
	c := newCluster(t, 2)
	srv := c.nodes[0]
	raw := rawClient(t, c, srv, c.nodes[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	stream, err := raw.Peer(ctx)
	require.NoError(t, err)
	// A message without a body is dropped; the stream stays open.
	require.NoError(t, stream.SendMsg(batchOf(nil)))
	ok, err := EncodeMessage(prepare(1, 5, 8))
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(batchOf(ok.b)))
	waitFor(t, "the valid message", func() bool { return srv.rec.count() == 1 })
	require.Equal(t, 1.0, dropped(t, srv.metrics, DropNoBody))

	// Garbage closes the stream with InvalidArgument and is counted.
	require.NoError(t, stream.SendMsg(&Encoded{b: garbage}))
	_, err = stream.CloseAndRecv()
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Equal(t, 1.0, decodeErrors(t, srv.metrics, rpcPeer))
	require.Equal(t, 1, srv.rec.count())

	// The server still serves: the real peer's stream delivers.
	c.nodes[1].peers.Send(0, prepare(1, 6, 8))
	waitFor(t, "delivery after the garbage", func() bool { return srv.rec.count() == 2 })
}

// batchOf encodes a PeerBatch of the given encoded messages.
func batchOf(msgs ...[]byte) *Encoded {
	var b []byte
	for _, m := range msgs {
		b = protowire.AppendTag(b, peerBatchField, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return &Encoded{b: b}
}

// A PeerBatch whose second message is garbage delivers the first, then
// closes the stream.
func TestMalformedMessageInAPeerBatchDeliversThoseBeforeAndClosesTheStream(t *testing.T) {
	c := newCluster(t, 2)
	srv := c.nodes[0]
	raw := rawClient(t, c, srv, c.nodes[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := raw.Peer(ctx)
	require.NoError(t, err)
	ok, err := EncodeMessage(prepare(1, 5, 8))
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(batchOf(ok.b, garbage)))
	_, err = stream.CloseAndRecv()
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Equal(t, 1, srv.rec.count())
	require.Equal(t, 1.0, decodeErrors(t, srv.metrics, rpcPeer))
}

func TestMalformedClientRequestClosesItsStream(t *testing.T) {
	c := newCluster(t, 1)
	srv := c.nodes[0]
	raw := rawClient(t, c, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := raw.Client(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(&Encoded{b: garbage}))
	err = stream.RecvMsg(new(bftpb.Reply))
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Equal(t, 1.0, decodeErrors(t, srv.metrics, rpcClient))
}

func TestMalformedStateRequestIsRefused(t *testing.T) {
	c := newCluster(t, 2)
	srv := c.nodes[0]
	cc := rawConn(t, c, srv, c.nodes[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, transportpb.Transport_FetchState_FullMethodName)
	require.NoError(t, err)
	require.NoError(t, s.SendMsg(&Encoded{b: garbage}))
	require.NoError(t, s.CloseSend())
	err = s.RecvMsg(new(transportpb.StateChunk))
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	require.Equal(t, 1.0, decodeErrors(t, srv.metrics, rpcFetchState))
}

// TestRawHTTP2GarbageDoesNotCrashTheServer speaks HTTP/2 by hand to send gRPC
// frames no gRPC client would: a length prefix far above the limit, a
// truncated message, a compressed flag without a compressor.
func TestRawHTTP2GarbageDoesNotCrashTheServer(t *testing.T) {
	c := newCluster(t, 2)
	srv := c.nodes[0]
	cfg := dialTLS(&c.nodes[1].key, c.pins)
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", srv.addr, cfg)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	require.NoError(t, fr.WriteSettings())
	dec := hpack.NewDecoder(4096, nil)

	grpcFrame := func(compressed byte, length uint32, payload []byte) []byte {
		b := []byte{compressed, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], length)
		return append(b, payload...)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"length far above the limit", grpcFrame(0, 1<<30, []byte{1, 2, 3})},
		{"truncated message", grpcFrame(0, 100, []byte{1, 2, 3, 4, 5})},
		{"compressed without compressor", grpcFrame(1, 3, []byte{1, 2, 3})},
		{"garbage protobuf", grpcFrame(0, uint32(len(garbage)), garbage)},
		{"not even a prefix", []byte{7}},
	}
	for i, tc := range cases {
		id := uint32(2*i + 1)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{
			{":method", "POST"}, {":scheme", "https"}, {":authority", "augustus"},
			{":path", transportpb.Transport_Peer_FullMethodName},
			{"content-type", "application/grpc"}, {"te", "trailers"},
		} {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}))
		require.NoError(t, fr.WriteData(id, true, tc.data))

		// Read until the stream ends; the server must end it with an error.
		code := ""
	read:
		for {
			f, err := fr.ReadFrame()
			require.NoError(t, err, tc.name)
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					require.NoError(t, fr.WriteSettingsAck())
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					require.NoError(t, fr.WritePing(true, f.Data))
				}
			case *http2.HeadersFrame:
				if f.StreamID != id {
					continue
				}
				fields, err := dec.DecodeFull(f.HeaderBlockFragment())
				require.NoError(t, err)
				for _, hf := range fields {
					if hf.Name == "grpc-status" {
						code = hf.Value
					}
				}
				if f.StreamEnded() {
					break read
				}
			case *http2.RSTStreamFrame:
				if f.StreamID == id {
					code = "rst"
					break read
				}
			case *http2.GoAwayFrame:
				t.Fatalf("%s: server sent GOAWAY", tc.name)
			}
		}
		t.Logf("%s: grpc-status %s", tc.name, code)
		require.NotEqual(t, "", code, tc.name)
		require.NotEqual(t, "0", code, tc.name)
	}
	require.Zero(t, srv.rec.count())

	// The server is still up and serving.
	c.nodes[1].peers.Send(0, prepare(1, 1, 8))
	waitFor(t, "delivery after the garbage", func() bool { return srv.rec.count() == 1 })
}

func TestNonTLSBytesFailTheHandshakeAndAreCounted(t *testing.T) {
	c := newCluster(t, 2)
	srv := c.nodes[0]
	conn, err := net.Dial("tcp", srv.addr)
	require.NoError(t, err)
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _ = io.ReadAll(conn) // the server closes the connection
	conn.Close()
	waitFor(t, "the failed handshake to be counted", func() bool {
		return value(t, srv.metrics.handshakes.WithLabelValues("server")) >= 1
	})
	c.nodes[1].peers.Send(0, prepare(1, 1, 8))
	waitFor(t, "delivery after the failed handshake", func() bool { return srv.rec.count() == 1 })
}
