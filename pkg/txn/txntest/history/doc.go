// Package history is the model of a transactional test history and the
// recorder that test harnesses fill: one Op per transaction attempt of one
// process (client), with its invocation and completion times, its outcome
// and its micro-operations. The checker in package elle reads it; package
// linear reads it for per-key linearizability.
//
// # The model
//
// An Op is one attempt: process id, invocation time, completion time (int64:
// simulated microseconds or wall nanoseconds; checkers only compare them),
// outcome, and the transaction's micro-operations in program order. Outcomes:
//
//   - OK: the transaction committed, and its reads are known.
//   - Fail: the transaction certainly did not commit (an abort vote, a
//     refusal): none of its writes may ever be observed.
//   - Info: indeterminate (a timeout, a crashed client, an abandoned
//     transaction that another client may still terminate, txn.md K4): it may
//     or may not have committed, at any time after its invocation. Its reads
//     are unknown. An op that was invoked but never completed is Info.
//
// Two workloads share the model (Kingsbury & Alvaro, "Elle", VLDB 2020, §3):
//
//   - list-append: append(k, x) appends x to the list stored at k; r(k)
//     returns the whole list. Every read then names, in order, every write
//     it observed, which is what lets the checker recover the version order
//     of each key (Elle's "traceability" and "recoverability", §3.1–3.2).
//   - register: w(k, x) sets k to x; r(k) returns x, or nil if k was never
//     written. Only the last write is visible, so version orders must be
//     inferred from other evidence (see package elle).
//
// Values written are unique per key: the workload must make them so (a
// global counter suffices). A value may be written again only by attempts
// that certainly failed (a client may retry a refused append with the same
// element); at most one OK or Info attempt may write it.
//
// How the client builds a transaction in the database (for Augustus, a
// list append is `read(k)` in one transaction, then `cmp(k, old);
// write(k, old++[x])` in another) is not part of the model: the history
// holds what each transaction did in terms of micro-operations. A `cmp(k, v)`
// guard that held is a read of k that returned v, and should be recorded as
// one: it is what orders register versions.
//
// # Text encoding
//
// A history encodes as one line per op, stable and diff-friendly, so a
// failing history can be saved under testdata/ and replayed:
//
//	ok p3 100 250 append(x,1) r(x)=[1,2] w(y,3) r(y)=nil r(z)=5
//	info p1 20 - append(x,5)
//	fail p2 30 40 w(y,7) r(y)
//
// Fields: outcome, process, invocation time, completion time ("-" if the op
// never completed), micro-operations. A read without "=" has an unknown
// result. Keys are bare words of [A-Za-z0-9_.:/-] or Go-quoted strings.
// Blank lines and lines starting with # are ignored.
//
// This package imports no other package of this module (it is imported by
// the transaction simulator and by process-level tests): internal/archtest
// keeps it so.
package history
