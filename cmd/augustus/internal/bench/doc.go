// Package bench is `augustus bench`: the workloads, the runner that drives
// them and the reports (DESIGN.md §8). The command line (package cli) only
// builds the cobra command around AddFlags, Help and Run.
//
// A workload is one file (noop.go, log.go, table3.go for the paper's A–D,
// bank.go, buzzer.go): it registers a Spec (its --workload names, its
// paragraph of --help, its own flags) and implements Workload — what one
// caller does per invocation and how an outcome counts. The runner
// (runner.go) is the same for every workload: closed-loop callers, or a true
// open loop at --rate (openloop.go), a warm-up, the measured interval, the
// drain, the progress display and the classification of every invocation.
// Around the runner, a family of workloads shares a target: group.go drives
// one replica group through the group client (noop, log; report in
// group_report.go), txn.go drives the transaction engine through
// pkg/txn/coord (A–D, bank, buzzer; report in txn_report.go, the Byzantine
// callers of Fig. 5 in byzantine.go and fig5.go). A family that drives the
// MySQL gateway or the embedded database/sql driver adds its own target
// beside those two and reuses the runner and the transaction report as they
// are.
//
// Reports stay readable in a terminal (table.go): no line is wider than
// reportWidth columns; long notes (replicas left out of the CPU figures,
// problems) go below the table.
//
// Imports: pkg/bft/client, pkg/bft/cluster, pkg/txn, pkg/txn/coord,
// pkg/txn/oracle, the history model and its checker (bank), and the
// replica runtime's exported application encodings (log); never the replica
// runtime's internals, the engine, storage or SQL. It starts goroutines (the
// callers, the open loop's scheduler, scrapes, profiles); each is owned by
// the run that starts it and stopped before the run returns.
package bench
