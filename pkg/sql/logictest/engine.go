package logictest

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Engine is the seam between the conformance runners and an SQL engine under
// test. It is deliberately small, so that anything that runs SQL can stand
// behind it: a go-mysql-server engine in this process (NewGMS), a
// database/sql pool over a driver or the MySQL wire (NewSQLDB), or a
// hand-written fake in a test.
type Engine interface {
	// Connect opens a session: one logical connection, whose statements run
	// in order and share session state (current database, variables, the
	// open transaction). The runners open one per named session.
	Connect(ctx context.Context) (Session, error)
}

// Session is one connection of an Engine.
type Session interface {
	// Exec runs a statement and discards any rows it returns.
	Exec(ctx context.Context, stmt string) (ExecResult, error)
	// Query runs a statement that returns rows and returns all of them.
	Query(ctx context.Context, query string) (*Rows, error)
	// Close ends the session; an open transaction is rolled back.
	Close() error
}

// ExecResult is what a statement that returns no rows reports.
type ExecResult struct {
	RowsAffected uint64
	LastInsertID uint64
}

// Rows is the complete result of a query.
type Rows struct {
	// Columns are the result's column names.
	Columns []string
	// Values are the rows, each with len(Columns) values.
	Values [][]Value
}

// Value is one column value as the MySQL text protocol carries it: its text
// form, or NULL. Both adapters produce exactly what a MySQL client would
// read, so a file's expectations do not depend on the adapter.
type Value struct {
	Text string
	Null bool
}

// NullValue is SQL NULL.
var NullValue = Value{Null: true}

// Text returns a non-NULL value.
func Text(s string) Value { return Value{Text: s} }

// String renders NULL as "NULL" and any other value as its text.
func (v Value) String() string {
	if v.Null {
		return "NULL"
	}
	return v.Text
}

// Error is an error as a MySQL server reports it: an error number, an
// SQLSTATE and a message. The adapters convert their engine's errors to it,
// so that a test can say "statement error 1062" whatever runs behind the
// seam.
type Error struct {
	Code    uint16
	State   string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Message)
}

// AsError returns err's MySQL error, or nil if err carries none.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// ErrorString renders err the way the runners print it: the MySQL client's
// "ERROR code (state): message" when it carries a MySQL error, its plain text
// otherwise. Line breaks become spaces so the result fits one line (a
// datadriven expectation is line-oriented).
func ErrorString(err error) string {
	s := err.Error()
	if e := AsError(err); e != nil {
		s = e.Error()
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
