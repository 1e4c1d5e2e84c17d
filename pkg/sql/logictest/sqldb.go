package logictest

import (
	"context"
	gosql "database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// SQLDB runs statements through database/sql: over a MySQL server with
// github.com/go-sql-driver/mysql, or in process with any driver. Each
// Session holds one *sql.Conn of the pool, so session state (USE, SET,
// BEGIN) stays with it.
type SQLDB struct {
	db *gosql.DB
}

var _ Engine = (*SQLDB)(nil)

// NewSQLDB adapts db. The caller keeps ownership of db (and closes it).
func NewSQLDB(db *gosql.DB) *SQLDB { return &SQLDB{db: db} }

// Connect implements Engine.
func (d *SQLDB) Connect(ctx context.Context) (Session, error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("logictest: connect: %w", sqldbError(err))
	}
	return &sqldbSession{conn: conn}, nil
}

type sqldbSession struct {
	conn *gosql.Conn
}

// Exec implements Session.
func (s *sqldbSession) Exec(ctx context.Context, stmt string) (ExecResult, error) {
	res, err := s.conn.ExecContext(ctx, stmt)
	if err != nil {
		return ExecResult{}, sqldbError(err)
	}
	var out ExecResult
	// A driver may not know either figure (a DDL statement); 0 is what a
	// MySQL client shows then.
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		out.RowsAffected = uint64(n)
	}
	if id, err := res.LastInsertId(); err == nil && id > 0 {
		out.LastInsertID = uint64(id)
	}
	return out, nil
}

// Query implements Session. Values are scanned as raw bytes, which is the
// text protocol's form of every type; a driver that hands back typed values
// (the binary protocol of prepared statements, in-process drivers) is
// formatted with fmt's default verb.
func (s *sqldbSession) Query(ctx context.Context, query string) (*Rows, error) {
	rs, err := s.conn.QueryContext(ctx, query)
	if err != nil {
		return nil, sqldbError(err)
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, sqldbError(err)
	}
	out := &Rows{Columns: cols}
	dest := make([]any, len(cols))
	for rs.Next() {
		raw := make([]any, len(cols))
		for i := range raw {
			dest[i] = &raw[i]
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, sqldbError(err)
		}
		vals := make([]Value, len(cols))
		for i, v := range raw {
			switch v := v.(type) {
			case nil:
				vals[i] = NullValue
			case []byte:
				vals[i] = Text(string(v))
			case string:
				vals[i] = Text(v)
			case bool:
				// MySQL has no boolean on the wire: TRUE is 1.
				if v {
					vals[i] = Text("1")
				} else {
					vals[i] = Text("0")
				}
			default:
				vals[i] = Text(fmt.Sprint(v))
			}
		}
		out.Values = append(out.Values, vals)
	}
	if err := rs.Err(); err != nil {
		return nil, sqldbError(err)
	}
	return out, nil
}

// Close implements Session. Returning the connection to the pool would
// carry its session state (an open transaction) to the next user, so it is
// closed for good instead: database/sql discards a connection whose Raw
// callback reports driver.ErrBadConn.
func (s *sqldbSession) Close() error {
	_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	if err := s.conn.Close(); err != nil && !errors.Is(err, gosql.ErrConnDone) {
		return fmt.Errorf("logictest: close: %w", err)
	}
	return nil
}

// sqldbError converts the MySQL driver's error into *Error; other drivers'
// errors pass through unchanged (they may implement their own codes by
// wrapping *Error).
func sqldbError(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return &Error{Code: me.Number, State: string(me.SQLState[:]), Message: me.Message}
	}
	return err
}
