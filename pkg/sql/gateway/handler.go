package gateway

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// rowsBatch is how many rows go in one callback to vitess (GMS's value).
const rowsBatch = 128

// maxPlaceholders is the most placeholders a prepared statement may have:
// vitess sizes the NULL bitmap of an execution as (count+7)/8 in 16 bits,
// which wraps above 65528 and panics while decoding it (gms-notes §9), and
// it counts placeholders in 16 bits too.
const maxPlaceholders = 65528

// handler is the gateway's mysql.Handler. It embeds GMS's handler for the
// connection lifecycle and prepare, and runs statements itself through
// engine.Run.
type handler struct {
	mysql.Handler // GMS's *server.Handler
	sm            *server.SessionManager
	g             *Gateway
}

var _ mysql.Handler = (*handler)(nil)

// NewConnection tracks the connection, so Shutdown can close it.
func (h *handler) NewConnection(c *mysql.Conn) {
	h.Handler.NewConnection(c)
	h.g.addConn(c)
}

// ConnectionClosed forgets the connection. Its session, and an open
// transaction in it, go with it: nothing was sent that needs undoing
// (session.Session.Rollback).
func (h *handler) ConnectionClosed(c *mysql.Conn) {
	defer h.g.removeConn(c)
	h.Handler.ConnectionClosed(c)
}

// ConnectionAborted counts a connection that never got established.
func (h *handler) ConnectionAborted(c *mysql.Conn, reason string) error {
	reasonLabel := "handshake"
	if strings.Contains(strings.ToLower(reason), "access denied") || strings.Contains(strings.ToLower(reason), "auth") {
		reasonLabel = "auth"
	}
	h.g.metrics.refused.WithLabelValues(reasonLabel).Inc()
	h.g.log.Debug("connection aborted", "conn", c.ConnectionID, "remote", remoteOf(c), "reason", reason)
	return h.Handler.ConnectionAborted(c, reason)
}

// ComQuery runs one statement of COM_QUERY.
func (h *handler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	_, err := h.query(ctx, c, query, false, callback)
	return err
}

// ComMultiQuery runs the first statement of a multi-statement COM_QUERY and
// returns the rest, which vitess hands back until it is empty.
func (h *handler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	return h.query(ctx, c, query, true, callback)
}

// ComPrepare prepares through GMS (it parses and caches the statement for
// the session), recovering a panic, and refuses what vitess could not
// execute.
func (h *handler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) (fields []*querypb.Field, err error) {
	start := time.Now()
	done, err := h.g.begin()
	if err != nil {
		return nil, err
	}
	defer done()
	defer func() {
		if p := recover(); p != nil {
			err = h.panicked(c, nil, query, p)
		}
		h.g.metrics.Observe(KindPrepare, PathEngine, time.Since(start), err)
	}()
	if prepare.ParamsCount > maxPlaceholders || countPlaceholders(query) > maxPlaceholders {
		return nil, mysql.NewSQLError(1390, "HY000", "Prepared statement contains too many placeholders (at most %d)", maxPlaceholders)
	}
	fields, err = h.Handler.ComPrepare(ctx, c, query, prepare)
	if err != nil {
		return nil, sql.CastSQLError(err)
	}
	return fields, nil
}

// ComStmtExecute runs a prepared statement with its bind variables.
func (h *handler) ComStmtExecute(ctx context.Context, c *mysql.Conn, prepare *mysql.PrepareData, callback func(*sqltypes.Result) error) error {
	bindings, err := bindingsToExprs(prepare.BindVars)
	if err != nil {
		return sql.CastSQLError(err)
	}
	_, err = h.run(ctx, c, stmt{query: prepare.PrepareStmt, bindings: bindings, prepared: true},
		func(r *sqltypes.Result, _ bool) error { return callback(r) })
	return err
}

