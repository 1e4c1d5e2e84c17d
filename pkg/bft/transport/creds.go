package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// IdentityFunc maps the TLS state of an authenticated connection to the
// replica index that owns the peer certificate, or returns an error for a
// certificate that belongs to no replica of the group. pkg/bft/auth builds
// it from the pinned public keys of the cluster configuration.
type IdentityFunc func(tls.ConnectionState) (uint32, error)

// identityCreds wraps gRPC's TLS credentials to count failed handshakes and,
// when dialing a replica, to check that the server's certificate belongs to
// the replica configured at that address (a wrong or impostor server fails
// the handshake, so no message is ever written to it).
type identityCreds struct {
	credentials.TransportCredentials
	identity IdentityFunc // nil: no check (client dialing; server side)
	want     uint32
	metrics  *Metrics
}

func newCreds(cfg *tls.Config, identity IdentityFunc, want uint32, m *Metrics) *identityCreds {
	return &identityCreds{TransportCredentials: credentials.NewTLS(cfg), identity: identity, want: want, metrics: m}
}

func (c *identityCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.metrics.handshakeFailed("client")
		return nil, nil, err
	}
	if c.identity == nil {
		return conn, info, nil
	}
	ti, ok := info.(credentials.TLSInfo)
	if !ok {
		conn.Close()
		c.metrics.reject(RejectNoTLS)
		return nil, nil, fmt.Errorf("%w: no TLS state from %s", ErrWrongPeer, authority)
	}
	id, err := c.identity(ti.State)
	if err != nil || id != c.want {
		conn.Close()
		c.metrics.reject(RejectWrongPeer)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: server at %s: %w", ErrWrongPeer, authority, err)
		}
		return nil, nil, fmt.Errorf("%w: server at %s is replica %d, want %d", ErrWrongPeer, authority, id, c.want)
	}
	return conn, info, nil
}

func (c *identityCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.metrics.handshakeFailed("server")
	}
	return conn, info, err
}

func (c *identityCreds) Clone() credentials.TransportCredentials {
	return &identityCreds{
		TransportCredentials: c.TransportCredentials.Clone(),
		identity:             c.identity,
		want:                 c.want,
		metrics:              c.metrics,
	}
}

// peerReplica returns the replica index of the TLS peer of a server stream.
func peerReplica(ctx context.Context, identity IdentityFunc) (uint32, string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return 0, RejectNoTLS, fmt.Errorf("%w: no peer information", ErrUnknownPeer)
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return 0, RejectNoTLS, fmt.Errorf("%w: %s did not connect over TLS", ErrUnknownPeer, p.Addr)
	}
	id, err := identity(ti.State)
	if err != nil {
		return 0, RejectUnknown, fmt.Errorf("%w: %s: %w", ErrUnknownPeer, p.Addr, err)
	}
	return id, "", nil
}
