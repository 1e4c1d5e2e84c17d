// Package txntest is the transaction layer's simulator and checkers
// (issue 15, txn.md X1–X4): a multi-group cluster on the PBFT layer's seeded
// world (pkg/bft/bfttest) — every replica the production event loop with the
// production engine (pkg/txn/partition) on pebble — correct clients running
// the production client library (pkg/txn/coord) through the production group
// clients, Byzantine clients of every kind txn.md lists, Byzantine replicas
// that lie at the transaction layer, crashes, partitions and state transfer;
// workloads (a bank whose total is invariant, list-append and register
// histories); and checkers: X1 by the Elle-style checker of
// pkg/txn/txntest/elle over the recorded history, X2 and X3 over the records
// every correct replica holds (CheckRecords), X4 over the final stores.
//
// Sub-packages: history (the history model and recorder), elle (the
// dependency-graph checker), linear (porcupine per-key linearizability).
package txntest
