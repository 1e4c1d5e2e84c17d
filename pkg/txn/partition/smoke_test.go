package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

func TestSmokeSingleAndMultiGroup(t *testing.T) {
	w := newWorld(t, 2, 3)
	c := w.client(50)
	x := c.build(txn.NewBuilder().Insert(lowKey, []byte("a")).Read(lowKey2))
	res := w.groups[0].mustCall(c.id, x.call())
	requireVote(t, res, txn.Commit, txn.ReasonNone)
	v, ok := w.groups[0].get(lowKey)
	require.True(t, ok)
	require.Equal(t, []byte("a"), v)

	y := c.build(txn.NewBuilder().Write(lowKey, []byte("b")).Insert(highKey, []byte("c")))
	votes := c.sendAll(y)
	requireVote(t, votes[0], txn.Commit, txn.ReasonNone)
	requireVote(t, votes[1], txn.Commit, txn.ReasonNone)
	require.True(t, votes[0].Signed)
	acks := c.finish(y, w.commitCert(y))
	for g, a := range acks {
		require.Equal(t, txn.ResultAck, a.Kind, "group %d: %s", g, a)
		require.Equal(t, txn.Commit, a.Decision)
	}
	v, _ = w.groups[0].get(lowKey)
	require.Equal(t, []byte("b"), v)
	v, _ = w.groups[bft.GroupID(1)].get(highKey)
	require.Equal(t, []byte("c"), v)
}
