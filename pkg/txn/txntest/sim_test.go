package txntest

import (
	"os"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

func TestTxnSimFaultFreeBank(t *testing.T) {
	opts := Options{Seed: 1, Groups: 2, F: 1, Workload: "bank", Keys: 6, Clients: 3, TxnsPerClient: 10, Callers: 2,
		MultiGroupPct: 50, Net: bfttest.NetConfig{MinDelay: 500, MaxDelay: 3000}}
	if os.Getenv("SIM_TRACE") != "" {
		opts.Trace = os.Stderr
	}
	res := Run(opts)
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
	if res.Committed == 0 || res.Checked == 0 {
		t.Fatalf("nothing committed or checked: %+v", res)
	}
	// The votes and acknowledgements of one executed batch are signed as
	// one tree, and the certificates built from them verified.
	if res.Coverage.TreeSignedReplies == 0 {
		t.Fatalf("no reply was signed in a tree: %+v", res.Coverage)
	}
}

func TestTxnSimFaultFreeAppend(t *testing.T) {
	res := Run(Options{Seed: 2, Groups: 3, F: 1, Workload: "append", Keys: 6, Clients: 3, TxnsPerClient: 10,
		MultiGroupPct: 50, Net: bfttest.NetConfig{MinDelay: 500, MaxDelay: 3000}})
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
}

// txn.md K2, E10 with signature trees: a Byzantine replica in each group
// forges its reply signatures — each message of a round's tree gets
// another's signature (a valid root with the wrong path), a lone signature
// is corrupted. Clients refuse those replies and build certificates from
// the others; every transaction still terminates and the checkers pass.
func TestTxnSimByzantineReplicasForgeTreeSignatures(t *testing.T) {
	forged := 0
	liar := TxnLiar{Mode: "tree", Forged: &forged}
	res := Run(Options{Seed: 3, Groups: 2, F: 1, Workload: "bank", Keys: 6, Clients: 3, TxnsPerClient: 10, Callers: 2,
		MultiGroupPct: 100, Net: bfttest.NetConfig{MinDelay: 500, MaxDelay: 3000},
		Faulty: map[int]map[int]bfttest.Behavior{0: {1: liar}, 1: {2: liar}}})
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
	if res.Committed == 0 || forged == 0 {
		t.Fatalf("committed %d, forged signatures %d: the attack did not run", res.Committed, forged)
	}
}

// TestTxnSimRegressionSeeds replays seeds that once failed, each with what
// it found. They run in every `make test` whatever range the seed sweep
// covers.
func TestTxnSimRegressionSeeds(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		why  string
	}{
		{200, "a Byzantine client's flood left eight transactions holding read locks on one key; the sweeper gave up on it after its coordinator's 20 retries (one pending transaction named per abort, E3) and X3 found one still pending"},
		{881, "a power cut of every replica right after the sweep: a release whose COMMITs were retransmitted after the restart had not executed yet when the records were checked (settle now waits for the log to drain)"},
		{5857, "a Byzantine client's flood to a group that was down landed, by the client's doubling retransmission timeout, after the sweeper had rewritten the keys it locks (the sweep now waits for the Byzantine clients' calls to be answered and stops them)"},
		{8106, "a faulty primary's PRE-PREPARE that never prepared was counted as work the replicas still had to execute (only prepared or committed batches are)"},
	} {
		res := Run(RandomOptions(c.seed))
		if res.Failed() {
			t.Errorf("seed %d (%s): %v", c.seed, c.why, res.Violations)
		}
	}
}
