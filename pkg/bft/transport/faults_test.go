package transport

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
)

func TestFaultsDropIsDeterministicForASeed(t *testing.T) {
	c := newCluster(t, 2)
	sender, receiver := c.nodes[0], c.nodes[1]
	lf := LinkFaults{DropRate: 0.3}
	sender.faults.Set(1, lf)

	// The same seed and settings predict every decision.
	oracle := NewFaults(uint64(sender.id))
	oracle.Set(1, lf)
	const n = 300
	var want []uint64
	for s := range uint64(n) {
		if !oracle.Intercept(1, KindPrepare).Drop {
			want = append(want, s)
		}
		sender.peers.Send(1, prepare(0, s, 16))
	}
	require.Greater(t, len(want), n/2)
	require.Less(t, len(want), n)
	waitFor(t, "the surviving messages", func() bool { return receiver.rec.count() == len(want) })
	var got []uint64
	for _, r := range receiver.rec.messages() {
		got = append(got, r.m.GetPrepare().Seq)
	}
	require.Equal(t, want, got)
	require.Equal(t, float64(n-len(want)), dropped(t, sender.metrics, DropFault))
}

func TestFaultsDelayHoldsMessagesBack(t *testing.T) {
	c := newCluster(t, 2)
	sender, receiver := c.nodes[0], c.nodes[1]
	const delay, jitter = 150 * time.Millisecond, 50 * time.Millisecond
	sender.faults.Set(1, LinkFaults{Delay: delay, Jitter: jitter})
	sent := make([]time.Time, 5)
	for s := range sent {
		sent[s] = time.Now()
		sender.peers.Send(1, prepare(0, uint64(s), 16))
	}
	waitFor(t, "the delayed messages", func() bool { return receiver.rec.count() == len(sent) })
	for i, r := range receiver.rec.messages() {
		require.Equal(t, uint64(i), r.m.GetPrepare().Seq, "delays keep the link FIFO")
		require.GreaterOrEqual(t, r.at.Sub(sent[i]), delay)
	}
	// Other links are not delayed.
	require.Equal(t, LinkFaults{}, sender.faults.Link(2))
}

func TestFaultsCutAndHealALink(t *testing.T) {
	c := newCluster(t, 3)
	sender := c.nodes[0]
	sender.faults.Cut(1)
	for s := range 10 {
		require.False(t, sender.peers.Send(1, prepare(0, uint64(s), 16)))
	}
	require.Equal(t, 10.0, dropped(t, sender.metrics, DropPartition))
	require.ErrorIs(t, sender.peers.FetchState(context.Background(), 1, &transportpb.StateRequest{}, nil), ErrLinkCut)
	// The other link still works.
	sender.peers.Send(2, prepare(0, 0, 16))
	waitFor(t, "the uncut link", func() bool { return c.nodes[2].rec.count() == 1 })

	sender.faults.Heal(1)
	require.True(t, sender.peers.Send(1, prepare(0, 100, 16)))
	waitFor(t, "the healed link", func() bool { return c.nodes[1].rec.count() == 1 })
	// The link is FIFO, so nothing sent while it was cut is still coming.
	require.Equal(t, uint64(100), c.nodes[1].rec.messages()[0].m.GetPrepare().Seq)
}

func TestFaultsDefaultAndReset(t *testing.T) {
	f := NewFaults(1)
	f.SetDefault(LinkFaults{Delay: time.Second})
	f.Set(2, LinkFaults{DropRate: 1})
	require.Equal(t, time.Second, f.Intercept(1, KindCommit).Delay)
	require.True(t, f.Intercept(2, KindCommit).Drop)
	f.Cut(3)
	require.True(t, f.IsCut(3))
	require.Equal(t, time.Second, f.Link(3).Delay, "Cut keeps the default's other faults")
	require.Equal(t, Verdict{Drop: true, Partition: true}, f.Intercept(3, KindCommit))
	f.Reset()
	require.Equal(t, Verdict{}, f.Intercept(2, KindCommit))
	require.False(t, f.IsCut(3))
}
