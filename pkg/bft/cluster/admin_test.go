package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func TestGenerateWritesAnAdminKeyThatMatchesTheClusterFile(t *testing.T) {
	c, dir := generate(t, GenerateOptions{Groups: 2, F: 1, BasePort: 7000, Clients: 1, Admins: 1})
	require.Len(t, c.Admins, 1)
	require.Equal(t, "admin0", c.Admins[0].Name)
	fi, err := os.Stat(KeyPath(dir, "admin0"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	priv, err := LoadAdminKey(dir, "admin0")
	require.NoError(t, err)
	keys, err := c.AdminKeys()
	require.NoError(t, err)
	require.Equal(t, []byte(keys[0]), []byte(auth.PublicKeyOf(priv)))

	// A client key is not an admin key.
	_, err = c.LoadAdminKeyFile("admin0", KeyPath(dir, "client0"))
	require.ErrorIs(t, err, ErrKeyMismatch)
	_, err = c.Admin("admin1")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestDefaultGenerateOptionsCreateOneAdmin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	c, err := Generate(DefaultGenerateOptions(dir))
	require.NoError(t, err)
	require.Len(t, c.Admins, 1)
	loaded, err := Load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, c.Admins, loaded.Admins)
}

func TestValidateRejectsAnAdminSharingAKeyOrNameWithAClient(t *testing.T) {
	c := validCluster(t)
	c.Admins = []Admin{{Name: "admin0", PublicKey: c.Clients[0].PublicKey}}
	requireProblem(t, c, ErrDuplicate, `admin "admin0": public_key is also the key of client "client0"`)

	c = validCluster(t)
	pub, _ := auth.GenerateKey()
	c.Admins = []Admin{{Name: "client0", PublicKey: auth.EncodePublicKey(auth.PublicKeyOf(pub))}}
	requireProblem(t, c, ErrDuplicate, `name "client0" is also used by`)

	c = validCluster(t)
	c.Admins = []Admin{{Name: "admin0", PublicKey: "not base64"}}
	requireProblem(t, c, ErrBadKey, `admin "admin0": public_key`)
}

func TestClusterFileWithoutAdminsStillLoads(t *testing.T) {
	c := validCluster(t)
	data, err := c.Marshal()
	require.NoError(t, err)
	require.NotContains(t, string(data), "admins")
	parsed, err := Parse(data)
	require.NoError(t, err)
	require.Empty(t, parsed.Admins)
}
