// Package session is the SQL front-end's transaction model (DESIGN.md §6,
// BFT Derby in the paper's §4.5, made serializable): a GMS session whose
// transactions read at once through read-only short transactions, cache
// what they read for the whole SQL transaction (read-your-writes included),
// buffer their writes, and COMMIT with one short transaction that guards
// every value read with cmp (cmp absent for a key read as missing) and every
// range read with cmp-range, then applies the writes. A transaction that
// only read sends its guards at COMMIT too, unless all its reads came from
// one short transaction. Every isolation level MySQL names runs as
// SERIALIZABLE this way.
//
// GMS drives transactions implicitly per statement and drops them on errors
// without Rollback: StartTransaction sends nothing, a transaction sends
// nothing before its first read, and a dropped one is forgotten with nothing
// applied. Every short transaction is pinned to the catalog version its
// statement was planned with (coord.Options.PinVersion, txn.md M2): a stale
// catalog surfaces as ErrSchemaChanged, which the statement runner handles
// by reloading and running the statement again.
//
// Errors reach clients as MySQL errors: a conflict or failed guard is 1213
// (SQLSTATE 40001), a duplicate key 1062, a write in a READ ONLY
// transaction 1792, a row or transaction over the cluster's limits a
// message saying what to change.
//
// Imports: go-mysql-server's sql package (the session interfaces), the
// vitess mysql errors, pkg/txn, pkg/txn/coord (the client's Do) and
// pkg/txn/oracle. It knows nothing of tables or rows: the backend turns rows
// into keys (pkg/sql/rowenc) and calls Get, GetMany, Scan, Insert, Update,
// Remove.
package session
