package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// runDemoScript runs the demo with a console script on stdin.
func runDemoScript(t *testing.T, dir string, base int, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb syncBuffer
	err := runDemo(ctx, strings.NewReader(script), &out, &errb, demoOptions{
		dir: dir, basePort: base, callTimeout: 20 * time.Second, readyWait: 60 * time.Second, grace: 10 * time.Second,
	})
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.NoError(t, ctx.Err(), "the demo did not finish in time")
	return out.String()
}

func TestDemoConsoleAppendsReadsAndSurvivesAKilledReplica(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 12)
	out := runDemoScript(t, dir, base, strings.Join([]string{
		"help",
		"append k hello world",
		"append k second",
		"read k",
		"len k",
		"kill g0r3",
		"append k while one is down",
		"status",
		"restart r3",
		"read k",
		"kill r9",
		"frobnicate",
		"quit",
		"append k never runs",
	}, "\n")+"\n")
	t.Log(out)
	for _, want := range []string{
		"Created the local cluster in " + dir,
		"The SQL shell arrives with the SQL layer",
		"augustus> append k hello world\nok: k has 1 entry",
		"ok: k has 2 entries",
		"k: 2 entries\n  1  hello world\n  2  second",
		"killed g0r3 (SIGKILL). 1 of 4 replicas down: the group still answers",
		"ok: k has 3 entries",
		"g0r3     down",
		"started g0r3",
		"k: 3 entries\n  1  hello world\n  2  second\n  3  while one is down",
		`unknown replica "r9"`,
		`unknown command "frobnicate"`,
		"Stopped. The cluster and its data stay in " + dir,
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "never runs")
	require.FileExists(t, filepath.Join(dir, cluster.FileName))
	require.FileExists(t, filepath.Join(dir, "logs", "g0r0.log"))
}

func TestDemoReusesItsClusterAndKeepsTheData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 12)
	runDemoScript(t, dir, base, "append k first\n")
	out := runDemoScript(t, dir, base+1000, "read k\nstatus\n") // the port flag only applies to a new cluster
	require.Contains(t, out, "Reusing the local cluster in "+dir)
	require.Contains(t, out, "k: 1 entry\n  1  first")
	require.Contains(t, out, "up (pid")
}

func TestDemoSaysWhichPortIsTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 12)
	other := filepath.Join(t.TempDir(), "other")
	code, _, stderr := runMain(t, "init", "--dir", other, "--groups", "1", "--base-port", fmt.Sprint(base))
	require.Equal(t, 0, code, stderr)
	startCluster(t, other, appLog)
	var out, errb syncBuffer
	err := runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{dir: dir, basePort: base, callTimeout: time.Second, readyWait: time.Second, grace: time.Second})
	require.ErrorContains(t, err, fmt.Sprintf("127.0.0.1:%d of replica g0r0 is not free", base))
	_, statErr := os.Stat(filepath.Join(dir, "data"))
	require.True(t, os.IsNotExist(statErr), "no replica started")
}

func TestDemoRejectsNonsenseDurationsAndPorts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grace", "-1s"}, "--grace -1s: must be positive"},
		{[]string{"--call-timeout", "0s"}, "--call-timeout 0s: must be positive"},
		{[]string{"--ready-timeout", "-2s"}, "--ready-timeout -2s: must be positive"},
		{[]string{"--base-port", "70000"}, "--base-port 70000: want 1..65524"},
	} {
		dir := filepath.Join(t.TempDir(), "demo")
		code, _, stderr := runMain(t, append([]string{"demo", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "nothing created")
	}
}
