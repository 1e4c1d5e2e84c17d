package client

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/transport"
)

// TransportDialer connects to replicas over TLS (pkg/bft/transport), pinning
// each replica's public key. The client presents no certificate: replicas
// authenticate clients by the signature of every request, and a replica's
// TLS server only admits certificates of its peers. Every stream is bound to
// the client id at once (and after each reconnect) by proving possession of
// key on that TLS session (transport.WithClientKey), so backups, which get
// the client's requests from the primary, can route their replies to it,
// and no one without the key can receive them.
func TransportDialer(key ed25519.PrivateKey, m *transport.Metrics, log *slog.Logger) Dialer {
	return func(ctx context.Context, r cluster.Replica, pub ed25519.PublicKey) (Conn, error) {
		tlsCfg, err := auth.ClientTLSConfig(nil, auth.AcceptKeys(pub))
		if err != nil {
			return nil, fmt.Errorf("client: TLS for %s: %w", r.Name, err)
		}
		return transport.DialClient(ctx, r.ClientAddr, tlsCfg, transport.WithClientKey(key), transport.WithClientMetrics(m), transport.WithClientLogger(log))
	}
}
