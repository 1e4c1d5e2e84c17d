package logictest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
)

// SessionFactory makes the go-mysql-server session of one connection. connID
// is unique within the GMS adapter that asks. A backend supplies its own
// (memory.NewSession for GMS's memory backend, ours for Augustus).
type SessionFactory func(ctx context.Context, connID uint32) (sql.Session, error)

// ContextFactory makes the *sql.Context of one statement from its options, as
// the GMS server's ContextFactory does; sql.NewContext is the default.
type ContextFactory func(ctx context.Context, opts ...sql.ContextOption) *sql.Context

// RunFunc runs one statement, as (*sqle.Engine).Query does; an engine that
// wraps GMS's with its own statement handling (Augustus' engine.Run:
// autocommit retries, what it reads from the AST, MySQL error codes) plugs
// it in here.
type RunFunc func(ctx *sql.Context, query string) (sql.Schema, sql.RowIter, *sql.QueryFlags, error)

// GMS runs statements on a go-mysql-server engine in this process, the way
// the GMS server's handler does (process list, session command hooks, the
// wire's text conversion of values) but without the wire.
type GMS struct {
	engine     *sqle.Engine
	newSession SessionFactory
	// NewContext replaces sql.NewContext when set (before the first Connect).
	NewContext ContextFactory
	// Run replaces the engine's Query when set (before the first Connect).
	Run RunFunc

	nextConn atomic.Uint32
	nextPid  atomic.Uint64
}

var _ Engine = (*GMS)(nil)

// NewGMS adapts e; every Connect asks newSession for a session.
func NewGMS(e *sqle.Engine, newSession SessionFactory) *GMS {
	return &GMS{engine: e, newSession: newSession}
}

// SQLEngine returns the engine behind the adapter.
func (g *GMS) SQLEngine() *sqle.Engine { return g.engine }

// Connect implements Engine.
func (g *GMS) Connect(ctx context.Context) (Session, error) {
	id := g.nextConn.Add(1)
	sess, err := g.newSession(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("logictest: new session %d: %w", id, err)
	}
	g.engine.ProcessList.AddConnection(id, "logictest")
	g.engine.ProcessList.ConnectionReady(sess)
	return &gmsSession{g: g, id: id, sess: sess}, nil
}

type gmsSession struct {
	g    *GMS
	id   uint32
	sess sql.Session
	// mu keeps a session's statements in order even if a caller shares it
	// between goroutines: a GMS session is not safe for concurrent use.
	mu     sync.Mutex
	closed bool
}

func (s *gmsSession) context(ctx context.Context, query string) *sql.Context {
	newCtx := s.g.NewContext
	if newCtx == nil {
		newCtx = sql.NewContext
	}
	return newCtx(ctx,
		sql.WithSession(s.sess),
		sql.WithPid(s.g.nextPid.Add(1)),
		sql.WithQuery(query),
		sql.WithProcessList(s.g.engine.ProcessList))
}

// run executes query and hands every row to each; it converts GMS's errors
// and panics into *Error so that a crashing statement fails its record
// instead of the whole run.
func (s *gmsSession) run(ctx context.Context, query string, each func(*sql.Context, sql.Schema, sql.Row) error) (sch sql.Schema, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("logictest: session is closed")
	}
	sqlCtx := s.context(ctx, query)
	sqlCtx, err = s.g.engine.ProcessList.BeginQuery(sqlCtx, query)
	if err != nil {
		return nil, gmsError(err)
	}
	defer s.g.engine.ProcessList.EndQuery(sqlCtx)
	if err := sql.SessionCommandBegin(s.sess); err != nil {
		return nil, gmsError(err)
	}
	defer sql.SessionCommandEnd(s.sess)
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Code: mysql.ERUnknownError, State: mysql.SSUnknownSQLState,
				Message: fmt.Sprintf("panic: %v\n%s", r, debug.Stack())}
		}
	}()

	run := s.g.Run
	if run == nil {
		run = s.g.engine.Query
	}
	sch, iter, _, err := run(sqlCtx, query)
	if err != nil {
		return nil, gmsError(err)
	}
	for {
		row, err := iter.Next(sqlCtx)
		if err == io.EOF {
			break
		}
		if err == nil {
			err = each(sqlCtx, sch, row)
		}
		if err != nil {
			_ = iter.Close(sqlCtx)
			return nil, gmsError(err)
		}
	}
	// Close commits an autocommit statement's transaction
	// (rowexec.TransactionCommittingIter), so its error is the statement's.
	if err := iter.Close(sqlCtx); err != nil {
		return nil, gmsError(err)
	}
	return sch, nil
}

