// Package lockmgr is the lock table of the Augustus transaction protocol
// (DESIGN.md §4, ../shared/txn.md L1–L6, E3, E6, E11, M4; Table 2 of the
// paper, §3.3, with range-granular structural locks).
//
// It owns the compatibility rules and nothing else. The replicated engine
// (pkg/txn/partition) turns a transaction's operations into locks (L5:
// cmp and read take R, write takes W, insert and delete take SW + W,
// read-range and cmp-range take SR on the covered span + R on every present
// key), calls Acquire once per transaction on its execution path, and
// Release when the transaction terminates: at once if it votes abort after
// its locks were granted (a failed comparison or precondition, E4–E6) or is
// a single-group transaction (E7), else when its outcome arrives (E8, E10).
//
// The rules, and where each is implemented:
//
//   - L1. Key locks: R–R share; R–W and W–W conflict (Table.conflicts,
//     keys.go).
//   - L2. Structural locks: SR on a span [start, end), SW on one key. SR–SR
//     share, SW–SW share, SR–SW conflict where the key lies in the span
//     (Table.conflicts, itree.go). The paper locks the whole partition;
//     txn.md takes the range-granular form, so an insert conflicts only
//     with the scans that cover its key.
//   - L3. A key lock and a structural lock never conflict: R/W and SR/SW
//     live in separate structures and are never checked against each other.
//   - L4. A transaction's own locks never conflict: the request is checked
//     against other holders only, a W absorbs the same holder's R (the
//     read → write upgrade), and Conflicts ignores the caller's own locks.
//   - L6. All or nothing, never waiting: Acquire checks every lock before
//     it grants any, and returns the conflicting holders instead of
//     blocking. There are no queues here; M4's queue of metadata
//     transactions is the engine's, built on Conflicts.
//   - E3. Conflicts are reported once per holder, sorted by the delivery
//     order the engine assigns, so every correct replica names the same
//     conflicting transaction first.
//   - E11. Held reads back a holder's lock set in a canonical form and
//     Restore rebuilds it verbatim after a restart or state transfer; a
//     consistent set of records always restores, in any order, and two
//     records that conflict are reported as ErrInconsistent, a local fault.
//
// Determinism: every result is a function of the sequence of calls. No
// goroutines, no clock, no randomness; map iteration order never reaches a
// result (holders and conflicts are sorted by delivery order, locks by mode
// and key). Keys are arbitrary bytes in bytewise order; the empty key is
// the smallest and an SR with an empty End is unbounded above (see Lock).
//
// Cost: Acquire is O(m log n) for a request of m locks in a table of n, and
// allocates one copy of the request's keys when granted; Release is
// proportional to the holder's own locks. Key locks are a hash map; SR spans
// and SW points are two augmented AVL interval trees (itree.go explains why
// no B-tree library fits).
//
// Imports: the standard library only — nothing of ours and no other module
// (internal/archtest checks it).
package lockmgr
