package engine

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Run runs one statement of a session, as GMS's QueryWithBindings does
// (parsed and bindings optional: the gateway passes a prepared statement's
// AST and bind variables), with what Augustus adds around it:
//
//   - It reads the parsed statement for what GMS does not pass to a
//     backend: PARTITION BY of CREATE TABLE (placement), INSERT IGNORE and
//     ON DUPLICATE KEY UPDATE (duplicates checked while the statement
//     runs), TRUNCATE as opposed to DELETE without WHERE.
//   - An autocommit statement runs to completion before its rows are
//     returned, and one that fails with a serialization failure (1213) or a
//     schema change is run again from the start — parsed, planned and
//     executed anew, since its reads may differ and its plan may be stale —
//     up to Config.MaxRetries times, after reloading the catalog when the
//     schema changed.
//   - In an explicit transaction a failed statement leaves nothing of its
//     own writes behind; a serialization failure rolls the whole
//     transaction back, as MySQL does after a deadlock, and the client
//     restarts it.
//   - GMS drops a transaction on some errors without Rollback (gms-notes
//     §2): Run forgets whatever a failed statement left on the session.
//
// Errors are MySQL errors (*mysql.SQLError) where one applies. The gateway
// and the embedded driver both run statements through Run.
func (e *Engine) Run(ctx *sql.Context, query string, parsed sqlparser.Statement, bindings map[string]sqlparser.Expr) (sql.Schema, sql.RowIter, *sql.QueryFlags, error) {
	sess, ok := session.FromContext(ctx)
	if !ok {
		return nil, nil, nil, errors.New("engine: the session is not an Augustus session")
	}
	if parsed == nil {
		stmt, _, err := e.SQL.Parser.ParseOneWithOptions(ctx, query, sql.LoadSqlMode(ctx).ParserOptions())
		if err != nil {
			return nil, nil, nil, parseError(err)
		}
		parsed = stmt
	}
	flags, err := StatementFlags(parsed)
	if err != nil {
		return nil, nil, nil, mysqlErr(err)
	}
	control := isControl(parsed)
	if listsCatalog(parsed, query) {
		// SHOW, EXPLAIN and information_schema read only the catalog: catch
		// up with other front-ends' schema changes first (data statements
		// learn of them from their transactions' version compare, M2).
		e.Provider.Refresh(ctx)
	}
	for attempt := 0; ; attempt++ {
		e.beforeStatement(ctx, sess)
		sess.SetFlags(flags)
		explicit := ctx.GetIgnoreAutoCommit()
		autocommit := false
		if !explicit {
			autocommit, _ = plan.IsSessionAutocommit(ctx)
		}
		if !autocommit || control {
			return e.runInTxn(ctx, sess, query, parsed, bindings)
		}
		sch, rows, rest, qf, err := e.runBuffered(ctx, query, parsed, bindings)
		if err == nil {
			if rest != nil {
				// Too many rows to hold for a retry: the rest streams, and an
				// error after this point reaches the client as it is.
				return sch, &streamIter{e: e, sess: sess, rows: rows, rest: rest}, qf, nil
			}
			return sch, sql.RowsToRowIter(rows...), qf, nil
		}
		e.abandon(ctx, sess)
		if !session.IsRetryable(err) || attempt >= e.cfg.MaxRetries || ctx.Err() != nil {
			return nil, nil, nil, mysqlErr(err)
		}
		if errors.Is(err, session.ErrSchemaChanged) || sess.TakeStale() != 0 {
			if _, rerr := e.cat.Reload(ctx); rerr != nil {
				return nil, nil, nil, mysqlErr(err)
			}
		}
		// Jittered back-off: the statement met a concurrent one; a retry at
		// once would likely meet it again.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
	}
}

