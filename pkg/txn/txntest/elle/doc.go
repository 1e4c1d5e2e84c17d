// Package elle checks a transactional history (package history) for
// isolation anomalies, written from the ideas of Elle (Kingsbury & Alvaro,
// "Elle: Inferring Isolation Anomalies from Experimental Observations",
// VLDB 2020) and the definitions of Adya's thesis ("Weak Consistency: A
// Generalized Theory and Optimistic Implementations for Distributed
// Transactions", MIT 1999). It is the checker of txn.md X1: committed
// update transactions of any client and committed read-only transactions of
// correct clients are strictly serializable, and no committed transaction
// reads a write that did not commit.
//
// # What it does
//
// Check takes a history of micro-operations (it does not care how a client
// built its transactions), infers a version order for every key, derives a
// dependency graph between transactions from those orders, and reports
// every cycle and every anomaly visible in single reads. Nothing is assumed
// about the database beyond the workload's promises (values written are
// unique per key); every edge is inferred from what transactions observed
// (Elle §3). The error is reserved for histories that break those promises
// (ErrUncheckable): that is a harness bug, not an anomaly.
//
// # Which transactions are in the graph
//
// OK transactions committed: they are nodes. Fail transactions did not:
// they are never nodes, and a committed read of a value only they wrote is
// G1a. Info transactions are indeterminate: one becomes a node as soon as a
// committed read observes one of its writes (it committed, Elle §4.2), and
// its reads stay unknown. An Info transaction nobody observed is left out:
// for a list key, if it committed it would follow every version read, a
// sink that cannot close a cycle; for a register its place is unknown.
//
// # Version orders (Elle §3.1–3.2, §4.2–4.3)
//
// List-append keys: every read of a list returns every element committed
// before it, in order, so the longest read is the key's version order
// (each element names a version: the list up to it), and every other read
// must be a prefix of it, else incompatible-order. An element nobody
// appended is a garbage read; an element twice in one read is
// duplicate-elements. A committed append nobody read follows the whole
// order. See list.go for the edges.
//
// Register keys: only the last write is visible, so less is inferred:
// nil (never written) precedes every version, and a transaction that read
// x and then wrote the key installed its version after x (a cmp-guarded
// write: record the cmp as a read). The order of blind writes is unknown,
// so some anomalies between blind writes go unseen, and a lost update shows
// as G2, not G-single. See register.go.
//
// A transaction's read of a key counts as its view of the key before its
// own writes ("external read", Elle §4.1.1): a list read after the
// transaction's own appends must end with them, and they are stripped; a
// register read after its own write must return that write. Reads that
// break this, or two reads of one key in one transaction that disagree, are
// internal anomalies. (A client whose database does not show a transaction
// its own writes must not record reads after writes to the same key.)
//
// # Edges (Adya §3.1; Elle §3.3, §5.1)
//
//   - ww: Tj installs a version of some key after Ti's;
//   - wr: Tj read a version Ti installed;
//   - rw (anti-dependency): Tj installs a version after the one Ti read;
//   - rt (real time, strict serializability only): Ti committed before Tj
//     was invoked. An Info transaction gets incoming rt edges only: it may
//     take effect any time after its invocation (a recovering client may
//     finish it, txn.md K4), whatever its recorded completion. rt edges are
//     kept in transitive reduction (realtime.go), so their number is linear
//     in the history times its concurrency.
//
// Process order is not added: a process runs one transaction at a time,
// so a process's committed transactions are already ordered by rt edges,
// and after an Info op the next transaction of the process is not ordered
// after it anyway (see rt).
//
// # Anomalies
//
//   - G1a (aborted read): a committed read shows a value only Fail
//     transactions wrote. Info transactions' writes may be read.
//   - G1b (intermediate read): a committed read shows a value that is not
//     the final write of its writer to that key; for lists also an append
//     placed right after such an intermediate element (an append is a
//     read-modify-write of the list).
//   - G0: a cycle of ww edges. G1c: a cycle of ww and wr edges with at
//     least one wr. G-single: a cycle with exactly one rw edge. G2: a cycle
//     with two or more rw edges (Adya's G2 includes G-single; here the
//     classes are exclusive and each cycle gets the most specific name).
//   - The real-time variants G0-realtime, G1c-realtime, G-single-realtime,
//     G2-realtime: the same, for cycles that need at least one rt edge: the
//     history is serializable there but not strictly serializable (a stale
//     read is G-single-realtime, a future read G1c-realtime).
//   - garbage-read, duplicate-elements, incompatible-order, internal (see
//     above).
//
// # Cycle search (Elle §4.4)
//
// Tarjan's algorithm finds the strongly connected components; in a valid
// history every one is a single transaction and the search ends there. In
// each component with a cycle, each class is searched in turn with a
// breadth-first search over (transaction, edge-kind counts) from every edge
// that can start a cycle of that class, keeping the shortest cycle found;
// the components of the subgraph of the class's allowed edge kinds prune
// the start edges and the search. Real-time classes are searched in a
// component only if it has no plain cycle (the component is then
// serializable, and every cycle in it needs rt edges). Each cycle is named
// by the kinds of its own edges, so a name is never wrong; a search that
// exceeds Options.CycleSearchBudget stops with the shortest cycle found so
// far (Result.SearchTruncated counts these), and a component is never left
// without a reported cycle.
//
// # Not built
//
// Predicate reads (read-range) and deletes are not part of either
// workload: G-single and G2 here are item anomalies (Adya's G2-item). A
// version order for registers from real-time order (Elle's
// linearizable-keys option) is not inferred; package linear checks per-key
// linearizability of registers with porcupine instead.
//
// This package imports only package history of this module (it is
// imported by the transaction simulator and by process-level tests):
// internal/archtest keeps it so.
package elle
