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
	// Eleven full envelopes of nine; the last call waits, since it would
	// leave in an envelope smaller than the last one while others are out
	// (Core.Flush).
	require.Equal(t, 99, calls)
	require.Len(t, core.queue, 1)
	// Nine calls fit the payload sum of 10,000 bytes but not their encoding.
	first, err := envelope.DecodeCalls(conn.sent[0].Payload)
	require.NoError(t, err)
	require.Len(t, first, 9)
}

// While envelopes are out, queued calls leave only in an envelope at least as
// full as the last one sent, or once an outstanding envelope returns; an idle
// client sends at once, and calls that trickle in one by one still pipeline.
func TestCoreSendsFewerFullerEnvelopesWhileOthersAreOut(t *testing.T) {
	conn := &sinkConn{}
	now := time.Unix(1, 0)
	core := NewCore(CoreConfig{
		ID: bft.ClientID(make([]byte, 32)), F: 0, N: 1, Sign: func([]byte) []byte { return nil },
		Domain: bft.NewDomain("test", 0), Window: 64, InFlight: 4, Timeout: time.Hour,
		MaxEnvelopeCalls: 1024, MaxEnvelopeBytes: 1 << 20,
		VerifyReply: func(*bftpb.Reply) bool { return true },
	}, []Conn{conn}, now)
	submit := func(n int) {
		for range n {
			core.Submit([]byte("c"), now, func(Result) {})
		}
		core.Flush(now)
	}
	sentCalls := func(i int) int {
		c, err := envelope.DecodeCalls(conn.sent[i].Payload)
		require.NoError(t, err)
		return len(c)
	}

	submit(1) // idle: leaves at once
	require.Len(t, conn.sent, 1)
	submit(1) // as full as the last (1): pipelines
	require.Len(t, conn.sent, 2)
	submit(8) // fuller than the last: leaves, and sets the bar at 8
	require.Len(t, conn.sent, 3)
	require.Equal(t, 8, sentCalls(2))
	submit(3) // 3 < 8 with envelopes out: waits
	require.Len(t, conn.sent, 3)
	submit(5) // 8 queued: as full as the last, leaves though 3 are out
	require.Len(t, conn.sent, 4)
	require.Equal(t, 8, sentCalls(3))
	submit(2) // waits again...
	require.Len(t, conn.sent, 4)

	// ...until the outstanding envelopes return: with nothing out, the
	// queue leaves whatever its size.
	for i := range conn.sent {
		r := conn.sent[i]
		calls, err := envelope.DecodeCalls(r.Payload)
		require.NoError(t, err)
		results := make([][]byte, len(calls))
		for j := range results {
			results[j] = []byte("ok")
		}
		core.Deliver(&bftpb.Reply{Client: r.Client, Timestamp: r.Timestamp, Replica: 0, Status: bftpb.ReplyStatus_REPLY_STATUS_OK,
			Result: envelope.EncodeResults(results)}, now)
	}
	require.Zero(t, core.Outstanding())
	core.Flush(now)
	require.Len(t, conn.sent, 5)
	require.Equal(t, 2, sentCalls(4))
}
