package e2e

import (
	"context"
	"crypto/ed25519"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
	"github.com/augustus-db/augustus/pkg/bft/transport"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

// eavesdropper is a client stream to one replica that claims another
// client's id; it counts the replies that reach it.
type eavesdropper struct {
	stream  transportpb.Transport_ClientClient
	nonce   []byte
	replies atomic.Int64
	ended   chan error
}

func openEavesdropper(t *testing.T, ctx context.Context, addr string, pub ed25519.PublicKey) *eavesdropper {
	t.Helper()
	tlsCfg, err := auth.ClientTLSConfig(nil, auth.AcceptKeys(pub))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	stream, err := transportpb.NewTransportClient(cc).Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md, err := stream.Header()
	if err != nil {
		t.Fatal(err)
	}
	e := &eavesdropper{stream: stream, ended: make(chan error, 1)}
	if v := md.Get(transport.BindNonceHeader); len(v) == 1 {
		e.nonce = []byte(v[0])
	}
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				e.ended <- err
				return
			}
			e.replies.Add(1)
		}
	}()
	return e
}

// A stream that claims a client's id without that client's key gets none
// of its replies from any replica — not by an unsigned bind, not by
// carrying the id in a request, not by a bind signed with another client's
// key — while the client itself is served.
func TestE2EAStreamClaimingAnotherClientsIDGetsNoReplies(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	victimKey, err := cluster.LoadClientKey(tc.dir, "client0")
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := cluster.LoadClientKey(tc.dir, "client1")
	if err != nil {
		t.Fatal(err)
	}
	victim := []byte(victimKey.Public().(ed25519.PublicKey))
	keys, err := tc.c.GroupKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var spies []*eavesdropper
	for i, n := range tc.names {
		e := openEavesdropper(t, ctx, tc.replica(n).ClientAddr, keys[i])
		if len(e.nonce) == 0 {
			t.Fatalf("replica %s issued no bind challenge", n)
		}
		if err := e.stream.Send(transport.BindRequest(victim)); err != nil {
			t.Fatal(err)
		}
		spies = append(spies, e)
	}
	forger := openEavesdropper(t, ctx, tc.replica(tc.names[1]).ClientAddr, keys[1])
	exporter, err := transport.ExporterOf(forger.stream.Context())
	if err != nil {
		t.Fatal(err)
	}
	sig := ed25519.Sign(otherKey, transport.BindSignBytes(victim, forger.nonce, exporter))
	if err := forger.stream.Send(&bftpb.Request{Client: victim, Signature: sig}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-forger.ended:
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("a bind signed with another client's key ended with %v, want PermissionDenied", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a bind signed with another client's key was not refused")
	}

	cl := tc.client("client0")
	const calls = 20
	for i := range calls {
		if _, err := invoke(cl, replica.LogAppend("spied", []byte{byte(i)}), 30*time.Second); err != nil {
			t.Fatalf("the victim's call %d: %v", i, err)
		}
	}
	// Replies to the victim come from every replica; give stragglers time.
	time.Sleep(500 * time.Millisecond)
	for i, e := range spies {
		if n := e.replies.Load(); n != 0 {
			t.Errorf("the stream claiming client0 at %s received %d replies", tc.names[i], n)
		}
	}
	var unproven, bad float64
	for _, n := range tc.names {
		unproven += tc.metric(n, "augustus_transport_rejected_peers_total", "reason", "unproven_bind")
		bad += tc.metric(n, "augustus_transport_rejected_peers_total", "reason", "bad_bind")
	}
	if unproven < 4 || bad < 1 {
		t.Fatalf("rejected binds: %.0f unproven, %.0f bad; want 4 and 1", unproven, bad)
	}
	t.Logf("client0 completed %d calls; 4 streams claiming its id without its key received 0 replies; a bind signed with client1's key was refused (PermissionDenied)", calls)
}
