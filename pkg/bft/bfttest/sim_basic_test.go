package bfttest

import (
	"os"
	"testing"
)

func TestSimulationFaultFreeCompletesEveryRequest(t *testing.T) {
	opts := Options{Seed: 1, F: 1, Clients: 3, RequestsPerClient: 30, Outstanding: 2, PayloadSize: 16,
		Net: Network{MinDelay: 1000, MaxDelay: 5000}}
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
