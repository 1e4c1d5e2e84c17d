package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

func TestPeersExchangeMessagesOverMutualTLS(t *testing.T) {
	c := newCluster(t, 4)
	const perNode = 50
	for _, nd := range c.nodes {
		for s := range perNode {
			require.Equal(t, 3, nd.peers.Broadcast(prepare(nd.id, uint64(s), 64)))
		}
	}
	for _, nd := range c.nodes {
		c.waitFor(t, "all broadcasts", func() bool { return nd.rec.count() == 3*perNode })
	}
	for _, nd := range c.nodes {
		next := map[uint32]uint64{}
		for _, r := range nd.rec.messages() {
			p := r.m.GetPrepare()
			require.NotNil(t, p)
			require.NotEqual(t, nd.id, r.from, "a replica does not send to itself")
			require.Equal(t, p.Replica, r.from, "from is the TLS identity of the sender")
			require.Equal(t, r.from, r.m.From, "m.From is overwritten with the TLS identity")
			require.Equal(t, next[r.from], p.Seq, "one link delivers in order")
			next[r.from]++
		}
		require.Len(t, next, 3)
		require.Equal(t, float64(3*perNode), value(t, nd.metrics.recvMsgK[KindPrepare]))
		require.Equal(t, float64(3*perNode), value(t, nd.metrics.sentMsgK[KindPrepare]))
	}
}

func TestPeersSendToSelfOrUnknownIsDropped(t *testing.T) {
	c := newCluster(t, 2)
	nd := c.nodes[0]
	require.False(t, nd.peers.Send(0, prepare(0, 1, 0)))
	require.False(t, nd.peers.Send(9, prepare(0, 1, 0)))
	require.Equal(t, 2.0, dropped(t, nd.metrics, DropUnknownPeer))
}

