package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

type sinkConn struct{ sent []*bftpb.Request }

func (s *sinkConn) Send(r *bftpb.Request) bool   { s.sent = append(s.sent, r); return true }
func (s *sinkConn) Replies() <-chan *bftpb.Reply { return nil }
func (s *sinkConn) Close() error                 { return nil }

// An envelope's encoding, length prefixes included, stays within
// MaxEnvelopeBytes (what the replicas bound a request's payload by): calls
// that would push it over wait for the next envelope.
func TestEnvelopesStayWithinTheirByteBoundEncoded(t *testing.T) {
	conn := &sinkConn{}
	const maxBytes = 10_000
	core := NewCore(CoreConfig{
		ID: bft.ClientID(make([]byte, 32)), F: 1, N: 1, Sign: func([]byte) []byte { return nil },
		Window: 16, InFlight: 16, Timeout: time.Second, MaxEnvelopeCalls: 1 << 16, MaxEnvelopeBytes: maxBytes,
	}, []Conn{conn}, time.Unix(1, 0))
	for range 100 {
		core.Submit(make([]byte, 1000), time.Unix(1, 0), func(Result) {})
	}
	core.Flush(time.Unix(1, 0))
	require.NotEmpty(t, conn.sent)
	calls := 0
	for _, r := range conn.sent {
		require.LessOrEqual(t, len(r.Payload), maxBytes)
		c, err := envelope.DecodeCalls(r.Payload)
		require.NoError(t, err)
		calls += len(c)
	}
	require.Equal(t, 100, calls)
	// Nine calls fit the payload sum of 10,000 bytes but not their encoding.
	first, err := envelope.DecodeCalls(conn.sent[0].Payload)
	require.NoError(t, err)
	require.Len(t, first, 9)
}
