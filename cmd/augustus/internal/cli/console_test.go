package cli

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// testGroup is a one-group cluster on free ports where nothing listens.
func testGroup(t *testing.T) (*cluster.Cluster, *cluster.Group) {
	t.Helper()
	opts := cluster.DefaultGenerateOptions(t.TempDir())
	opts.Groups, opts.BasePort = 1, freeBasePort(t, 12)
	c, err := cluster.Generate(opts)
	require.NoError(t, err)
	return c, &c.Groups[0]
}

// A slow call is explained from the views the client learned, not
// blamed on a change of primary that did not happen.
func TestConsoleSaysWhyACallWasSlow(t *testing.T) {
	_, g := testGroup(t)
	k := &console{group: g, f: 1}
	require.Equal(t, "the group changed its primary from g0r0 (view 0) to g0r1 (view 1)", k.whySlow(0, 1, 0))
	require.Equal(t, "the group changed its primary from g0r3 (view 3) to g0r1 (view 5); the call got no answer in time and was sent again 2 times",
		k.whySlow(3, 5, 2))
	require.Equal(t, "no change of primary (still g0r0, view 4); the replicas were slow to answer (busy, or catching up)", k.whySlow(4, 4, 0))
	require.Equal(t, "no change of primary (still g0r2, view 2); the call got no answer in time and was sent again once", k.whySlow(2, 2, 1))
}

// status says why a running replica's metrics are unavailable.
func TestConsoleStatusSaysWhyMetricsAreUnavailable(t *testing.T) {
	_, g := testGroup(t)
	fc := newFakeCluster(t, supervisorConfig{policy: restartNever})
	for _, r := range g.ReplicasByIndex() {
		fc.start(r.Name)
	}
	require.NoError(t, fc.sup.Kill("g0r3"))
	var out bytes.Buffer
	k := &console{out: &out, sup: fc.sup, group: g, f: 1}
	k.status(context.Background())
	text := out.String()
	for _, r := range g.ReplicasByIndex()[:3] {
		require.Contains(t, text, fmt.Sprintf("metrics unavailable: metrics at %s unreachable: connection refused", r.MetricsAddr), text)
	}
	require.Contains(t, text, "g0r3     down")
	require.Contains(t, text, "1 of 4 replicas down: the group still answers")
}