// runBuffered runs a statement and drains it (its autocommit commit happens
// at Close), holding at most Config.RetryRows rows: beyond that it returns
// the rows so far and the iterator of the rest, still open.
func (e *Engine) runBuffered(ctx *sql.Context, query string, parsed sqlparser.Statement, bindings map[string]sqlparser.Expr) (sql.Schema, []sql.Row, sql.RowIter, *sql.QueryFlags, error) {
	sch, iter, qf, err := e.SQL.QueryWithBindings(ctx, query, parsed, bindings, nil)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var rows []sql.Row
	for {
		if len(rows) >= e.cfg.RetryRows {
			return sch, rows, iter, qf, nil
		}
		r, err := iter.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = iter.Close(ctx)
			return nil, nil, nil, nil, err
		}
		rows = append(rows, r)
	}
	if err := iter.Close(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	return sch, rows, nil, qf, nil
}

// streamIter returns buffered rows, then the rest of a statement too large
// to buffer; a failure cleans the session up as any failed autocommit
// statement.
type streamIter struct {
	e    *Engine
	sess *session.Session
	rows []sql.Row
	i    int
	rest sql.RowIter
}

func (it *streamIter) Next(ctx *sql.Context) (sql.Row, error) {
	if it.i < len(it.rows) {
		it.i++
		return it.rows[it.i-1], nil
	}
	r, err := it.rest.Next(ctx)
	if err != nil && err != io.EOF {
		it.e.abandon(ctx, it.sess)
		return nil, mysqlErr(err)
	}
	return r, err
}

func (it *streamIter) Close(ctx *sql.Context) error {
	if err := it.rest.Close(ctx); err != nil {
		it.e.abandon(ctx, it.sess)
		return mysqlErr(err)
	}
	return nil
}

// runInTxn runs a statement of an explicit transaction (or a transaction
// control statement), streaming its rows.
func (e *Engine) runInTxn(ctx *sql.Context, sess *session.Session, query string, parsed sqlparser.Statement, bindings map[string]sqlparser.Expr) (sql.Schema, sql.RowIter, *sql.QueryFlags, error) {
	mark := -1
	var tx *session.Txn
	if gt := ctx.GetTransaction(); gt != nil {
		if tx, _ = gt.(*session.Txn); tx != nil {
			mark = tx.Mark()
		}
	}
	sch, iter, qf, err := e.SQL.QueryWithBindings(ctx, query, parsed, bindings, nil)
	if err != nil {
		e.failed(ctx, sess, tx, mark, err)
		return nil, nil, nil, mysqlErr(err)
	}
	return sch, &txnIter{e: e, ctx: ctx, sess: sess, tx: tx, mark: mark, inner: iter}, qf, nil
}

// txnIter undoes a failed statement's writes in an explicit transaction.
type txnIter struct {
	e      *Engine
	ctx    *sql.Context
	sess   *session.Session
	tx     *session.Txn
	mark   int
	inner  sql.RowIter
	failed bool
}

func (it *txnIter) Next(ctx *sql.Context) (sql.Row, error) {
	r, err := it.inner.Next(ctx)
	if err != nil && err != io.EOF && !it.failed {
		it.failed = true
		it.e.failed(it.ctx, it.sess, it.tx, it.mark, err)
		return nil, mysqlErr(err)
	}
	return r, err
}

func (it *txnIter) Close(ctx *sql.Context) error {
	err := it.inner.Close(ctx)
	if err != nil && !it.failed {
		it.failed = true
		it.e.failed(it.ctx, it.sess, it.tx, it.mark, err)
		return mysqlErr(err)
	}
	return err
}

// failed cleans up after a statement that failed outside the autocommit
// retry: a serialization failure ends the transaction (MySQL rolls back on
// a deadlock, and the client restarts), any other error undoes the
// statement's own writes; an autocommit statement's transaction is dropped.
func (e *Engine) failed(ctx *sql.Context, sess *session.Session, tx *session.Txn, mark int, err error) {
	sess.SetDDL(nil)
	if !ctx.GetIgnoreAutoCommit() || session.IsRetryable(err) {
		e.abandon(ctx, sess)
		return
	}
	if tx != nil && mark >= 0 {
		tx.UndoTo(mark)
	}
}