// stmt is one statement to run.
type stmt struct {
	query     string
	parsed    sqlparser.Statement
	bindings  map[string]sqlparser.Expr
	prepared  bool
	multi     bool   // query may hold several statements: run the first
	remainder string // the statements after it (multi-statements)
	do        bool   // DO expr, run as SELECT expr
}

// query runs the first statement of query (multi: the client sent several;
// the rest is returned).
func (h *handler) query(ctx context.Context, c *mysql.Conn, query string, multi bool, callback mysql.ResultSpoolFn) (string, error) {
	return h.run(ctx, c, stmt{query: query, multi: multi}, callback)
}

// split finds the statement to run: the first of a multi-statement query
// (by GMS's parser, which knows compound statements; the rest goes to
// st.remainder), and DO, which the parser rejects, rewritten as a SELECT.
func (h *handler) split(ctx *sql.Context, st *stmt) error {
	if st.prepared {
		return nil
	}
	first, rest := st.query, ""
	if st.multi {
		var err error
		if first, rest, err = sqlparser.SplitStatement(st.query); err != nil {
			return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax: %s", err.Error())
		}
	}
	if q, ok := doStatement(first); ok {
		st.query, st.do, st.remainder = q, true, statementsIn(rest)
		return nil
	}
	if !st.multi {
		return nil
	}
	parsed, prequery, remainder, err := h.g.eng.SQL.Parser.Parse(ctx, st.query, true)
	if err != nil {
		return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax: %s", err.Error())
	}
	st.parsed, st.remainder = parsed, statementsIn(remainder)
	if prequery != "" {
		st.query = prequery
	}
	return nil
}

// statementsIn returns rest, or "" when it holds no statement (only spaces,
// comments and semicolons), which MySQL ignores after the last statement.
func statementsIn(rest string) string {
	tok := sqlparser.NewStringTokenizer(rest)
	for {
		typ, _ := tok.Scan()
		switch typ {
		case 0:
			return ""
		case sqlparser.COMMENT, ';':
			continue
		}
		return strings.TrimSpace(rest)
	}
}

// doPattern matches DO expr[, expr...] after comments and spaces; the
// expressions are kept.
var doPattern = regexp.MustCompile(`(?is)^\s*(?:/\*.*?\*/\s*)*DO\s+(.+?)\s*;?\s*$`)

// doStatement rewrites DO expr to SELECT expr: MySQL evaluates the
// expressions and returns no result, which clients use as a cheap ping or to
// call functions for their effect; vitess's parser does not know DO.
func doStatement(q string) (string, bool) {
	m := doPattern.FindStringSubmatch(q)
	if m == nil {
		return q, false
	}
	return "SELECT " + m[1], true
}

