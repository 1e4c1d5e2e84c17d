package bfttest

import (
	"os"
	"testing"
)

func TestSimulationFaultFreeCompletesEveryCall(t *testing.T) {
	opts := Options{Seed: 1, F: 1, Clients: 3, CallsPerClient: 30, Callers: 2, InFlight: 2, Twins: -1,
		Net: NetConfig{MinDelay: 1000, MaxDelay: 5000}}
	if os.Getenv("SIM_TRACE") != "" {
		opts.Trace = os.Stderr
	}
	res := Run(opts)
	t.Log(res.Summary)
	if res.Failed() {
		t.Fatalf("violations: %v", res.Violations)
	}
	if res.Accepted != 90 {
		t.Fatalf("accepted %d of 90", res.Accepted)
	}
}
