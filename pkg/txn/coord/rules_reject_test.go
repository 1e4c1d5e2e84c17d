package coord

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md T4: a transaction the groups reject (stateless validation) gets the
// rejection, readable as client.ErrRejected; nothing was recorded anywhere,
// so its nonce is finished at once and the watermark moves on.
func TestT4RejectedTransactionReportsAndFreesItsNonce(t *testing.T) {
	w := newWorld(t, 2, 70)
	m := NewMetrics(nil)
	admin := w.newClient(70, asAdmin(w, nil, m))
	// Only the partition map may be written among the reserved metadata
	// keys (M1): Validate refuses this at every group.
	_, err := admin.do(txn.NewBuilder().Insert([]byte("\x00mine"), []byte("x")).Meta())
	require.ErrorIs(t, err, client.ErrRejected)
	w.settle()
	st := admin.core.Stats()
	require.Equal(t, st.NextNonce, st.Watermark)
	require.Equal(t, 1.0, counter(t, m, "transactions", "meta", "rejected"))
	res, err := admin.do(txn.NewBuilder().Insert([]byte("schema/x"), []byte("x")).Meta())
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Nonce)
}

// What no group would accept is refused before a nonce is spent.
func TestInvalidTransactionsAreRefusedBeforeSending(t *testing.T) {
	w := newWorld(t, 2, 71)
	rec := newRecorder(w)
	c := w.newClient(50, observe(rec, nil))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	_, err := c.do(txn.NewBuilder())
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.do(txn.NewBuilder().Insert(bytes.Repeat([]byte("k"), 5000), nil))
	require.ErrorIs(t, err, ErrInvalid)
	_, err = c.do(txn.NewBuilder().Insert([]byte("schema/x"), nil).Meta().Insert(k0, nil))
	require.ErrorIs(t, err, ErrNoAdminKey)
	_, err = c.doWith(txn.NewBuilder().Read(txn.MetaVersionKey).Meta(), Options{Groups: []bft.GroupID{7}})
	require.ErrorIs(t, err, ErrInvalid)
	require.Empty(t, rec.sent)
	require.Equal(t, uint64(0), c.core.Stats().NextNonce)
}

// Options.Groups sends a transaction of metadata reads where the caller
// says; by default to the first group.
func TestMetadataReadsGoWhereOptionsSay(t *testing.T) {
	w := newWorld(t, 2, 72)
	c := w.newClient(50, nil)
	res, err := c.do(txn.NewBuilder().Read(txn.MetaVersionKey).Meta())
	require.NoError(t, err)
	require.Equal(t, []bft.GroupID{0}, res.Groups)
	res, err = c.doWith(txn.NewBuilder().Read(txn.MetaVersionKey).Meta(), Options{Groups: []bft.GroupID{1, 0, 1}})
	require.NoError(t, err)
	require.Equal(t, []bft.GroupID{0, 1}, res.Groups)
	require.Equal(t, txn.EncodeVersion(0), res.Ops[0].Value, "one answer for a metadata read, though both groups ran it")
}

// The group client packs concurrent transactions' calls into one envelope,
// and the groups reject an invalid call alone (DESIGN.md §3.2): the valid
// transaction beside it commits, the invalid one fails at once with the
// call's rejection (not retried: it would be rejected every time).
func TestT4AnInvalidCallFailsAloneBesideAValidOne(t *testing.T) {
	w := newWorld(t, 2, 73)
	m := NewMetrics(nil)
	admin := w.newClient(70, asAdmin(w, nil, m))
	w.runUntil("start-up", time.Minute, func() bool { return admin.started })
	bad := admin.start(txn.NewBuilder().Insert([]byte("\x00mine"), []byte("x")).Meta(), Options{})
	good := admin.start(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")), Options{})
	w.settle()
	require.ErrorIs(t, bad.err, client.ErrRejected)
	var rej *client.RejectedError
	require.ErrorAs(t, bad.err, &rej)
	require.True(t, rej.Call, "the call alone was rejected, not its envelope")
	require.NoError(t, good.err)
	require.Empty(t, anomalies(m))
	st := admin.core.Stats()
	require.Equal(t, st.NextNonce, st.Watermark)
}
