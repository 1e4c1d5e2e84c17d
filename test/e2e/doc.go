// Package e2e holds the process-level tests of Augustus (DESIGN.md §8): real
// `augustus replica` processes on loopback, driven by the Go group client,
// killed with SIGKILL and restarted, with wrong credentials. TestMain builds
// the augustus binary once. The tests are bounded in time and use free
// loopback ports only.
//
// `make e2e` runs them all; `make test` runs the short form (go test -short),
// which keeps TestE2ERequestsComplete and TestE2EKillPrimary.
package e2e
