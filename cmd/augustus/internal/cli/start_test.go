package cli

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStartRunsEveryReplicaAndStopsThemCleanly(t *testing.T) {
	dir, c := newTestCluster(t)
	out, stop := startCluster(t, dir, appNoop)
	for _, r := range c.Groups[0].Replicas {
		require.Contains(t, out.String(), r.PeerAddr)
		require.Contains(t, out.String(), r.ClientAddr)
		require.Contains(t, out.String(), "http://"+r.MetricsAddr+"/metrics")
		m, err := scrape(context.Background(), r.MetricsAddr)
		require.NoError(t, err)
		_, ok := m.value(metricCPU)
		require.True(t, ok, "%s serves %s", r.Name, metricCPU)
	}
	pids := startPids(t, out.String())
	require.Len(t, pids, 4)
	require.NoError(t, stop())
	require.Contains(t, out.String(), "All replicas stopped.")
	for name, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "replica %s (pid %d) still runs", name, pid)
	}
}

func TestStartExitsNonZeroWhenAReplicaDies(t *testing.T) {
	dir, _ := newTestCluster(t)
	out, stop := startCluster(t, dir, appLog)
	pids := startPids(t, out.String())
	require.NoError(t, syscall.Kill(pids["g0r2"], syscall.SIGKILL))
	var err error
	waitFor(t, 30*time.Second, "start to notice", func() bool {
		return strings.Contains(out.String(), "stopping the others")
	})
	err = stop()
	var ee *exitError
	require.True(t, errors.As(err, &ee), "got %v", err)
	require.Equal(t, 1, ee.code)
	require.Contains(t, out.String(), "replica g0r2 (pid "+strconv.Itoa(pids["g0r2"])+") exited unexpectedly: signal: killed")
	for name, pid := range pids {
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "replica %s (pid %d) still runs", name, pid)
	}
}

func TestStartRejectsAMissingCluster(t *testing.T) {
	code, _, stderr := runMain(t, "start", "--dir", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no cluster.json in")
}

var pidRow = regexp.MustCompile(`(?m)^(g\d+r\d+)\s+(\d+)\s`)

// startPids reads the replica pids from start's table.
func startPids(t *testing.T, out string) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, m := range pidRow.FindAllStringSubmatch(out, -1) {
		pid, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		pids[m[1]] = pid
	}
	return pids
}
