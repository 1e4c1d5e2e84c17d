package coord

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

func TestSmokeSingleAndMultiGroup(t *testing.T) {
	w := newWorld(t, 2, 1)
	c := w.newClient(50, nil)
	res, err := c.do(txn.NewBuilder().Insert(k0, []byte("v0")))
	require.NoError(t, err)
	require.True(t, res.Committed)
	require.Equal(t, txn.KindSingle, res.Kind)

	res, err = c.do(txn.NewBuilder().Read(k0).Insert(k1, []byte("v1")))
	require.NoError(t, err)
	require.Equal(t, txn.KindMultiUpdate, res.Kind)
	require.Equal(t, []bft.GroupID{0, 1}, res.Groups)
	require.True(t, res.Ops[0].Present)
	require.Equal(t, []byte("v0"), res.Ops[0].Value)
	w.settle()
	v, ok := w.group(1).userValue(k1)
	require.True(t, ok)
	require.Equal(t, []byte("v1"), v)

	res, err = c.do(txn.NewBuilder().Read(k0).Read(k1))
	require.NoError(t, err)
	require.Equal(t, txn.KindMultiRead, res.Kind)
	require.Equal(t, []byte("v1"), res.Ops[1].Value)
	w.settle()
	st := c.core.Stats()
	require.Equal(t, st.NextNonce, st.Watermark)
}