// abandon drops the session's transaction and staged schema change.
func (e *Engine) abandon(ctx *sql.Context, sess *session.Session) {
	if gt := ctx.GetTransaction(); gt != nil {
		_ = sess.Rollback(ctx, gt)
	}
	sess.SetDDL(nil)
	ctx.SetTransaction(nil)
	ctx.SetIgnoreAutoCommit(false)
}

// Statement is a statement run outside Run, between BeforeStatement and
// AfterError.
type Statement struct {
	sess *session.Session
	tx   *session.Txn
	mark int
}

// BeforeStatement prepares a session for a statement run outside Run (by
// GMS's server handler, through an Interceptor): it forgets what an
// earlier failed statement left, sets the statement's flags, refreshes the
// catalog before statements that only read it, and marks the transaction so
// that AfterError can undo the statement. Run does the same, and retries.
func (e *Engine) BeforeStatement(ctx *sql.Context, parsed sqlparser.Statement, query string) (*Statement, error) {
	sess, ok := session.FromContext(ctx)
	if !ok {
		return nil, errors.New("engine: the session is not an Augustus session")
	}
	flags, err := StatementFlags(parsed)
	if err != nil {
		return nil, mysqlErr(err)
	}
	if listsCatalog(parsed, query) {
		e.Provider.Refresh(ctx)
	}
	e.beforeStatement(ctx, sess)
	sess.SetFlags(flags)
	st := &Statement{sess: sess, mark: -1}
	if gt := ctx.GetTransaction(); gt != nil {
		if st.tx, _ = gt.(*session.Txn); st.tx != nil {
			st.mark = st.tx.Mark()
		}
	}
	return st, nil
}

// AfterError cleans the session up after the statement failed (as Run does:
// the statement's writes undone, the transaction ended on 1213, an
// autocommit transaction dropped) and returns the error as the MySQL error
// a client should see.
func (e *Engine) AfterError(ctx *sql.Context, st *Statement, err error) error {
	if st != nil {
		e.failed(ctx, st.sess, st.tx, st.mark, err)
	}
	return mysqlErr(err)
}

// beforeStatement forgets what an earlier failed statement left: GMS keeps
// a transaction after some errors without rolling it back, which in
// autocommit mode would carry its reads and writes into this statement.
func (e *Engine) beforeStatement(ctx *sql.Context, sess *session.Session) {
	sess.SetDDL(nil)
	sess.TakeStale()
	if !ctx.GetIgnoreAutoCommit() && ctx.GetTransaction() != nil {
		if auto, _ := plan.IsSessionAutocommit(ctx); auto {
			e.abandon(ctx, sess)
		}
	}
}

// listsCatalog reports statements that read the catalog and no table data
// (SHOW, EXPLAIN, information_schema).
func listsCatalog(s sqlparser.Statement, query string) bool {
	switch s.(type) {
	case *sqlparser.Show, *sqlparser.Explain:
		return true
	}
	return len(query) > 18 && strings.Contains(strings.ToLower(query), "information_schema")
}

// isControl reports transaction control statements, which are never run
// again.
func isControl(s sqlparser.Statement) bool {
	switch s.(type) {
	case *sqlparser.Begin, *sqlparser.Commit, *sqlparser.Rollback, *sqlparser.Savepoint,
		*sqlparser.RollbackSavepoint, *sqlparser.ReleaseSavepoint, *sqlparser.Set:
		return true
	}
	return false
}

