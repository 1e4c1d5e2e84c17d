package cluster

import (
	"crypto/ed25519"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func TestReplicaIDFindsGroupAndIndex(t *testing.T) {
	c := validCluster(t)
	g, id, err := c.ReplicaID("g1r3")
	require.NoError(t, err)
	require.Equal(t, bft.GroupID(1), g)
	require.Equal(t, bft.ReplicaID(3), id)
	_, _, err = c.ReplicaID("nobody")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestGroupKeysAreInIndexOrderWhateverTheFileOrder(t *testing.T) {
	c := validCluster(t)
	want, err := c.GroupKeys(1)
	require.NoError(t, err)
	rs := c.Groups[1].Replicas
	rs[0], rs[3] = rs[3], rs[0]
	rs[1], rs[2] = rs[2], rs[1]
	require.NoError(t, c.Validate())
	got, err := c.GroupKeys(1)
	require.NoError(t, err)
	require.Equal(t, want, got)
	for i, k := range got {
		require.Equal(t, c.Groups[1].ReplicasByIndex()[i].PublicKey, auth.EncodePublicKey(k))
	}
	_, err = c.GroupKeys(5)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestReplicaKeysListsEveryReplica(t *testing.T) {
	c := validCluster(t)
	keys, err := c.ReplicaKeys()
	require.NoError(t, err)
	require.Len(t, keys, 8)
	g, r, err := c.ReplicaByKey(keys[6])
	require.NoError(t, err)
	require.Equal(t, uint32(1), g.ID)
	require.Equal(t, "g1r2", r.Name)
	_, _, err = c.ReplicaByKey(make(ed25519.PublicKey, 32))
	require.ErrorIs(t, err, ErrNotFound)
}

func TestVerifierAppliesTheListedPolicy(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 7000, Clients: 1})
	v, err := c.Verifier(0)
	require.NoError(t, err)
	require.Equal(t, auth.ClientsListed, v.Policy())
	require.Equal(t, 4, v.N())

	listed, err := auth.NewSigner(keyOf(t, dir, "client0"))
	require.NoError(t, err)
	msg := []byte("envelope")
	require.NoError(t, v.VerifyClient(listed.ClientID(), msg, listed.Sign(msg)))

	strangerKey, err := auth.GenerateKey()
	require.NoError(t, err)
	stranger, err := auth.NewSigner(strangerKey)
	require.NoError(t, err)
	require.ErrorIs(t, v.VerifyClient(stranger.ClientID(), msg, stranger.Sign(msg)), auth.ErrClientNotAllowed)

	// A replica of group 1 is not a member of group 0.
	g1r0, err := auth.NewSigner(keyOf(t, dir, "g1r0"))
	require.NoError(t, err)
	require.ErrorIs(t, v.VerifyReplica(0, msg, g1r0.Sign(msg)), auth.ErrBadSignature)
	_, err = c.Verifier(2)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestVerifierAppliesTheOpenPolicy(t *testing.T) {
	c := validCluster(t)
	c.ClientPolicy = PolicyOpen
	v, err := c.Verifier(1)
	require.NoError(t, err)
	key, err := auth.GenerateKey()
	require.NoError(t, err)
	s, err := auth.NewSigner(key)
	require.NoError(t, err)
	require.NoError(t, v.VerifyClient(s.ClientID(), []byte("m"), s.Sign([]byte("m"))))
}

func TestPeerKeysPinTheGroupsReplicas(t *testing.T) {
	c := validCluster(t)
	pk, err := c.PeerKeys(1)
	require.NoError(t, err)
	keys, err := c.GroupKeys(1)
	require.NoError(t, err)
	for i, k := range keys {
		idx, ok := pk.Index(k)
		require.True(t, ok)
		require.Equal(t, uint32(i), idx)
	}
	other, err := c.GroupKeys(0)
	require.NoError(t, err)
	require.ErrorIs(t, pk.Accept(other[0]), auth.ErrUnknownPeer)
}

func TestBFTConfigCarriesTheClusterParameters(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 7000, Clients: 1, ClusterID: "c1"})
	cfg, err := c.BFTConfig("g1r2")
	require.NoError(t, err)
	require.Equal(t, "c1", cfg.ClusterID)
	require.Equal(t, bft.GroupID(1), cfg.Group)
	require.Equal(t, bft.ReplicaID(2), cfg.ID)
	require.Equal(t, 4, cfg.N)
	require.Equal(t, 1, cfg.F)
	require.Equal(t, uint64(c.ClientWindow), cfg.ClientWindow)
	require.Equal(t, bft.SeqNum(c.CheckpointInterval), cfg.CheckpointInterval)
	require.Equal(t, bft.SeqNum(c.LogWindow), cfg.LogWindow)

	s, err := auth.NewSigner(keyOf(t, dir, "g1r2"))
	require.NoError(t, err)
	cfg.Signer = s
	require.NoError(t, cfg.Validate())
	_, err = c.BFTConfig("nobody")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestPolicyParsesTheClientPolicy(t *testing.T) {
	c := validCluster(t)
	p, err := c.Policy()
	require.NoError(t, err)
	require.Equal(t, auth.ClientsListed, p)
	c.ClientPolicy = "bogus"
	_, err = c.Policy()
	require.ErrorIs(t, err, ErrUnknownPolicy)
}
