// Package linear checks per-key linearizability of single-key register
// operations in a history (package history) with porcupine
// (github.com/anishathalye/porcupine, Athalye; the algorithm of Wing & Gong
// with Lowe's improvements).
//
// Strict serializability of the whole history (package elle) implies that
// every key, taken alone, is linearizable; this package checks that weaker
// property by a different method (a search for a linearization instead of a
// dependency graph), which makes it a useful cross-check: it needs no
// inferred version order, so it also orders blind writes, which elle cannot
// (see elle's register inference).
//
// # Which operations
//
// A transaction is a single-key register operation if every micro-op of it
// is a register write or read of one key. Its effect on the key is:
//
//   - a read (only reads): returns the value read (the first read; elle
//     checks that a transaction's reads agree);
//   - a write (writes, no read before them): sets the final value written;
//   - a compare-and-set (a read, then writes): atomically, if the key held
//     the value read, sets the final value written. This is what Augustus's
//     cmp-guarded write does.
//
// Everything else is skipped and counted (multi-key transactions, list
// appends). Fail transactions never took effect and are left out. Info
// transactions may have taken effect at any time after their invocation:
// their completion is taken as never (porcupine may linearize them after
// everything), their reads are unknown (an Info read-only op is left out),
// and an Info compare-and-set whose comparison does not hold where it is
// linearized is a no-op (it did not take effect), which is exactly the set
// of behaviours an indeterminate transaction allows.
//
// Real time follows porcupine's closed intervals: an op that completes at t
// and one invoked at t are concurrent, as in package elle.
//
// This package imports only package history of this module: it is used by
// the transaction simulator and by process-level tests (internal/archtest
// keeps it so). Porcupine runs its per-key searches on goroutines of its
// own, which end before Check returns.
package linear
