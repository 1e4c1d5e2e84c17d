package client

import (
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/auth/zip215test"
)

// The client checks replicas' signatures of results by the ZIP-215 rules,
// as the replicas check every signature: one that crypto/ed25519 rejects
// and ZIP-215 accepts counts like any valid one; a wrong one does not.
func TestClientAcceptsZIP215SignaturesLikeTheReplicas(t *testing.T) {
	var keys []ed25519.PublicKey
	var privs []ed25519.PrivateKey
	for range 4 {
		priv, err := auth.GenerateKey()
		require.NoError(t, err)
		privs = append(privs, priv)
		keys = append(keys, auth.PublicKeyOf(priv))
	}
	verify, err := replicaSignatureVerifier(keys)
	require.NoError(t, err)
	msg := []byte("a vote to sign")
	sig := zip215test.Sign(privs[2], msg)
	require.False(t, ed25519.Verify(keys[2], msg, sig))
	require.True(t, verify(2, msg, sig))
	require.True(t, verify(1, msg, ed25519.Sign(privs[1], msg)))
	require.False(t, verify(1, msg, sig), "another replica's key")
	require.False(t, verify(7, msg, sig), "no such replica")
}
