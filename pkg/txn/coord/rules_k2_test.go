package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/txn"
)

// Byzantine replica behaviours (txn.md, end: wrong votes, wrong results,
// signatures on the wrong vote, refusals where a vote is due, silence).
var byzantine = map[string]func(*bftpb.Reply) *bftpb.Reply{
	"wrong results": func(rep *bftpb.Reply) *bftpb.Reply {
		res, err := envelope.DecodeResults(rep.Result)
		if err != nil {
			return rep
		}
		for i := range res {
			if len(res[i]) > 39 {
				res[i] = append([]byte(nil), res[i]...)
				res[i][len(res[i])-1] ^= 0xff // a value, a watermark, a read
			}
		}
		rep.Result = envelope.EncodeResults(res)
		return rep
	},
	"wrong votes": func(rep *bftpb.Reply) *bftpb.Reply {
		res, err := envelope.DecodeResults(rep.Result)
		if err != nil {
			return rep
		}
		for i := range res {
			if r, err := txn.DecodeResult(res[i]); err == nil && r.Kind == txn.ResultVote {
				flip := &txn.Result{Kind: txn.ResultVote, Signed: r.Signed, ID: r.ID, Group: r.Group, Watermark: r.Watermark}
				if r.Decision == txn.Commit {
					flip.Decision, flip.Reason = txn.Abort, txn.ReasonConflict
				} else {
					flip.Decision = txn.Commit
				}
				res[i] = flip.Encode()
			}
		}
		rep.Result = envelope.EncodeResults(res)
		return rep // its signatures are over the true votes: they do not match
	},
	"bad signatures": func(rep *bftpb.Reply) *bftpb.Reply {
		sigs, err := envelope.DecodeResults(rep.Signatures)
		if err != nil {
			return rep
		}
		for i := range sigs {
			if len(sigs[i]) > 0 {
				sigs[i] = append([]byte(nil), sigs[i]...)
				sigs[i][0] ^= 1
			}
		}
		rep.Signatures = envelope.EncodeResults(sigs)
		return rep
	},
	"refusals": func(rep *bftpb.Reply) *bftpb.Reply {
		rep.Status = bftpb.ReplyStatus_REPLY_STATUS_REJECTED
		rep.Result = append(make([]byte, 32), "no"...)
		return rep
	},
	"silence": func(*bftpb.Reply) *bftpb.Reply { return nil },
}

// txn.md K2: a group's vote and results are accepted only on f+1 matching
// authenticated replies (with valid signatures where signed): one Byzantine
// replica per group, whatever it does, changes neither outcomes nor
// results, and the certificates built stay valid at the other groups.
func TestK2ByzantineReplicasAreOutvoted(t *testing.T) {
	for name, byz := range byzantine {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, 2, 50)
			for _, g := range w.groups {
				g.replicas[3].byz = byz
			}
			m := NewMetrics(nil)
			c := w.newClient(50, observe(nil, m))
			_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
			require.NoError(t, err)
			res, err := c.do(txn.NewBuilder().Read(k0).Read(k1))
			require.NoError(t, err)
			require.Equal(t, []byte("a"), res.Ops[0].Value)
			require.Equal(t, []byte("b"), res.Ops[1].Value)
			res, err = c.do(txn.NewBuilder().Write(k0, []byte("a2")).Cmp(k1, []byte("nope")))
			require.ErrorIs(t, err, txn.ErrCompareFailed)
			require.Equal(t, bft.GroupID(1), res.Abort.Group)
			res, err = c.do(txn.NewBuilder().Write(k0, []byte("a3")).Cmp(k1, []byte("b")).Read(k1))
			require.NoError(t, err)
			require.Equal(t, []byte("b"), res.Ops[2].Value)
			w.settle()
			v, _ := w.group(0).userValue(k0)
			require.Equal(t, []byte("a3"), v)
			require.Empty(t, anomalies(m))
			require.Equal(t, uint64(4), c.core.Stats().Watermark)
		})
	}
}

// txn.md K2: the core takes a group's answer only about the transaction and
// group it asked; an answer about another (which f+1 correct replicas never
// give: more than f faulty, or a broken Env) is counted and asked again.
func TestK2ResultAboutAnotherTransactionIsNotTaken(t *testing.T) {
	w := newWorld(t, 2, 51)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(nil, m))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	lies := 2
	c.mangle = func(g bft.GroupID, res *client.Result) {
		if g != 1 || lies == 0 || res.Err != nil {
			return
		}
		r, err := txn.DecodeResult(res.Value)
		if err != nil || r.Kind != txn.ResultVote {
			return
		}
		lies--
		r.ID[0] ^= 1
		res.Value = r.Encode()
	}
	res, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	require.Equal(t, 1, res.Attempts)
	require.Equal(t, 2.0, counter(t, m, "anomalies", "wrong_result"))
	w.settle()
}

// txn.md K2, E10: a signed vote whose signatures are fewer than f+1 usable
// ones makes no certificate part: the core asks again rather than send a
// certificate the groups would reject.
func TestK2ShortSignaturesAreAskedAgain(t *testing.T) {
	w := newWorld(t, 2, 52)
	m := NewMetrics(nil)
	c := w.newClient(50, observe(nil, m))
	w.runUntil("start-up", time.Minute, func() bool { return c.started })
	short := 1
	c.mangle = func(g bft.GroupID, res *client.Result) {
		if g == 0 && short > 0 && len(res.Sigs) > 0 {
			short--
			res.Sigs = res.Sigs[:1]
		}
	}
	_, err := c.do(txn.NewBuilder().Insert(k0, []byte("a")).Insert(k1, []byte("b")))
	require.NoError(t, err)
	require.Equal(t, 1.0, counter(t, m, "anomalies", "short_signatures"))
	w.settle()
}
