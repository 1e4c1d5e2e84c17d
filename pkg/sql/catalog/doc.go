// Package catalog holds the SQL schema — databases, tables, columns,
// primary keys, secondary indexes with their states, placement, table ids —
// in the metadata keyspace that every group replicates (txn.md M1–M5,
// DESIGN.md §6).
//
// Layout. Non-reserved metadata keys under "sql/": "sql/root" (the id
// sequence and the round-robin placement counter), "sql/db/<id>",
// "sql/tbl/<id>" and "sql/drop/<id>" (spans left to clear), each a JSON
// descriptor; ids are 4 bytes big-endian. The partition map (M3) is the
// system key txn.MetaPartitionsKey, written in the same transaction when a
// table is created (its empty span assigned to a group, round-robin, or
// split by PARTITION BY RANGE, or hashed by PARTITION BY KEY).
//
// Versions. A Snapshot is the whole catalog at one metadata version (M2),
// immutable and local: GMS asks for tables, indexes and row counts on every
// statement, and none of those is a network call. Every data transaction a
// statement sends is pinned to the version of the snapshot it was planned
// with (coord.Options.PinVersion), so a front-end whose catalog is stale
// learns it from the first transaction it sends — a stale-metadata abort —
// reloads (Manager.ReloadPast) and plans the statement again. Statements
// that read only the catalog call Manager.Refresh (one small read).
//
// Changes. A DDL statement builds a Change on the snapshot it was planned
// with and Manager.Commit sends it as ONE metadata transaction over every
// group, signed by the front-end's admin key (M5), pinned to that version:
// a concurrent change by another front-end makes it fail with ErrStale
// rather than overwrite. Data work that cannot fit one transaction (index
// backfill, clearing dropped tables) is not done here: the descriptors
// record the state (IndexWriteOnly, DropJob) and the backend's schema
// changer does the work in chunks of ordinary transactions afterwards.
//
// Imports: go-mysql-server (types, and its planbuilder to parse stored type
// strings), pkg/sql/rowenc, pkg/txn, pkg/txn/oracle and pkg/txn/coord (the
// client's Do signature). Never GMS's engine or session, nor the backend.
package catalog
