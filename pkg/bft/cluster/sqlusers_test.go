package cluster

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MySQL's own PASSWORD('root') and PASSWORD('secret') of mysql_native_password.
func TestNativePasswordHashIsMySQLs(t *testing.T) {
	require.Equal(t, "*81F5E21E35407D884A6CD4A731AEBFB6AF209E1B", NativePasswordHash("root"))
	require.Equal(t, "*14E65567ABDB5135D0CFD9A70B3032C179A49EE7", NativePasswordHash("secret"))
	require.Equal(t, "", NativePasswordHash(""), "no password: an empty authentication string")
}

func TestGeneratedRootPasswordIsWrittenOnceOwnerOnlyAndItsHashIsInTheClusterFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	opts := DefaultGenerateOptions(dir)
	opts.SQLRoot = SQLRootGenerated
	c, err := Generate(opts)
	require.NoError(t, err)

	pw, err := ReadSQLRootPassword(dir)
	require.NoError(t, err)
	require.Len(t, pw, 24)
	require.Equal(t, strings.Trim(pw, passwordAlphabet), "", "only characters a shell leaves alone")
	fi, err := os.Stat(SQLRootPasswordPath(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	loaded, err := Load(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, c.SQLUsers, loaded.SQLUsers)
	require.Equal(t, []SQLUser{{Name: "root", Host: "%", Plugin: PluginNativePassword, AuthString: NativePasswordHash(pw)}}, loaded.SQLUsers)
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.NotContains(t, string(data), pw, "the cluster file holds the hash, never the password")

	// Another cluster gets another password.
	dir2 := filepath.Join(t.TempDir(), "c2")
	opts.Dir = dir2
	_, err = Generate(opts)
	require.NoError(t, err)
	pw2, err := ReadSQLRootPassword(dir2)
	require.NoError(t, err)
	require.NotEqual(t, pw, pw2)
}

func TestDemoRootHasNoPasswordAndNoPasswordFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	opts := DefaultGenerateOptions(dir)
	opts.SQLRoot = SQLRootNoPassword
	c, err := Generate(opts)
	require.NoError(t, err)
	require.Equal(t, []SQLUser{{Name: "root", Host: "%", Plugin: PluginNativePassword}}, c.SQLUsers)
	_, err = os.Stat(SQLRootPasswordPath(dir))
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

func TestNoSQLRootByDefault(t *testing.T) {
	c, _ := generate(t, DefaultGenerateOptions(""))
	require.Empty(t, c.SQLUsers)
}

func TestPasswordFileIsNeverOverwritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p")
	require.NoError(t, writePasswordFile(path, "one"))
	err := writePasswordFile(path, "two")
	require.ErrorIs(t, err, fs.ErrExist)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "one\n", string(data))
}

func TestValidateRejectsBadSQLUsers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		users []SQLUser
		kind  error
		want  string
	}{
		{"empty name", []SQLUser{{Name: ""}}, ErrBadName, "sql_users[0]"},
		{"long name", []SQLUser{{Name: strings.Repeat("u", 33)}}, ErrBadName, "1 to 32"},
		{"quote in name", []SQLUser{{Name: "a'b"}}, ErrBadName, "must be"},
		{"duplicate account", []SQLUser{{Name: "app"}, {Name: "app", Host: "%"}}, ErrDuplicate, "app@%"},
		{"bad host", []SQLUser{{Name: "app", Host: "a b"}}, ErrBadParameter, "host"},
		{"unknown plugin", []SQLUser{{Name: "app", Plugin: "sha256_password"}}, ErrBadParameter, "plugin"},
		{"clear password in the hash", []SQLUser{{Name: "app", AuthString: "secret"}}, ErrBadParameter, "40 upper-case hex"},
		{"lower-case hash", []SQLUser{{Name: "app", AuthString: strings.ToLower(NativePasswordHash("x"))}}, ErrBadParameter, "40 upper-case hex"},
		{"native hash under sha2", []SQLUser{{Name: "app", Plugin: PluginCachingSHA2, AuthString: NativePasswordHash("x")}}, ErrBadParameter, "$A$"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _, err := build(GenerateOptions{Dir: "unused", ClusterID: "test", Groups: 1, F: 1, BasePort: 7000, Clients: 1})
			require.NoError(t, err)
			c.SQLUsers = tc.users
			err = c.Validate()
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorIs(t, err, tc.kind)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestValidateAcceptsSQLUsersOfBothPluginsAndHosts(t *testing.T) {
	c, _, _, err := build(GenerateOptions{Dir: "unused", ClusterID: "test", Groups: 1, F: 1, BasePort: 7000, Clients: 1})
	require.NoError(t, err)
	c.SQLUsers = []SQLUser{
		{Name: "root"},
		{Name: "root", Host: "localhost", AuthString: NativePasswordHash("pw")},
		{Name: "app", Plugin: PluginCachingSHA2, AuthString: "$A$005$0123456789012345678901234567890123456789012345678901234567890123456"},
	}
	require.NoError(t, c.Validate())
	require.Equal(t, "%", c.SQLUsers[0].EffectiveHost())
	require.Equal(t, PluginNativePassword, c.SQLUsers[0].EffectivePlugin())
}

// A cluster file written before SQL users existed loads unchanged.
func TestClusterFileWithoutSQLUsersLoads(t *testing.T) {
	c, dir := generate(t, DefaultGenerateOptions(""))
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.NotContains(t, string(data), "sql_users")
	loaded, err := Parse(data)
	require.NoError(t, err)
	require.Equal(t, c, loaded)
}
