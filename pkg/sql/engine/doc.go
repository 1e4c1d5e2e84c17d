// Package engine assembles a ready go-mysql-server engine over one
// Augustus transaction client: the catalog (pkg/sql/catalog), the backend
// (pkg/sql/backend), sessions with the serializable BFT Derby transaction
// model (pkg/sql/session), and Run, the statement runner that the MySQL
// gateway, the embedded database/sql driver and the SQL logic tests share:
// it reads from the parsed statement what GMS does not pass to a backend
// (placement, INSERT IGNORE / ON DUPLICATE KEY UPDATE, TRUNCATE), runs an
// autocommit statement to completion and runs it again from the start after
// a serialization failure or a schema change (a bounded number of times),
// and keeps a failed statement from leaving anything behind.
//
// Use:
//
//	e, err := engine.New(ctx, engine.Config{Client: client})
//	defer e.Close()
//	s := e.NewSession(sql.Client{User: "root"}, "", 0)   // or e.SessionBuilder for server.NewServer
//	sctx := e.NewContext(ctx, s)
//	schema, rows, _, err := e.Run(sctx, "SELECT 1", nil, nil)
//
// The process shares one coord.Client (one nonce sequence, txn.md W3; its
// envelopes batch the calls of all sessions). Imports: GMS and the other
// pkg/sql packages, pkg/txn/coord. Goroutines: the schema changer's, owned
// by the Engine and stopped by Close.
package engine
