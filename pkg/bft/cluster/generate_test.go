package cluster

import (
	"crypto/ed25519"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func generate(t *testing.T, opts GenerateOptions) (*Cluster, string) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "cluster")
	}
	c, err := Generate(opts)
	require.NoError(t, err)
	return c, opts.Dir
}

func TestGenerateThenLoadGivesAValidCluster(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "cluster")
	c, err := Generate(DefaultGenerateOptions(dir))
	require.NoError(t, err)
	loaded, err := Load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, c, loaded)
	require.NoError(t, loaded.Validate())

	require.Len(t, loaded.Groups, 2)
	require.Equal(t, 1, loaded.F)
	require.Equal(t, PolicyListed, loaded.ClientPolicy)
	require.Len(t, loaded.Clients, 1)
	require.Equal(t, DefaultClientWindow, loaded.ClientWindow)
	require.Regexp(t, `^augustus-[0-9a-f]{16}$`, loaded.ClusterID)
}

func TestGenerateWritesOneOwnerOnlyKeyFilePerReplicaAndClient(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 9000, Clients: 3})
	fi, err := os.Stat(filepath.Join(dir, KeysDir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	var names []string
	for _, g := range c.Groups {
		for _, r := range g.Replicas {
			names = append(names, r.Name)
		}
	}
	for _, cl := range c.Clients {
		names = append(names, cl.Name)
	}
	require.Len(t, names, 8+3)
	entries, err := os.ReadDir(filepath.Join(dir, KeysDir))
	require.NoError(t, err)
	require.Len(t, entries, len(names))
	for _, name := range names {
		fi, err := os.Stat(KeyPath(dir, name))
		require.NoError(t, err, name)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	require.Equal(t, []string{"client0", "client1", "client2"}, names[8:])
}

func TestGenerateLaysOutPortsDeterministically(t *testing.T) {
	c, _ := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 7000, Host: "10.0.0.5", ClusterID: "prod", ClientPolicy: PolicyOpen})
	require.Equal(t, "prod", c.ClusterID)
	require.Equal(t, PolicyOpen, c.ClientPolicy)
	r := c.Groups[0].Replicas[0]
	require.Equal(t, Replica{Name: "g0r0", Index: 0, PeerAddr: "10.0.0.5:7000", ClientAddr: "10.0.0.5:7001", MetricsAddr: "10.0.0.5:7002", PublicKey: r.PublicKey}, r)
	r = c.Groups[0].Replicas[3]
	require.Equal(t, []string{"g0r3", "10.0.0.5:7009", "10.0.0.5:7010", "10.0.0.5:7011"}, []string{r.Name, r.PeerAddr, r.ClientAddr, r.MetricsAddr})
	r = c.Groups[1].Replicas[2]
	require.Equal(t, []string{"g1r2", "10.0.0.5:7018", "10.0.0.5:7019", "10.0.0.5:7020"}, []string{r.Name, r.PeerAddr, r.ClientAddr, r.MetricsAddr})
	require.Equal(t, SplitFirstByte(2), c.Partitions)
}

func TestGenerateBracketsIPv6Hosts(t *testing.T) {
	c, _ := generate(t, GenerateOptions{Groups: 1, F: 0, BasePort: 7000, Host: "::1", ClientPolicy: PolicyOpen})
	require.Equal(t, "[::1]:7000", c.Groups[0].Replicas[0].PeerAddr)
	c, _ = generate(t, GenerateOptions{Groups: 1, F: 0, BasePort: 7000, Host: "[::1]", ClientPolicy: PolicyOpen})
	require.Equal(t, "[::1]:7001", c.Groups[0].Replicas[0].ClientAddr)
}

func TestGenerateRefusesToOverwriteACluster(t *testing.T) {
	_, dir := generate(t, GenerateOptions{Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	before, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	_, err = Generate(GenerateOptions{Dir: dir, Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	require.ErrorIs(t, err, fs.ErrExist)
	after, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestGenerateRefusesToOverwriteLeftoverKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, KeysDir), 0o700))
	require.NoError(t, os.WriteFile(KeyPath(dir, "g0r0"), []byte("old"), 0o600))
	_, err := Generate(GenerateOptions{Dir: dir, Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	require.ErrorIs(t, err, fs.ErrExist)
	_, err = os.Stat(filepath.Join(dir, FileName))
	require.ErrorIs(t, err, fs.ErrNotExist, "no cluster file for an incomplete cluster")
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]GenerateOptions{
		"no dir":             {Groups: 1, F: 1, BasePort: 7000, Clients: 1},
		"no groups":          {Dir: dir, Groups: 0, F: 1, BasePort: 7000, Clients: 1},
		"too many groups":    {Dir: dir, Groups: 257, F: 0, BasePort: 1000, Clients: 1},
		"negative f":         {Dir: dir, Groups: 1, F: -1, BasePort: 7000, Clients: 1},
		"no base port":       {Dir: dir, Groups: 1, F: 1, BasePort: 0, Clients: 1},
		"ports overflow":     {Dir: dir, Groups: 2, F: 1, BasePort: 65530, Clients: 1},
		"huge base port":     {Dir: dir, Groups: 1, F: 1, BasePort: math.MaxInt, Clients: 1},
		"negative clients":   {Dir: dir, Groups: 1, F: 1, BasePort: 7000, Clients: -1},
		"listed, no clients": {Dir: dir, Groups: 1, F: 1, BasePort: 7000},
		"unknown policy":     {Dir: dir, Groups: 1, F: 1, BasePort: 7000, ClientPolicy: "everyone"},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Generate(opts)
			require.Error(t, err)
			_, statErr := os.Stat(filepath.Join(dir, FileName))
			require.ErrorIs(t, statErr, fs.ErrNotExist)
		})
	}
}

func TestGeneratedKeysSignForTheirReplicas(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 7000, Clients: 1})
	for _, g := range c.Groups {
		v, err := c.Verifier(bft.GroupID(g.ID))
		require.NoError(t, err)
		for _, r := range g.Replicas {
			priv, err := LoadReplicaKey(dir, r.Name)
			require.NoError(t, err)
			s, err := auth.NewSigner(priv)
			require.NoError(t, err)
			msg := []byte("prepare")
			require.NoError(t, v.VerifyReplica(bft.ReplicaID(r.Index), msg, s.Sign(msg)), r.Name)
		}
	}
}

// keyOf loads a private key file without the cluster check.
func keyOf(t *testing.T, dir, name string) ed25519.PrivateKey {
	t.Helper()
	priv, err := auth.LoadPrivateKeyFile(KeyPath(dir, name))
	require.NoError(t, err)
	return priv
}