func TestServerRejectsUnpinnedPeer(t *testing.T) {
	c := newCluster(t, 2)
	target := c.nodes[0]
	outsider := newTestKey(t)
	m := NewMetrics(nil)
	p, err := NewPeers(context.Background(), PeersConfig{
		Self:         7,
		Addrs:        map[uint32]string{0: target.addr},
		TLS:          dialTLS(&outsider, c.pins),
		PeerIdentity: c.pins.identity,
		Backoff:      fastBackoff,
		Metrics:      m,
		Logger:       quietLog,
	})
	require.NoError(t, err)
	defer p.Close()
	require.True(t, p.Send(0, prepare(7, 1, 0)))
	waitFor(t, "the rejection to be counted", func() bool {
		return rejected(t, target.metrics, RejectUnknown) >= 2 // it keeps retrying
	})
	require.Zero(t, target.rec.count(), "nothing from an unpinned peer is delivered")
	require.Positive(t, value(t, m.reconnects.WithLabelValues("0")))

	// State transfer is refused too.
	target.rec.state = func(context.Context, uint32, *transportpb.StateRequest, func(*transportpb.StateChunk) error) error {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = p.FetchState(ctx, 0, &transportpb.StateRequest{Seq: 1}, func(*transportpb.StateChunk) error { return nil })
	require.Error(t, err)
	require.Contains(t, err.Error(), "PermissionDenied")

	// A client without any certificate cannot open a Peer stream either.
	before := rejected(t, target.metrics, RejectUnknown)
	anon, err := NewPeers(context.Background(), PeersConfig{
		Self:         8,
		Addrs:        map[uint32]string{0: target.addr},
		TLS:          dialTLS(nil, c.pins),
		PeerIdentity: c.pins.identity,
		Backoff:      fastBackoff,
		Logger:       quietLog,
	})
	require.NoError(t, err)
	defer anon.Close()
	waitFor(t, "the anonymous peer to be rejected", func() bool {
		return rejected(t, target.metrics, RejectUnknown) > before
	})
	require.Zero(t, target.rec.count())
}

func TestPeersRefuseServerWithAnotherReplicasCertificate(t *testing.T) {
	c := newCluster(t, 3)
	m := NewMetrics(nil)
	// Replica 0 believes replica 1 lives at replica 2's address.
	p, err := NewPeers(context.Background(), PeersConfig{
		Self:         0,
		Addrs:        map[uint32]string{1: c.nodes[2].addr},
		TLS:          dialTLS(&c.nodes[0].key, c.pins),
		PeerIdentity: c.pins.identity,
		Backoff:      fastBackoff,
		Metrics:      m,
		Logger:       quietLog,
	})
	require.NoError(t, err)
	defer p.Close()
	p.Send(1, prepare(0, 1, 0))
	waitFor(t, "the wrong server to be refused", func() bool { return rejected(t, m, RejectWrongPeer) >= 1 })
	require.Zero(t, c.nodes[2].rec.count())
	require.Zero(t, value(t, m.sentMsgK[KindPrepare]))
}

func TestSlowReceiverMakesSenderDropInsteadOfBlocking(t *testing.T) {
	const queueCap = 64
	c := newCluster(t, 2, func(cfg *PeersConfig) { cfg.QueueMessages = queueCap })
	sender, receiver := c.nodes[0], c.nodes[1]
	gate := make(chan struct{})
	receiver.rec.mu.Lock()
	receiver.rec.gate = gate
	receiver.rec.mu.Unlock()

	const n = 5000
	for s := range n {
		// Send returns at once even though nobody reads: that the loop
		// finishes is the property under test.
		require.True(t, sender.peers.Send(1, prepare(0, uint64(s), 4096)))
		msgs, _ := sender.peers.QueueLen(1)
		require.LessOrEqual(t, msgs, queueCap)
	}
	require.Positive(t, dropped(t, sender.metrics, DropQueueFull))
	close(gate)
	waitFor(t, "the newest message", func() bool {
		msgs := receiver.rec.messages()
		return len(msgs) > 0 && msgs[len(msgs)-1].m.GetPrepare().Seq == n-1
	})
	// Everything was either delivered or counted as dropped; the queue kept
	// the newest messages.
	got := receiver.rec.count()
	require.Less(t, got, n)
	require.Equal(t, float64(n), float64(got)+dropped(t, sender.metrics, DropQueueFull))
}

func TestPeersDropMessagesAboveTheSizeLimit(t *testing.T) {
	c := newCluster(t, 2, func(cfg *PeersConfig) { cfg.MaxMessageBytes = 1 << 20 })
	nd := c.nodes[0]
	require.False(t, nd.peers.Send(1, prepare(0, 1, 2<<20)))
	require.Equal(t, 1.0, dropped(t, nd.metrics, DropTooLarge))
	require.True(t, nd.peers.Send(1, prepare(0, 2, 512<<10)))
	waitFor(t, "the message under the limit", func() bool { return c.nodes[1].rec.count() == 1 })
}

func TestPeersCarryMultiMegabyteMessages(t *testing.T) {
	c := newCluster(t, 2)
	require.True(t, c.nodes[0].peers.Send(1, prepare(0, 1, 12<<20)))
	c.waitFor(t, "a 12 MiB message", func() bool { return c.nodes[1].rec.count() == 1 })
	require.Len(t, c.nodes[1].rec.messages()[0].m.GetPrepare().Signature, 12<<20)
}

func TestPeersReconnectAfterServerRestart(t *testing.T) {
	c := newCluster(t, 2)
	sender, receiver := c.nodes[0], c.nodes[1]
	require.True(t, sender.peers.Send(1, prepare(0, 0, 8)))
	waitFor(t, "the first message", func() bool { return receiver.rec.count() == 1 })

	c.stopServer(receiver)
	waitFor(t, "the sender to notice", func() bool {
		return value(t, sender.metrics.reconnects.WithLabelValues("1")) >= 1
	})
	lis, err := net.Listen("tcp", receiver.addr)
	require.NoError(t, err)
	receiver.rec = &recorder{}
	c.startServer(t, receiver, lis)

	// Messages sent while the peer was away may be lost (PBFT retransmits);
	// keep sending until one arrives on the new stream.
	seq := uint64(1)
	waitFor(t, "delivery after the restart", func() bool {
		sender.peers.Send(1, prepare(0, seq, 8))
		seq++
		return receiver.rec.count() > 0
	})
	for _, r := range receiver.rec.messages() {
		require.Equal(t, uint32(0), r.from)
	}
}

func TestPeersStopWhenTheirContextEnds(t *testing.T) {
	c := newCluster(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	p, err := NewPeers(ctx, PeersConfig{
		Self:         0,
		Addrs:        map[uint32]string{1: c.nodes[1].addr},
		TLS:          dialTLS(&c.nodes[0].key, c.pins),
		PeerIdentity: c.pins.identity,
		Logger:       quietLog,
	})
	require.NoError(t, err)
	p.Send(1, prepare(0, 1, 0))
	cancel()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	<-done
	require.False(t, p.Send(1, prepare(0, 2, 0)), "a stopped link refuses messages")
	require.NoError(t, p.Close())
}

func TestBroadcastEncodesOnce(t *testing.T) {
	c := newCluster(t, 4)
	e, err := EncodeMessage(prepare(0, 1, 100))
	require.NoError(t, err)
	require.Equal(t, KindPrepare, e.Kind())
	require.Equal(t, 3, c.nodes[0].peers.BroadcastEncoded(e))
	for _, nd := range c.nodes[1:] {
		waitFor(t, "the broadcast", func() bool { return nd.rec.count() == 1 })
		require.Equal(t, uint64(1), nd.rec.messages()[0].m.GetPrepare().Seq)
	}
}

func TestInboxBackPressureMakesTheSenderDrop(t *testing.T) {
	c := newCluster(t, 2, func(cfg *PeersConfig) { cfg.QueueMessages = 32 })
	sender, receiver := c.nodes[0], c.nodes[1]
	inbox := NewInbox(8)
	receiver.rec.mu.Lock()
	receiver.rec.inbox = inbox
	receiver.rec.mu.Unlock()
	const n = 3000
	for s := range n {
		sender.peers.Send(1, prepare(0, uint64(s), 4096))
	}
	waitFor(t, "the inbox to fill", func() bool { return inbox.Len() == 8 })
	require.Positive(t, dropped(t, sender.metrics, DropQueueFull))
	// Draining the inbox lets the stream flow again, up to the newest message.
	for in := range inbox.C() {
		require.Equal(t, uint32(0), in.From)
		if in.Msg.GetPrepare().Seq == n-1 {
			break
		}
	}
}

func TestCloseUnblocksAStalledStream(t *testing.T) {
	c := newCluster(t, 2)
	sender, receiver := c.nodes[0], c.nodes[1]
	receiver.rec.mu.Lock()
	receiver.rec.gate = make(chan struct{}) // never opened
	receiver.rec.mu.Unlock()
	// Keep sending until the queue holds messages the stalled stream cannot
	// take: how many that needs depends on the HTTP/2 flow-control windows
	// and on how fast this machine is, so the test sends until it sees it.
	s := 0
	waitFor(t, "the stream to stall", func() bool {
		for i := 0; i < 500; i++ {
			sender.peers.Send(1, prepare(0, uint64(s), 4096))
			s++
		}
		msgs, _ := sender.peers.QueueLen(1)
		return msgs > 0 && sender.peers.Connected(1)
	})
	// Both ends stop although the receiver's handler never returns by itself
	// and the sender is blocked on flow control.
	require.NoError(t, sender.peers.Close())
	c.stopServer(receiver)
}

func TestPeersConnected(t *testing.T) {
	c := newCluster(t, 2)
	waitFor(t, "the stream to open", func() bool { return c.nodes[0].peers.Connected(1) })
	require.False(t, c.nodes[0].peers.Connected(0))
	require.False(t, c.nodes[0].peers.Connected(5))
}

// Messages queued between two Flushes leave in one write (a PeerBatch) and
// arrive in order; nothing leaves before the Flush.
func TestQueuedMessagesLeaveInOneWriteAtFlush(t *testing.T) {
	c := newCluster(t, 2)
	from, to := c.nodes[1], c.nodes[0]
	waitFor(t, "the stream", func() bool { return from.peers.Connected(0) })
	before := value(t, from.metrics.peerWrites)
	for seq := uint64(1); seq <= 5; seq++ {
		require.True(t, from.peers.Queue(0, prepare(1, seq, 8)))
	}
	msgs, _ := from.peers.QueueLen(0)
	require.Equal(t, 5, msgs, "queued, not written: nothing woke the peer's goroutine")
	require.Equal(t, before, value(t, from.metrics.peerWrites))
	from.peers.Flush()
	waitFor(t, "the five messages", func() bool { return to.rec.count() == 5 })
	require.Equal(t, before+1, value(t, from.metrics.peerWrites), "one write for the five")
	for i, r := range to.rec.messages() {
		require.Equal(t, uint64(i+1), r.m.GetPrepare().GetSeq())
		require.Equal(t, uint32(1), r.m.From)
	}
}
