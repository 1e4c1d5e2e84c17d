package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

func TestInitWritesAClusterWithOneKeyPerReplicaAndClient(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, out, stderr := runMain(t, "init", "--dir", dir, "--groups", "2", "--f", "1", "--base-port", "7000", "--clients", "2")
	require.Equal(t, 0, code, stderr)
	c, err := cluster.Load(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.Len(t, c.Groups, 2)
	require.Len(t, c.Clients, 2)
	for _, name := range append(replicaNames(c), "client0", "client1") {
		fi, err := os.Stat(cluster.KeyPath(dir, name))
		require.NoError(t, err, name)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), name)
	}
	_, err = cluster.LoadReplicaKey(dir, "g1r3")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7021", c.Groups[1].Replicas[3].PeerAddr)
	for _, want := range []string{"2 group(s) of 4 replicas (f=1)", "g1r3", "127.0.0.1:7023", "augustus start --dir " + dir} {
		require.Contains(t, out, want)
	}
}

func TestInitSetsCheckpointIntervalAndLogWindow(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runMain(t, "init", "--dir", dir, "--groups", "1", "--checkpoint-interval", "8", "--log-window", "16", "--client-policy", "open", "--clients", "0")
	require.Equal(t, 0, code, stderr)
	c, err := cluster.Load(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.Equal(t, uint64(8), c.CheckpointInterval)
	require.Equal(t, uint64(16), c.LogWindow)
	require.Equal(t, cluster.PolicyOpen, c.ClientPolicy)
}

func TestInitDefaultsToOneGroupOfFour(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runMain(t, "init", "--dir", dir, "--base-port", "7000")
	require.Equal(t, 0, code, stderr)
	c, err := cluster.Load(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.Len(t, c.Groups, 1)
	require.Len(t, c.Groups[0].Replicas, 4)
	require.Contains(t, out, "1 group(s) of 4 replicas (f=1)")
}

func TestInitRefusesToOverwriteACluster(t *testing.T) {
	dir := t.TempDir()
	code, _, _ := runMain(t, "init", "--dir", dir)
	require.Equal(t, 0, code)
	before, err := os.ReadFile(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	code, _, stderr := runMain(t, "init", "--dir", dir)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "exists; refusing to overwrite")
	after, err := os.ReadFile(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.Equal(t, before, after)
}

func TestInitRejectsBadParameters(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"negative f":        {[]string{"--f", "-1"}, "f=-1"},
		"f too large":       {[]string{"--f", "30"}, "f=30"},
		"port overflow":     {[]string{"--base-port", "65530"}, "need ports 65530..65541"},
		"no groups":         {[]string{"--groups", "0"}, "0 groups"},
		"unknown policy":    {[]string{"--client-policy", "anyone"}, `--client-policy "anyone"`},
		"listed no clients": {[]string{"--clients", "0"}, "needs at least one client"},
		"bad log window":    {[]string{"--checkpoint-interval", "8", "--log-window", "12"}, "multiple of --checkpoint-interval"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c")
			code, _, stderr := runMain(t, append([]string{"init", "--dir", dir}, tc.args...)...)
			require.Equal(t, 1, code)
			require.Contains(t, stderr, tc.want)
			_, err := os.Stat(filepath.Join(dir, cluster.FileName))
			require.True(t, os.IsNotExist(err), "no cluster.json after a failed init")
		})
	}
}

func TestInitRequiresDir(t *testing.T) {
	code, _, stderr := runMain(t, "init")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, `"dir" not set`)
}

func TestEveryCommandHasAnExampleAndHelp(t *testing.T) {
	for _, cmd := range NewRootCommand().Commands() {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		require.NotEmpty(t, strings.TrimSpace(cmd.Example), "command %s has no example", cmd.Name())
		require.NotEmpty(t, cmd.Short, "command %s has no short help", cmd.Name())
		code, out, _ := runMain(t, cmd.Name(), "--help")
		require.Equal(t, 0, code)
		require.Contains(t, out, "Examples:", cmd.Name())
	}
}

func TestInitCreatesTheSQLRootWithAGeneratedPasswordShownOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, out, stderr := runMain(t, "init", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	pw, err := cluster.ReadSQLRootPassword(dir)
	require.NoError(t, err)
	require.Contains(t, out, "SQL user root: password "+pw)
	require.Contains(t, out, cluster.SQLRootPasswordPath(dir))
	require.Contains(t, out, "augustus gateway --dir "+dir+" --admin admin0")
	fi, err := os.Stat(cluster.SQLRootPasswordPath(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	c, err := cluster.Load(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.Equal(t, []cluster.SQLUser{{Name: "root", Host: "%", Plugin: cluster.PluginNativePassword, AuthString: cluster.NativePasswordHash(pw)}}, c.SQLUsers)
	data, err := os.ReadFile(filepath.Join(dir, cluster.FileName))
	require.NoError(t, err)
	require.False(t, strings.Contains(string(data), pw), "cluster.json holds the hash only")
}
