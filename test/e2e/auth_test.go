package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

func TestE2EReplicaWithAKeyNotInTheClusterFailsAtStartup(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	stranger, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	name := tc.names[3]
	if err := auth.WritePrivateKeyFile(cluster.KeyPath(tc.dir, name)+".new", stranger); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, cluster.KeyPath(tc.dir, name)+".new", cluster.KeyPath(tc.dir, name))
	out, err := runAugustus(t, 30*time.Second, "replica", "--dir", tc.dir, "--id", name)
	var ee interface{ ExitCode() int }
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("replica with a foreign key: err %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.Contains(out, "does not match the public key of "+name) {
		t.Fatalf("the error does not name the mismatch:\n%s", out)
	}
	t.Logf("start-up refused: %s", strings.TrimSpace(out))
}

func TestE2EPeerWithAnUnknownCertificateIsRefused(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	target := tc.replica(tc.names[0])
	keys, err := tc.c.GroupKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}

	// 1. TLS with a certificate of a key the cluster does not list: the
	// replica's handshake check refuses it.
	tlsCfg, err := auth.ClientTLSConfig(stranger, auth.AcceptKeys(keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	tlsErr := tlsExchange(t, target.PeerAddr, tlsCfg)
	if tlsErr == nil {
		t.Fatal("a TLS connection with an unknown certificate was accepted")
	}
	t.Logf("unknown certificate: %v", tlsErr)
	waitFor(t, 10*time.Second, "the replica to count the failed handshake", func() bool {
		return tc.metric(tc.names[0], "augustus_transport_handshake_failures_total", "side", "server") >= 1
	})

	// 2. A peer stream over TLS without a client certificate (as a group
	// client connects): the replica refuses the stream.
	anon, err := auth.ClientTLSConfig(nil, auth.AcceptKeys(keys[0]))
	if err != nil {
		t.Fatal(err)
	}
	code := openPeerStream(t, target.PeerAddr, anon)
	if code != codes.PermissionDenied {
		t.Fatalf("a peer stream without a replica certificate ended with %v, want PermissionDenied", code)
	}
	waitFor(t, 10*time.Second, "the replica to count the rejected peer", func() bool {
		return tc.metric(tc.names[0], "augustus_transport_rejected_peers_total", "reason", "unknown_peer") >= 1
	})
	if !tc.logContains(tc.names[0], "rejected peer") {
		t.Errorf("the replica did not log the rejected peer")
	}

	// The group is unharmed.
	cl := tc.client("client0")
	if _, err := invoke(cl, replica.LogAppend("k", []byte("v")), 30*time.Second); err != nil {
		t.Fatalf("the group stopped answering: %v", err)
	}
}

// tlsExchange completes a TLS 1.3 handshake and reads once: a server that
// rejects the client certificate says so with an alert, which surfaces on
// the first read (TLS 1.3 checks the client's certificate after the client
// finished its part of the handshake). The server speaks HTTP/2 and sends
// its SETTINGS first, so an accepted connection reads without error.
func tlsExchange(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	d := net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(&d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	_, err = conn.Read(buf)
	return err
}

// openPeerStream opens the Peer RPC and returns the status it ends with.
func openPeerStream(t *testing.T, addr string, cfg *tls.Config) codes.Code {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := transportpb.NewTransportClient(cc).Peer(ctx)
	if err == nil {
		_, err = stream.CloseAndRecv()
	}
	t.Logf("peer stream without a replica certificate: %v", err)
	return status.Code(err)
}

// An unlisted client's call is rejected: it never executes, and the
// client learns so at once from f+1 matching rejections (DESIGN.md §3.2).
func TestE2EUnlistedClientIsRejected(t *testing.T) {
	skipInShort(t)
	tc := newCluster(t, clusterOptions{})
	tc.startAll()
	stranger, err := auth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	bad := tc.clientWithKey(stranger)
	start := time.Now()
	_, err = invoke(bad, replica.LogAppend("k", []byte("from a stranger")), 10*time.Second)
	if !errors.Is(err, client.ErrRejected) || !strings.Contains(err.Error(), "is not listed") {
		t.Fatalf("an unlisted client got %v, want a rejection naming the client policy", err)
	}
	t.Logf("unlisted client rejected after %s: %v", time.Since(start).Round(time.Millisecond), err)
	good := tc.client("client0")
	res, err := invoke(good, replica.LogRead("k"), 30*time.Second)
	if err != nil {
		t.Fatalf("a listed client on the same group: %v", err)
	}
	vals, err := replica.DecodeLogEntries(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 0 {
		t.Fatalf("the stranger's call executed: log k = %q", vals)
	}
	var rejected float64
	for _, n := range tc.names {
		rejected += tc.metric(n, mRejected, "kind", "request")
	}
	if rejected < 1 {
		t.Fatalf("no replica counted a rejected request")
	}
	t.Logf("replicas counted %.0f rejected requests; the listed client was served", rejected)
}

// replaceFile renames from over to.
func replaceFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}
