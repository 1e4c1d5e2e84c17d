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
// The SQL tests (sql_*_test.go) run `augustus gateway` in front of 2 groups
// × 4 replicas with the transaction engine and drive it with real clients:
// the mysql CLI and mysqldump (Debian's mariadb-client), go-sql-driver/mysql,
// GORM's migrator and sysbench; the anomaly checks (concurrent increments,
// write skew, a bank across groups whose history the Elle checker reads)
// and, in the long form, the bank with a replica of each group killed -9.
// A client program that is not installed skips its subtest, unless
// AUGUSTUS_E2E_REQUIRE_CLIENTS=1 (set by .ci/run, which installs them).
//
// `make e2e` runs them all; `make test` runs the short form (go test -short),
// which keeps TestE2ERequestsComplete, TestE2EKillPrimary,
// TestE2EStartServesBenchAndStopsOnSIGTERM, a 6-second measurement of
// TestE2EStartKeepsServingWhenThePrimaryIsKilledUnderBench (20 s in the
// long form) and TestE2ESQL with shorter loads (a 3 s bank, 2 s of
// sysbench; 20 s and 10 s in the long form).
package e2e
