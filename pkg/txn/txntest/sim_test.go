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
}

func TestTxnSimFaultFreeAppend(t *testing.T) {
	res := Run(Options{Seed: 2, Groups: 3, F: 1, Workload: "append", Keys: 6, Clients: 3, TxnsPerClient: 10,
		MultiGroupPct: 50, Net: bfttest.NetConfig{MinDelay: 500, MaxDelay: 3000}})
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
}
