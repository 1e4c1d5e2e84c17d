package replica

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth/zip215test"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// newIdleReplica builds replica i of g without running it: its handler can
// be called and its inbox read directly.
func newIdleReplica(t *testing.T, g *testGroup, i int) *Replica {
	t.Helper()
	rep := g.cluster.Groups[0].Replicas[i]
	r, err := New(Config{
		Cluster: g.cluster, Name: rep.Name, Key: g.keys[i], DataDir: filepath.Join(t.TempDir(), rep.Name),
		ConfigureCore: testCore(g.configure), Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.engine.Close() })
	return r
}

func signedPrepare(dom *bft.Domain, key ed25519.PrivateKey, from uint32, seq uint64, sign func(ed25519.PrivateKey, []byte) []byte) *bftpb.Message {
	p := &bftpb.Prepare{View: 0, Seq: seq, Digest: make([]byte, 32), Replica: from}
	p.Signature = sign(key, dom.PrepareBytes(p))
	return &bftpb.Message{From: from, Body: &bftpb.Message_Prepare{Prepare: p}}
}

// The messages of one peer write are verified as one batch; a bad
// signature among them is found by checking each alone, so exactly the
// forged message is rejected and the others reach the loop, in order. A
// signature only the ZIP-215 rules accept passes like any valid one, in a
// batch and alone: every verifier of the group decides alike.
func TestBatchedVerificationRejectsExactlyTheForgedMessage(t *testing.T) {
	g := newTestGroup(t, 1, nil)
	r := newIdleReplica(t, g, 0)
	dom := r.dom
	zip := func(k ed25519.PrivateKey, m []byte) []byte { return zip215test.Sign(k, m) }
	forged := signedPrepare(dom, g.keys[3], 3, 3, ed25519.Sign)
	forged.GetPrepare().Signature[9] ^= 1
	for _, tc := range []struct {
		name string
		ms   []*bftpb.Message
		want []uint64 // seqs that reach the loop
	}{
		{"all valid", []*bftpb.Message{
			signedPrepare(dom, g.keys[1], 1, 1, ed25519.Sign),
			signedPrepare(dom, g.keys[2], 2, 2, zip),
		}, []uint64{1, 2}},
		{"one forged", []*bftpb.Message{
			signedPrepare(dom, g.keys[1], 1, 11, ed25519.Sign),
			forged,
			signedPrepare(dom, g.keys[2], 2, 12, zip),
		}, []uint64{11, 12}},
		{"alone", []*bftpb.Message{signedPrepare(dom, g.keys[2], 2, 21, zip)}, []uint64{21}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(r.metrics.Rejected.WithLabelValues(bftpb.KindName(forged)))
			handler{r}.OnMessages(context.Background(), 0, tc.ms)
			var got []uint64
			if len(r.inbox) > 0 {
				in := <-r.inbox
				for _, m := range in.msgs {
					got = append(got, m.GetPrepare().GetSeq())
				}
			}
			require.Equal(t, tc.want, got)
			require.Empty(t, r.inbox)
			require.Equal(t, float64(len(tc.ms)-len(tc.want)), testutil.ToFloat64(r.metrics.Rejected.WithLabelValues(bftpb.KindName(forged)))-before)
		})
	}
}