// Exec implements Session.
func (s *gmsSession) Exec(ctx context.Context, stmt string) (ExecResult, error) {
	var res ExecResult
	_, err := s.run(ctx, stmt, func(_ *sql.Context, _ sql.Schema, row sql.Row) error {
		if len(row) == 1 {
			if ok, isOK := row[0].(types.OkResult); isOK {
				res.RowsAffected += ok.RowsAffected
				res.LastInsertID = ok.InsertID
			}
		}
		return nil
	})
	return res, err
}

// Query implements Session. Values are converted with the column's type
// exactly as the server's handler does before it writes a row on the wire.
func (s *gmsSession) Query(ctx context.Context, query string) (*Rows, error) {
	rows := &Rows{}
	sch, err := s.run(ctx, query, func(sqlCtx *sql.Context, sch sql.Schema, row sql.Row) error {
		if types.IsOkResultSchema(sch) {
			return nil
		}
		if len(row) < len(sch) {
			return fmt.Errorf("logictest: row of %d values for %d columns", len(row), len(sch))
		}
		vals := make([]Value, len(sch))
		for i, col := range sch {
			if row[i] == nil {
				vals[i] = NullValue
				continue
			}
			v, err := col.Type.SQL(sqlCtx, nil, row[i])
			if err != nil {
				return fmt.Errorf("logictest: column %s: %w", col.Name, err)
			}
			if v.IsNull() {
				vals[i] = NullValue
			} else {
				vals[i] = Text(v.ToString())
			}
		}
		rows.Values = append(rows.Values, vals)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !types.IsOkResultSchema(sch) {
		for _, col := range sch {
			rows.Columns = append(rows.Columns, col.Name)
		}
	}
	return rows, nil
}

// Close implements Session: an open transaction is rolled back, as a server
// does when a client disconnects.
func (s *gmsSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if tx := s.sess.GetTransaction(); tx != nil {
		if ts, ok := s.sess.(sql.TransactionSession); ok {
			if rerr := ts.Rollback(s.context(context.Background(), "ROLLBACK"), tx); rerr != nil {
				err = fmt.Errorf("logictest: rollback at close: %w", rerr)
			}
		}
		s.sess.SetTransaction(nil)
	}
	s.g.engine.CloseSession(s.id)
	s.g.engine.ProcessList.RemoveConnection(s.id)
	sql.SessionEnd(s.sess)
	return err
}

// gmsError converts a GMS error into *Error: a *mysql.SQLError anywhere in
// the chain keeps its number and state; anything else gets the code GMS's
// server would send (sql.CastSQLError, which only looks at the outermost
// error, so the chain is walked until it knows one).
func gmsError(err error) error {
	if err == nil {
		return nil
	}
	if e := AsError(err); e != nil {
		return err
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		return &Error{Code: uint16(se.Num), State: se.State, Message: se.Message}
	}
	cast := sql.CastSQLError(err)
	for inner := errors.Unwrap(err); inner != nil && cast.Num == mysql.ERUnknownError; inner = errors.Unwrap(inner) {
		if c := sql.CastSQLError(inner); c.Num != mysql.ERUnknownError {
			cast = c
		}
	}
	return &Error{Code: uint16(cast.Num), State: cast.State, Message: err.Error()}
}
