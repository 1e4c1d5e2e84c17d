package cli

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/transport"
)

// loggingDialer is client.TransportDialer with the transport's logs sent to
// log rather than to slog.Default (client.Config.Logger does not reach the
// transport connections).
func loggingDialer(log *slog.Logger) client.Dialer {
	return func(ctx context.Context, r cluster.Replica, pub ed25519.PublicKey) (client.Conn, error) {
		tlsCfg, err := auth.ClientTLSConfig(nil, auth.AcceptKeys(pub))
		if err != nil {
			return nil, fmt.Errorf("client: TLS for %s: %w", r.Name, err)
		}
		return transport.DialClient(ctx, r.ClientAddr, tlsCfg, transport.WithClientLogger(log))
	}
}
