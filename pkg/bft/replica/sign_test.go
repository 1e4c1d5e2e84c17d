package replica

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// A round may bring more messages to sign than one tree takes: they are
// signed in trees of at most maxSignBatch, each message's signature verifies
// it, and the metrics count one signature per tree.
func TestSignTreesSplitsALargeRoundIntoBoundedTrees(t *testing.T) {
	priv, err := auth.GenerateKey()
	require.NoError(t, err)
	s, err := auth.NewSigner(priv)
	require.NoError(t, err)
	r := &Replica{signer: s, metrics: host.NewMetrics(nil)}
	msgs := make([][]byte, 2*maxSignBatch+3)
	for i := range msgs {
		msgs[i] = []byte(fmt.Sprintf("vote %d", i))
	}
	sigs := r.signTrees(msgs)
	require.Len(t, sigs, len(msgs))
	for i, m := range msgs {
		require.True(t, auth.VerifySignature(s.PublicKey(), m, sigs[i]), "message %d", i)
	}
	require.Len(t, sigs[0], auth.TreeSignatureSize(10), "a full tree of 1024")
	require.Len(t, sigs[len(sigs)-1], auth.TreeSignatureSize(2), "the last 3 in their own tree")
	require.Equal(t, 3.0, testutil.ToFloat64(r.metrics.ReplySignatures))
	require.Equal(t, float64(len(msgs)), testutil.ToFloat64(r.metrics.ReplySignedMessages))
}
