// Package e2e holds the process-level tests of Augustus (DESIGN.md §8): real
// `augustus replica` processes on loopback, driven by the Go group client,
// killed with SIGKILL and restarted, with wrong credentials. TestMain builds
// the augustus binary once. The tests are bounded in time and use free
// loopback ports only.
//
// Some tests drive the augustus CLI itself: `augustus start` supervising
// the replicas (kill -9 of the primary under `augustus bench`, a replica
// with a wrong key file left down while the others serve), and bench's
// verdict on a group that cannot answer.
//
// `make e2e` runs them all; `make test` runs the short form (go test -short),
// which keeps TestE2ERequestsComplete, TestE2EKillPrimary,
// TestE2EStartServesBenchAndStopsOnSIGTERM and a 6-second measurement of
// TestE2EStartKeepsServingWhenThePrimaryIsKilledUnderBench (20 s in the
// long form).
package e2e
