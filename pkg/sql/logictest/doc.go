// Package logictest is the SQL layer's conformance machinery: the seam that
// lets every runner drive any SQL engine, the datadriven SQL logic tests,
// and (in subpackages) SQLite's sqllogictest corpus and go-mysql-server's
// enginetest suites.
//
// # The seam
//
// Engine (Connect) and Session (Exec, Query, Close) are all a runner needs:
// run a statement, run a query and read its values as a MySQL client reads
// them (text or NULL), one session per logical connection. Two adapters
// implement it:
//
//   - NewGMS(e *sqle.Engine, newSession SessionFactory) runs statements on a
//     go-mysql-server engine in this process, as GMS's server handler does
//     (process list, session command hooks, the type's wire conversion of
//     every value) but without the wire. A backend plugs in by handing its
//     engine and a function that makes its sql.Session for a connection id;
//     NewMemory is GMS's own memory backend behind it.
//   - NewSQLDB(db *sql.DB) runs them through database/sql: the MySQL wire
//     with go-sql-driver/mysql (a gateway, MariaDB), or an in-process driver.
//
// Both turn errors into *Error (MySQL number, SQLSTATE, message), so tests
// can name the error a statement must fail with whatever runs behind the
// seam; TestDataDrivenOverTheWire runs the same files through both and
// shows they agree.
//
// # Datadriven SQL logic tests
//
// RunDataDriven runs files of directives (statement ok|count|error, query,
// named sessions, onlyif/skipif per engine tag; see its comment) with
// github.com/cockroachdb/datadriven, so `go test -rewrite` regenerates the
// expectations. testdata/logic holds examples that pass on the memory
// backend (DDL, DML, NULL semantics, joins and aggregates, errors,
// AUTO_INCREMENT, transactions, two sessions in conflict); they record where
// go-mysql-server departs from MySQL under onlyif=gms, and where the memory
// backend's lack of isolation loses an update under onlyif=memory.
//
// Subpackages: sqllogictest runs SQLite's select1–5 (make sqllogictest);
// enginetest runs GMS's enginetest through a Harness over a Backend that is
// built once and reset between tests (make enginetest).
// docs/sql-conformance.md has the scores.
package logictest
