// Package backend is the go-mysql-server (GMS) storage backend over
// Augustus (DESIGN.md §6): the DatabaseProvider, databases, tables, indexes
// and row editors GMS plans and executes against, in the way BFT Derby
// replaced Apache Derby's storage.
//
//   - Schema comes from the local, versioned catalog (pkg/sql/catalog): the
//     calls GMS makes on every statement (GetTableInsensitive, GetIndexes,
//     Schema) make no network call. A name this front-end does not know, and
//     SHOW-style listings, refresh the catalog first, so schema changes of
//     other front-ends are seen at once.
//   - Rows are keys and values of pkg/sql/rowenc. Reads and writes go
//     through the session's SQL transaction (pkg/sql/session), pinned to
//     the catalog version the table came from.
//   - Access paths: PRIMARY is reported as a unique index with PreciseMatch,
//     so GMS plans an IndexedTableAccess for primary-key equality, IN lists
//     and ranges, and for secondary-index lookups; lookups become `read`s
//     (points, batched in one transaction) and `read-range`s (spans), rows
//     fetched by primary key for secondary indexes, and filtered exactly
//     against the ranges. Full scans stream chunked read-ranges. GMS's
//     sql.Partition is a scan split here, never a replica group.
//   - Editors (editors.go) map inserts to `insert`s, updates and deletes of
//     rows read to `write`s and `delete`s guarded by the read's cmp, with
//     index entries in the same transaction.
//   - DDL (ddl.go) stages one catalog change per statement, committed as ONE
//     metadata transaction by GMS's implicit commit; new indexes on existing
//     tables go write-only, are backfilled, then public; dropped and
//     truncated tables' spans are cleared by the schema changer
//     (changer.go) from drop jobs in the catalog.
//   - AUTO_INCREMENT (autoinc.go) takes blocks of ids per front-end from a
//     counter that is an ordinary data key of the table.
//   - Placement (placement.go): PARTITION BY, read by the statement runner,
//     or COMMENT 'augustus:placement=...'.
//
// Imports: GMS, pkg/sql/catalog, pkg/sql/rowenc, pkg/sql/session, pkg/txn
// and pkg/txn/coord (the client's types). Never the replica runtime,
// storage or the PBFT layers (internal/archtest).
package backend
