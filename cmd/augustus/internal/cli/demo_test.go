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
		dir: dir, groups: 2, basePort: base, callTimeout: 20 * time.Second, readyWait: 60 * time.Second, grace: 10 * time.Second,
	})
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	require.NoError(t, ctx.Err(), "the demo did not finish in time")
	return out.String()
}

// The console runs transactions across the two groups of a real 2×4
// cluster, shows where keys live, covers every replica in status, goes on
// after a bad line, and commits with a replica of each group killed.
func TestDemoConsoleRunsCrossGroupTransactionsAndSurvivesKilledReplicas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	out := runDemoScript(t, dir, base, strings.Join([]string{
		"help",
		"insert a 1; insert été 2",
		"read a; read été; read nope",
		"where a été",
		"read a; frobnicate k",
		"write a",
		"frobnicate",
		"insert a again",
		"status",
		"kill g1r2",
		"kill g0r0",
		"write a 3; write été 4",
		"read a; read été",
		"restart g1r2",
		"kill r9",
		"quit",
		"read a",
	}, "\n")+"\n")
	t.Log(out)
	for _, want := range []string{
		"Created the local cluster in " + dir + "; started 8 replicas in 2 groups",
		`group 0 (keys from "" to "\x80")`,
		"Try: insert a 1; insert été 2",
		"where KEY...",
		"augustus> insert a 1; insert été 2\ncommitted (multi-group update, groups 0, 1,",
		"committed (multi-group read-only, groups 0, 1,",
		`"été"  group 1  (replicas g1r0, g1r1, g1r2, g1r3)`,
		"augustus> read a; frobnicate k\nerror: operation 2 (frobnicate k): unknown operation \"frobnicate\"",
		"augustus> write a\nerror: operation 1 (write a): want write KEY VALUE\n",
		"augustus> frobnicate\nunknown command \"frobnicate\": type help",
		"aborted: key exists at operation 0 (insert a again), at group 0",
		"killed g1r2 (SIGKILL). Group 1: 1 of 4 replicas down: it still answers (it tolerates f=1).",
		"killed g0r0 (SIGKILL). Group 0: 1 of 4 replicas down: it still answers",
		"started g1r2",
		`unknown replica "r9"`,
		"Stopped. The cluster and its data stay in " + dir,
	} {
		require.Contains(t, out, want)
	}
	require.Regexp(t, `0\s+read a\s+0\s+"1"`, out)
	require.Regexp(t, `1\s+read été\s+1\s+"2"`, out)
	require.Regexp(t, `2\s+read nope\s+0\s+absent`, out)
	require.Regexp(t, `0\s+read a\s+0\s+"3"`, out, "the transaction after the kills committed")
	require.Regexp(t, `1\s+read été\s+1\s+"4"`, out)
	status := out[strings.Index(out, "augustus> status"):strings.Index(out, "augustus> kill g1r2")]
	require.Contains(t, status, "Group 0 (keys")
	require.Contains(t, status, "Group 1 (keys")
	require.Equal(t, 8, strings.Count(status, "up (pid"), status)
	require.Regexp(t, `g1r0\s+up \(pid \d+\)\s+\d+\s+g1r\d\s+\d+\s+\d+`, status, "view, primary, executed and stable of a replica")
	require.NotContains(t, out, "error: context")
	require.NotContains(t, out, "no outcome within")
	require.FileExists(t, filepath.Join(dir, cluster.FileName))
	require.FileExists(t, filepath.Join(dir, "logs", "g1r3.log"))
}

func TestDemoReusesItsClusterAndKeepsTheData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 replicas twice")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	runDemoScript(t, dir, base, "insert k first\n")
	out := runDemoScript(t, dir, base+1000, "read k\nstatus\n") // the port flag only applies to a new cluster
	require.Contains(t, out, "Reusing the local cluster in "+dir)
	require.Regexp(t, `0\s+read k\s+0\s+"first"`, out)
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
	err := runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{dir: dir, groups: 2, basePort: base, callTimeout: time.Second, readyWait: time.Second, grace: time.Second})
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
		{[]string{"--base-port", "70000"}, "--base-port 70000: want 1..65512 (a new cluster of 2 groups takes 24 ports from it)"},
		{[]string{"--groups", "0"}, "--groups 0: want 1..8"},
	} {
		dir := filepath.Join(t.TempDir(), "demo")
		code, _, stderr := runMain(t, append([]string{"demo", "--dir", dir}, tc.args...)...)
		require.Equal(t, 1, code, tc.args)
		require.Contains(t, stderr, tc.want)
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "nothing created")
	}
}

// A reused demo directory whose group cannot start (here: more than f of
// group 0's data directories are files, as a store another build wrote
// would fail too) fails at once with each replica's reason and how to start
// over, not after the whole wait for the groups.
func TestDemoSaysAtOnceWhyAGroupCannotStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	base := freeBasePort(t, 24)
	code, _, stderr := runMain(t, "init", "--dir", dir, "--groups", "2", "--base-port", fmt.Sprint(base))
	require.Equal(t, 0, code, stderr)
	for _, name := range []string{"g0r0", "g0r1"} {
		p := filepath.Join(dir, "data", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("not a store"), 0o644))
	}
	var out, errb syncBuffer
	start := time.Now()
	err := runDemo(context.Background(), strings.NewReader(""), &out, &errb, demoOptions{
		dir: dir, groups: 2, basePort: base, callTimeout: time.Second, readyWait: time.Minute, grace: 5 * time.Second})
	require.Error(t, err)
	require.Less(t, time.Since(start), 30*time.Second, "not after the minute of waiting")
	require.ErrorContains(t, err, "group 0 cannot answer")
	require.ErrorContains(t, err, "g0r0: ")
	require.ErrorContains(t, err, "g0r1: ")
	require.ErrorContains(t, err, "delete "+dir)
}
