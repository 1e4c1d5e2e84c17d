package bfttest

import "testing"

// regressionSeeds are seeds that once failed, with what they found. Each
// stays here so the bug cannot come back unnoticed.
var regressionSeeds = []struct {
	seed uint64
	bug  string
}{
	{642, "liveness (V6/V7): a replica timed out from view 1 to 2 after its VIEW-CHANGE(1) was lost and retransmitted only VIEW-CHANGE(2); the other correct replicas waited for 2f+1 VIEW-CHANGE(1)s forever. Fix: keep VIEW-CHANGEs per (view, replica) and retransmit every own VIEW-CHANGE since the last view entered."},
}

func TestSimulationRegressionSeeds(t *testing.T) {
	for _, rs := range regressionSeeds {
		res := Run(RandomOptions(rs.seed))
		if res.Failed() {
			t.Errorf("regression seed %d (%s) fails again: %v", rs.seed, rs.bug, res.Violations)
		}
	}
}
