package engine

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	gmserrors "gopkg.in/src-d/go-errors.v1"

	"github.com/augustus-db/augustus/pkg/sql/session"
)

// errCodes gives GMS errors that its own CastSQLError reports as 1105
// (unknown error) or without their SQLSTATE the code and state MySQL uses,
// so clients and ORMs can tell them apart.
var errCodes = []struct {
	kind  *gmserrors.Kind
	code  int
	state string
}{
	{sql.ErrColumnNotFound, mysql.ERBadFieldError, "42S22"},
	{sql.ErrTableColumnNotFound, mysql.ERBadFieldError, "42S22"},
	{sql.ErrUnknownColumn, mysql.ERBadFieldError, "42S22"},
	{sql.ErrTableNotFound, mysql.ERNoSuchTable, "42S02"},
	{sql.ErrTableAlreadyExists, mysql.ERTableExists, "42S01"},
	{sql.ErrDatabaseNotFound, mysql.ERBadDb, "42000"},
	{sql.ErrDatabaseExists, mysql.ERDbCreateExists, "HY000"},
	{sql.ErrInsertIntoNonNullableProvidedNull, mysql.ERBadNullError, "23000"},
	{sql.ErrInsertIntoNonNullableDefaultNullColumn, 1364, "HY000"}, // ER_NO_DEFAULT_FOR_FIELD
	{types.ErrLengthBeyondLimit, mysql.ERDataTooLong, "22001"},
	{sql.ErrUnsupportedFeature, mysql.ERNotSupportedYet, "42000"},
	{sql.ErrSyntaxError, mysql.ERParseError, "42000"},
	{sql.ErrReadOnlyTransaction, 1792, "25006"},
	{sql.ErrCheckConstraintViolated, 3819, "HY000"}, // ER_CHECK_CONSTRAINT_VIOLATED
}

// mysqlErr returns err as the MySQL error a client should see: ours
// (*mysql.SQLError, found through GMS's wrappers, which do not implement
// Unwrap), or GMS's with the code MySQL uses. GMS's server reports a
// *mysql.SQLError as it is.
func mysqlErr(err error) error {
	if err == nil {
		return nil
	}
	if se := session.AsSQLError(err); se != nil {
		return se
	}
	cause := err
	switch w := err.(type) {
	case sql.WrappedInsertError:
		cause = w.Cause
	case sql.WrappedTypeConversionError:
		cause = w.Err
	}
	for _, c := range errCodes {
		if c.kind.Is(cause) {
			return mysql.NewSQLError(c.code, c.state, "%s", cause.Error())
		}
	}
	return err
}

// parseError is MySQL's ER_PARSE_ERROR for a statement that does not parse.
func parseError(err error) error {
	return mysql.NewSQLError(mysql.ERParseError, "42000", "You have an error in your SQL syntax: %s", err.Error())
}
