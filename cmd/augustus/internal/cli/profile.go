package cli

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// defaultPprofBasePort is where `start --pprof` has the first replica of
// the cluster serve pprof; the k-th replica serves on the port k above.
const defaultPprofBasePort = 6060

// pprofAddr is where replica k (in the order of replicaNames) serves pprof
// under `start --pprof --pprof-base-port base`.
func pprofAddr(base, k int) string { return fmt.Sprintf("127.0.0.1:%d", base+k) }

// replicaPprofAddr is where the replica named name serves pprof under
// `start --pprof --pprof-base-port base` (bench --profile pulls from it).
func replicaPprofAddr(c *cluster.Cluster, name string, base int) string {
	for k, n := range replicaNames(c) {
		if n == name {
			return pprofAddr(base, k)
		}
	}
	return pprofAddr(base, 0)
}
