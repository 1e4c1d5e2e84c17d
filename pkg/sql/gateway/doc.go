// Package gateway is Augustus's MySQL server (`augustus gateway`, and the
// gateway of `augustus demo`): go-mysql-server's server and vitess's wire
// protocol in front of an engine (pkg/sql/engine) over the process's one
// transaction client, whose envelopes batch the calls of every session
// (DESIGN.md §1, §3.1, §6).
//
// # What it adds to GMS's server
//
// GMS's own handler runs statements with Engine.QueryWithBindings; the
// gateway replaces the statement path (COM_QUERY, multi-statements,
// COM_STMT_EXECUTE) with its own handler, which runs every statement through
// engine.Run — the statement runner the embedded driver shares — so an
// autocommit statement is retried after a serialization failure before
// anything reaches the client, and a failed statement leaves nothing behind.
// GMS's handler keeps the rest (connections, COM_INIT_DB, COM_STMT_PREPARE,
// COM_RESET_CONNECTION). Around each statement the handler:
//
//   - recovers a panic of GMS or vitess code as error 1105 and rolls the
//     session's transaction back: one bad statement never drops the
//     connection or the process (gms-notes §9);
//   - runs DO expr (which the parser rejects) as a SELECT whose rows it
//     drops;
//   - refuses account statements (CREATE USER, GRANT, ...): accounts live in
//     cluster.json so every gateway admits the same ones;
//   - refuses prepared statements with more placeholders than vitess can
//     decode (it would panic decoding their execution);
//   - counts statements by kind, errors by MySQL code, latency, retries and
//     panics (metrics.go);
//   - refuses new statements while the gateway drains (Shutdown).
//
// Users come from the cluster file (User, pkg/bft/cluster's SQLUser):
// mysql_native_password, and caching_sha2_password over TLS. TLS is optional
// (Config.TLS).
//
// # Results and memory
//
// engine.Run holds the rows of an autocommit statement until it has
// committed, so that a conflict can be retried before the client saw a row
// — at most engine.Config.RetryRows rows (`augustus gateway --retry-rows`,
// 4096 by default); a larger result streams past that point, and a conflict
// found after it is not retried. The handler then sends rows in batches of
// 128, holding the first SendBuffer bytes (1 MiB) before it sends anything,
// so that an error of a statement whose result fits there reaches the client
// as an error packet. Past that, rows are on the wire and an error can only
// close the connection: vitess has no error after a partial result, and the
// client sees 2013 (lost connection). The session's transaction goes with
// the connection, so nothing of it is applied. The same holds for the
// streamed rows of a statement in an explicit transaction. The memory a
// statement can hold in the gateway is thus about RetryRows rows plus
// SendBuffer bytes, besides what its SQL transaction read (the read cache
// that its COMMIT guards, pkg/sql/session).
//
// # The fast path hook
//
// Config.Interceptors are GMS server Interceptors, run before this handler
// for every COM_QUERY, multi-statement, prepare and execute: a fast path for
// the statement shapes that dominate OLTP plugs in there, answers what it
// handles, and passes the rest down the chain (Chain.ComQuery, ...). It
// reports what it answered through Metrics.Observe with PathFast.
//
// Imports: GMS (server, sql, mysql_db), vitess (mysql, sqlparser),
// pkg/sql/engine and pkg/sql/session, Prometheus. Goroutines: Serve's accept
// loop and vitess's one per connection, all stopped by Shutdown.
package gateway