// StatementFlags reads from a parsed statement what GMS does not tell the
// backend (placement, duplicate checks, TRUNCATE). Run sets them on the
// session; a front-end that drives GMS's own server handler instead sets
// them from its Interceptor (session.SetFlags) before the statement runs.
func StatementFlags(s sqlparser.Statement) (session.Flags, error) {
	var f session.Flags
	switch st := s.(type) {
	case *sqlparser.Insert:
		f.SyncDuplicates = st.Ignore != "" || len(st.OnDup) > 0
	case *sqlparser.DDL:
		switch strings.ToLower(st.Action) {
		case sqlparser.TruncateStr:
			f.Truncate = true
		case sqlparser.CreateStr:
			if st.TableSpec != nil && st.TableSpec.PartitionOpt != nil {
				spec, err := placementOf(st.TableSpec)
				if err != nil {
					return f, err
				}
				f.Placement = spec
			}
		}
	}
	return f, nil
}

// placementOf turns a CREATE TABLE's PARTITION BY into a placement spec
// (backend.ParsePlacement): RANGE over the primary key's first column by its
// partitions' bounds, KEY or HASH over every group. Groups are chosen
// round-robin.
func placementOf(ts *sqlparser.TableSpec) (string, error) {
	po := ts.PartitionOpt
	unsupported := func(why string) error {
		return sql.ErrUnsupportedFeature.New(fmt.Sprintf("PARTITION BY %s: %s", po.PartitionType, why))
	}
	if po.SubPartition != nil {
		return "", unsupported("subpartitions")
	}
	cols := partitionColumns(po)
	pk := primaryKeyColumns(ts)
	if len(cols) != 1 || len(pk) == 0 || !strings.EqualFold(cols[0], pk[0]) {
		return "", unsupported(fmt.Sprintf("Augustus places a table by its primary key's first column (%v), not %v", pk, cols))
	}
	switch strings.ToUpper(po.PartitionType) {
	case "KEY", "HASH":
		return "hash", nil
	case "RANGE":
		if len(po.Definitions) == 0 {
			return "", unsupported("no partitions")
		}
		var parts []string
		for i, d := range po.Definitions {
			last := i == len(po.Definitions)-1
			bound := "MAXVALUE"
			if !d.Maxvalue {
				if last {
					return "", unsupported("the last partition must be VALUES LESS THAN MAXVALUE")
				}
				bound = sqlparser.String(d.Limit)
				if strings.ContainsAny(bound, ",()@<") {
					return "", unsupported(fmt.Sprintf("bound %s", bound))
				}
			} else if !last {
				return "", unsupported("MAXVALUE before the last partition")
			}
			parts = append(parts, fmt.Sprintf("%s<%s", d.Name.String(), bound))
		}
		return "range(" + strings.Join(parts, ",") + ")", nil
	}
	return "", unsupported("only RANGE, KEY and HASH")
}

func partitionColumns(po *sqlparser.PartitionOption) []string {
	var out []string
	for _, c := range po.ColList {
		out = append(out, c.String())
	}
	if po.Expr != nil {
		if cn, ok := po.Expr.(*sqlparser.ColName); ok {
			out = append(out, cn.Name.String())
		} else {
			out = append(out, sqlparser.String(po.Expr))
		}
	}
	return out
}

func primaryKeyColumns(ts *sqlparser.TableSpec) []string {
	for _, ix := range ts.Indexes {
		if ix.Info != nil && ix.Info.Primary {
			var out []string
			for _, c := range ix.Columns {
				out = append(out, c.Column.String())
			}
			return out
		}
	}
	for _, c := range ts.Columns {
		if c.Type.KeyOpt == 1 { // colKeyPrimary
			return []string{c.Name.String()}
		}
	}
	return nil
}

// Query runs one statement with Run and returns all its rows (tests and
// tools).
func (e *Engine) Query(ctx *sql.Context, query string) (sql.Schema, []sql.Row, error) {
	sch, iter, _, err := e.Run(ctx, query, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	if err != nil {
		return nil, nil, mysqlErr(err)
	}
	return sch, rows, nil
}