// run runs one statement and hands its result to callback. Nothing in it
// may escape as a panic: GMS and vitess panic on some inputs, and a panic
// here would close the connection (vitess recovers it per connection).
func (h *handler) run(ctx context.Context, c *mysql.Conn, st stmt, callback mysql.ResultSpoolFn) (remainder string, err error) {
	start := time.Now()
	kind := KindUnparsed
	done, err := h.g.begin()
	if err != nil {
		return "", err
	}
	defer done()
	ctx, cancel := h.g.statementContext(ctx)
	defer cancel()

	sqlCtx, err := h.sm.NewContextWithQuery(ctx, c, st.query)
	if err != nil {
		return "", sql.CastSQLError(err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = h.panicked(c, sqlCtx, st.query, p)
		}
		if err != nil {
			err = sql.CastSQLError(err)
		}
		h.g.metrics.Observe(kind, PathEngine, time.Since(start), err)
	}()
	// No ProcessList.BeginQuery, unlike GMS's handler: the query context
	// it returns is cancelled when the statement's iterator closes (GMS's
	// TrackedRowIter ends the query), and engine.Run closes an autocommit
	// statement's iterator before it decides to run the statement again —
	// which a cancelled context would forbid. SHOW PROCESSLIST therefore
	// shows gateway sessions as sleeping, and KILL QUERY does not reach
	// them (KILL CONNECTION does).
	if err := sql.SessionCommandBegin(sqlCtx.Session); err != nil {
		return "", err
	}
	defer sql.SessionCommandEnd(sqlCtx.Session)

	if err := h.split(sqlCtx, &st); err != nil {
		return "", err
	}
	if st.prepared {
		// The statement GMS parsed and cached at COM_STMT_PREPARE.
		st.parsed, _ = h.g.eng.SQL.PreparedDataCache.GetCachedStmt(sqlCtx.Session.ID(), sql.RemoveSpaceAndDelimiter(st.query, ';'))
	}
	if st.parsed == nil {
		parsed, _, err := h.g.eng.SQL.Parser.ParseOneWithOptions(sqlCtx, st.query, sql.LoadSqlMode(sqlCtx).ParserOptions())
		if err != nil {
			return "", mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax: %s", err.Error())
		}
		st.parsed = parsed
	}
	kind = KindOf(st.parsed)
	if st.do {
		kind = KindDo
	}
	if isAccountStatement(st.parsed) {
		return "", errAccounts()
	}
	if isWrite(kind) && readOnlyNow(sqlCtx) {
		// GMS's analyzer would panic on this (gms-notes §9); the session
		// refuses such writes too, but only once they reach it.
		return "", session.ReadOnly()
	}
	if testHookBeforeRun != nil {
		testHookBeforeRun(st.query)
	}

	sch, iter, _, err := h.g.eng.Run(sqlCtx, st.query, st.parsed, st.bindings)
	if err != nil {
		return "", err
	}
	more := st.remainder != ""
	if err := h.send(sqlCtx, c, st, sch, iter, more, callback); err != nil {
		return "", err
	}
	return st.remainder, nil
}

