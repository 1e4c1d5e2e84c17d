package cluster

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func TestLoadReplicaKeyReturnsTheReplicasKey(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	priv, err := LoadReplicaKey(dir, "g0r1")
	require.NoError(t, err)
	require.Equal(t, c.Groups[0].Replicas[1].PublicKey, auth.EncodePublicKey(auth.PublicKeyOf(priv)))
}

func TestLoadReplicaKeyDetectsAKeyFileOfAnotherReplica(t *testing.T) {
	_, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	other, err := os.ReadFile(KeyPath(dir, "g0r2"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(KeyPath(dir, "g0r1")))
	require.NoError(t, os.WriteFile(KeyPath(dir, "g0r1"), other, 0o600))

	_, err = LoadReplicaKey(dir, "g0r1")
	require.ErrorIs(t, err, ErrKeyMismatch)
	require.ErrorContains(t, err, "key file "+KeyPath(dir, "g0r1")+" does not match the public key of g0r1 in cluster.json")
}

func TestLoadReplicaKeyRefusesAKeyFileReadableByOthers(t *testing.T) {
	_, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	require.NoError(t, os.Chmod(KeyPath(dir, "g0r0"), 0o644))
	_, err := LoadReplicaKey(dir, "g0r0")
	require.ErrorIs(t, err, auth.ErrInsecureKeyFile)
	require.ErrorContains(t, err, "chmod 600")
}

func TestLoadReplicaKeyRejectsUnknownNames(t *testing.T) {
	_, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	_, err := LoadReplicaKey(dir, "g9r9")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = LoadReplicaKey(dir, "client0")
	require.ErrorIs(t, err, ErrNotFound, "a client is not a replica")
}

func TestLoadReplicaKeyReportsAMissingKeyFile(t *testing.T) {
	_, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	require.NoError(t, os.Remove(KeyPath(dir, "g0r3")))
	_, err := LoadReplicaKey(dir, "g0r3")
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadClientKeyChecksTheClientsKey(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 2})
	priv, err := LoadClientKey(dir, "client1")
	require.NoError(t, err)
	require.Equal(t, c.Clients[1].PublicKey, auth.EncodePublicKey(auth.PublicKeyOf(priv)))

	_, err = c.LoadClientKeyFile("client0", KeyPath(dir, "client1"))
	require.ErrorIs(t, err, ErrKeyMismatch)
	_, err = LoadClientKey(dir, "g0r0")
	require.ErrorIs(t, err, ErrNotFound, "a replica is not a client")
}

func TestLoadReplicaKeyFileTakesAnyPath(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	elsewhere := t.TempDir() + "/mounted.key"
	require.NoError(t, auth.WritePrivateKeyFile(elsewhere, keyOf(t, dir, "g0r2")))
	priv, err := c.LoadReplicaKeyFile("g0r2", elsewhere)
	require.NoError(t, err)
	require.Equal(t, keyOf(t, dir, "g0r2"), priv)
}
