package cli

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// testGroups is a cluster of two groups on free ports where nothing
// listens, and a console on it without a client.
func testGroups(t *testing.T) (*cluster.Cluster, *console) {
	t.Helper()
	opts := cluster.DefaultGenerateOptions(t.TempDir())
	opts.Groups, opts.BasePort = 2, freeBasePort(t, 24)
	c, err := cluster.Generate(opts)
	require.NoError(t, err)
	m, err := oracle.FromCluster(c)
	require.NoError(t, err)
	return c, &console{c: c, pmap: m, f: c.F}
}

// A slow transaction is explained from the views the client learned in
// each group it involved, not blamed on a change of primary that did not
// happen.
func TestConsoleSaysWhyATransactionWasSlow(t *testing.T) {
	_, k := testGroups(t)
	both := []bft.GroupID{0, 1}
	views := func(v0, v1 bft.View) map[bft.GroupID]bft.View { return map[bft.GroupID]bft.View{0: v0, 1: v1} }
	require.Equal(t, "group 0 changed its primary from g0r0 (view 0) to g0r1 (view 1); group 1 kept its primary (g1r0, view 0)",
		k.whySlow(both, views(0, 0), views(1, 0), 0, 1))
	require.Equal(t, "group 1 changed its primary from g1r3 (view 3) to g1r1 (view 5); a call got no answer in time and was sent again 2 times",
		k.whySlow([]bft.GroupID{1}, views(0, 3), views(0, 5), 2, 1))
	require.Equal(t, "group 0 kept its primary (g0r0, view 4); the replicas were slow to answer (busy, or catching up)",
		k.whySlow([]bft.GroupID{0}, views(4, 0), views(4, 0), 0, 1))
	require.Equal(t, "group 0 kept its primary (g0r2, view 2); group 1 kept its primary (g1r0, view 0); it took 3 attempts (conflicts with other transactions); a call got no answer in time and was sent again once",
		k.whySlow(both, views(2, 0), views(2, 0), 1, 3))
}

// status covers every replica of every group and says why a running
// replica's metrics are unavailable.
func TestConsoleStatusCoversEveryGroupAndSaysWhyMetricsAreUnavailable(t *testing.T) {
	c, k := testGroups(t)
	fc := newFakeCluster(t, supervisorConfig{policy: restartNever})
	for _, name := range replicaNames(c) {
		fc.start(name)
	}
	require.NoError(t, fc.sup.Kill("g1r3"))
	var out bytes.Buffer
	k.out, k.sup = &out, fc.sup
	k.status(context.Background())
	text := out.String()
	t.Log(text)
	require.Contains(t, text, `Group 0 (keys from "" to "\x80"):`)
	require.Contains(t, text, `Group 1 (keys from "\x80" on):`)
	require.Contains(t, text, "REPLICA  STATE")
	for _, name := range []string{"g0r0", "g0r1", "g0r2", "g0r3", "g1r0", "g1r1", "g1r2"} {
		_, r, err := c.Replica(name)
		require.NoError(t, err)
		require.Regexp(t, name+`\s+up \(pid`, text)
		require.Contains(t, text, fmt.Sprintf("metrics unavailable: metrics at %s unreachable: connection refused", r.MetricsAddr), text)
	}
	require.Regexp(t, `g1r3\s+down\s+-\s+-`, text)
	require.Contains(t, text, "Group 0: 0 of 4 replicas down: it still answers")
	require.Contains(t, text, "Group 1: 1 of 4 replicas down: it still answers (it tolerates f=1)")
}

// where names each key's group; kill and restart take any replica of any
// group by its full name.
func TestConsoleWhereAndReplicaNames(t *testing.T) {
	_, k := testGroups(t)
	var out bytes.Buffer
	k.out = &out
	k.where(`a été "\x90k" 0x7f 0xzz`)
	text := out.String()
	require.Regexp(t, `"a"\s+group 0\s+\(replicas g0r0, g0r1, g0r2, g0r3\)`, text)
	require.Regexp(t, `"été"\s+group 1\s+\(replicas g1r0, g1r1, g1r2, g1r3\)`, text)
	require.Regexp(t, `"\\x90k"\s+group 1`, text)
	require.Regexp(t, `"\\x7f"\s+group 0`, text)
	require.Regexp(t, `0xzz\s+error: bad hex 0xzz`, text)
	out.Reset()
	k.where("")
	require.Equal(t, "error: want where KEY...\n", out.String())

	r, ok := k.replica("g1r2")
	require.True(t, ok)
	require.Equal(t, "g1r2", r.Name)
	out.Reset()
	_, ok = k.replica("r2")
	require.False(t, ok, "r2 is ambiguous with two groups")
	require.Contains(t, out.String(), `unknown replica "r2": one of g0r0, g0r1, g0r2, g0r3, g1r0, g1r1, g1r2, g1r3`)
	require.Equal(t, "insert a 1; insert été 2   then   read a; read été", crossGroupExample(k.pmap))
}