// send converts a statement's rows and hands them to vitess: an OK result
// for statements without a result set (and for DO), else the rows in
// batches. It holds up to SendBuffer bytes before the first batch, so that
// a statement whose result fits there reports a late error as an error
// packet rather than as a closed connection (see the package comment).
func (h *handler) send(ctx *sql.Context, c *mysql.Conn, st stmt, sch sql.Schema, iter sql.RowIter, more bool, callback mysql.ResultSpoolFn) (err error) {
	closed := false
	defer func() {
		if !closed {
			if cerr := iter.Close(ctx); err == nil {
				err = cerr
			}
		}
	}()
	if st.do || types.IsOkResultSchema(sch) || len(sch) == 0 {
		r := &sqltypes.Result{}
		for {
			row, err := iter.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if !st.do && len(row) == 1 && types.IsOkResult(row) {
				r = resultFromOk(row[0].(types.OkResult))
			}
		}
		closed = true
		if err := iter.Close(ctx); err != nil {
			return err
		}
		setStatusFlags(ctx, c)
		return callback(r, more)
	}

	fields := schemaToFields(ctx, sch)
	r := &sqltypes.Result{Fields: fields}
	var pending []*sqltypes.Result // held until the first send
	held, sent := 0, false
	buf := sql.ByteBufPool.Get().(*sql.ByteBuffer)
	defer func() {
		buf.Reset()
		sql.ByteBufPool.Put(buf)
	}()
	flush := func() error {
		for _, p := range pending {
			if err := callback(p, more); err != nil {
				return err
			}
		}
		pending, sent = nil, true
		buf.Reset()
		return nil
	}
	for {
		row, err := iter.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		out, err := server.RowToSQL(ctx, sch, row, nil, buf)
		if err != nil {
			return err
		}
		r.Rows = append(r.Rows, out)
		r.RowsAffected++
		for _, v := range out {
			held += v.Len() + 8
		}
		if len(r.Rows) == rowsBatch {
			pending = append(pending, r)
			r = &sqltypes.Result{Fields: fields}
			if sent || held > h.g.sendBuffer {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	closed = true
	if err := iter.Close(ctx); err != nil {
		return err
	}
	setStatusFlags(ctx, c)
	if len(r.Rows) > 0 || (len(pending) == 0 && !sent) {
		pending = append(pending, r)
	}
	return flush()
}

// panicked turns a recovered panic into the statement's error: the panic is
// logged with its stack and counted, and the session's transaction rolled
// back, since the statement may have stopped half-way through changing it.
func (h *handler) panicked(c *mysql.Conn, ctx *sql.Context, query string, p any) error {
	h.g.metrics.panics.Inc()
	h.g.log.Error("statement panicked; it was abandoned and its session's transaction rolled back, the connection stays open",
		"conn", c.ConnectionID, "query", truncate(query, 200), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	rolledBack := ""
	if ctx != nil {
		if resetSession(ctx) {
			rolledBack = "; the transaction was rolled back"
		}
	}
	return mysql.NewSQLError(mysql.ERUnknownError, "HY000",
		"internal error in the gateway while running this statement (%v)%s; the connection stays open", p, rolledBack)
}

// resetSession drops the session's transaction and staged schema change
// after a panic, and reports whether there was a transaction.
func resetSession(ctx *sql.Context) (hadTxn bool) {
	defer func() { _ = recover() }() // the session may be in any state
	sess, ok := session.FromContext(ctx)
	if !ok {
		return false
	}
	if tx := ctx.GetTransaction(); tx != nil {
		hadTxn = true
		_ = sess.Rollback(ctx, tx)
	}
	sess.SetDDL(nil)
	ctx.SetTransaction(nil)
	ctx.SetIgnoreAutoCommit(false)
	return hadTxn
}

// testHookBeforeRun, if set (tests only), is called before a statement
// runs: the tests make it panic to check the recovery.
var testHookBeforeRun func(query string)

// isWrite reports the statement kinds that change rows.
func isWrite(k Kind) bool {
	switch k {
	case KindInsert, KindReplace, KindUpdate, KindDelete:
		return true
	}
	return false
}

// readOnlyNow reports whether the statement about to run belongs to a READ
// ONLY transaction: the explicit transaction open on the session, or else
// the one the statement will start under SET TRANSACTION READ ONLY
// (session.Session.StartTransaction's rule).
func readOnlyNow(ctx *sql.Context) bool {
	if tx := ctx.GetTransaction(); tx != nil && ctx.GetIgnoreAutoCommit() {
		return tx.IsReadOnly()
	}
	v, err := ctx.GetSessionVariable(ctx, "transaction_read_only")
	if err != nil {
		return false
	}
	ro, _ := sql.ConvertToBool(ctx, v)
	return ro
}

// isAccountStatement reports statements that would change accounts or
// grants.
func isAccountStatement(s sqlparser.Statement) bool {
	switch s.(type) {
	case *sqlparser.CreateUser, *sqlparser.RenameUser, *sqlparser.DropUser, *sqlparser.CreateRole,
		*sqlparser.DropRole, *sqlparser.GrantPrivilege, *sqlparser.GrantRole, *sqlparser.GrantProxy,
		*sqlparser.RevokePrivilege, *sqlparser.RevokeAllPrivileges, *sqlparser.RevokeRole, *sqlparser.RevokeProxy:
		return true
	}
	return false
}

// countPlaceholders counts the ? of a statement outside quotes and
// comments, as the parser would, to refuse before vitess's 16-bit counter
// wraps.
func countPlaceholders(q string) int {
	if !strings.Contains(q, "?") {
		return 0
	}
	n := 0
	tok := sqlparser.NewStringTokenizer(q)
	for {
		typ, _ := tok.Scan()
		if typ == 0 || typ == sqlparser.LEX_ERROR {
			return n
		}
		if typ == sqlparser.VALUE_ARG {
			n++
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func remoteOf(c *mysql.Conn) string {
	if c == nil || c.Conn == nil {
		return ""
	}
	return c.RemoteAddr().String()
}
