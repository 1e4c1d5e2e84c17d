package cli

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// Flags that cannot work are refused before the gateway connects to
// anything.
func TestGatewayRefusesBadFlagsAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, _, stderr := runMain(t, "init", "--dir", dir, "--base-port", fmt.Sprint(freeBasePort(t, 12)))
	require.Equal(t, 0, code, stderr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", "x.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"--require-tls"}, "--require-tls needs --tls-cert and --tls-key"},
		{[]string{"--tls-cert", "nope.pem", "--tls-key", "nope.key"}, "--tls-cert/--tls-key"},
		{[]string{"--drain-timeout", "0s"}, "--drain-timeout 0s: must be positive"},
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--admin", "admin7"}, `--admin "admin7"`},
		{[]string{"--client", "client9"}, `--client "client9"`},
		{[]string{"--retry-rows", "0"}, "--retry-rows 0: must be positive"},
	} {
		code, _, stderr := runMainWithin(t, 30*time.Second, append([]string{"gateway", "--dir", dir, "--listen", "127.0.0.1:0"}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want, tc.args)
	}
	code, _, stderr = runMain(t, "gateway", "--dir", filepath.Join(t.TempDir(), "none"))
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "augustus init --dir")
}

// A cluster file without SQL accounts (one written before they existed)
// gets a message saying what to add.
func TestGatewaySaysHowToAddAnAccountWhenTheClusterHasNone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, _, stderr := runMain(t, "init", "--dir", dir, "--base-port", fmt.Sprint(freeBasePort(t, 12)))
	require.Equal(t, 0, code, stderr)
	path := filepath.Join(dir, cluster.FileName)
	c, err := cluster.Load(path)
	require.NoError(t, err)
	c.SQLUsers = nil
	require.NoError(t, c.Save(path))
	code, _, stderr = runMain(t, "gateway", "--dir", dir, "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "lists no SQL account (sql_users)")
	require.Contains(t, stderr, cluster.NativePasswordHash("secret"))
}

func TestGatewaySaysItsPortIsTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	code, _, stderr := runMain(t, "init", "--dir", dir, "--base-port", fmt.Sprint(freeBasePort(t, 12)))
	require.Equal(t, 0, code, stderr)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	code, _, stderr = runMain(t, "gateway", "--dir", dir, "--listen", lis.Addr().String())
	require.Equal(t, 1, code)
	require.Contains(t, stderr, lis.Addr().String()+" is taken")
	require.Contains(t, stderr, "--listen")
}

// Replicas started with another --app than the transaction engine (noop,
// the new user's case, or log) are named at start-up, with the
// command that starts them right.
func TestGatewaySaysTheReplicasRunAnotherApp(t *testing.T) {
	for _, app := range []string{appNoop, appLog} {
		t.Run(app, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c")
			code, _, stderr := runMain(t, "init", "--dir", dir, "--base-port", fmt.Sprint(freeBasePort(t, 12)))
			require.Equal(t, 0, code, stderr)
			startCluster(t, dir, app)
			code, out, stderr := runMainWithin(t, 90*time.Second, "gateway", "--dir", dir, "--listen", "127.0.0.1:0", "--connect-timeout", "60s")
			require.Equal(t, 1, code, out)
			require.Contains(t, stderr, "augustus start --dir "+dir+" --app txn")
		})
	}
}
