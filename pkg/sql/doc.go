// Package sql is the SQL front-end of Augustus (DESIGN.md §6): a MySQL
// dialect served by go-mysql-server, whose storage and transaction control
// are replaced by short Augustus transactions in the manner of BFT Derby,
// made serializable. Its sub-packages:
//
//	rowenc    order-preserving keys and column-id-keyed values of rows and index entries
//	catalog   schema and placement in the metadata keyspace; local versioned snapshots
//	session   the transaction model: read cache, buffered writes, one guarded commit
//	backend   GMS DatabaseProvider/Database/Table/Index/editors, DDL, AUTO_INCREMENT, schema changer
//	engine    assembly: engine.New over one coord.Client, sessions, Run (the statement runner)
//
// and, built on engine, the MySQL gateway, the database/sql driver, the
// shell and the logic-test runners (see their own doc.go). docs/sql.md
// describes the layer as built. Every package here talks to the cluster
// through pkg/txn/coord only (internal/archtest).
package sql
