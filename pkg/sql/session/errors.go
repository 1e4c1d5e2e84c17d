package session

import (
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
)

// MySQL error numbers this package returns that vitess has no name for.
const (
	erReadOnlyTransaction = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	erTransCacheFull      = 1197 // ER_TRANS_CACHE_FULL
	erTooBigRowsize       = 1118 // ER_TOO_BIG_ROWSIZE
)

// Serialization returns MySQL's ER_LOCK_DEADLOCK (1213, SQLSTATE 40001):
// the transaction was rolled back because it could not be serialized — a
// conflict with a concurrent transaction that outlived the client
// library's retries, or a guard that found a value read has changed. The
// client restarts the transaction.
func Serialization(why string) *mysql.SQLError {
	return mysql.NewSQLError(mysql.ERLockDeadlock, mysql.SSLockDeadlock,
		"Deadlock found when trying to get lock; try restarting transaction (%s)", why)
}

// DupEntry returns MySQL's ER_DUP_ENTRY (1062, SQLSTATE 23000).
func DupEntry(entry, key string) *mysql.SQLError {
	return mysql.NewSQLError(mysql.ERDupEntry, mysql.SSDupKey, "Duplicate entry '%s' for key '%s'", entry, key)
}

// ReadOnly returns MySQL's error for a write in a READ ONLY transaction.
func ReadOnly() *mysql.SQLError {
	return mysql.NewSQLError(erReadOnlyTransaction, "25006", "Cannot execute statement in a READ ONLY transaction.")
}

// TooLarge returns the error for a transaction beyond the groups' limits
// (txn.Limits): what it needs, the limit, and what to change.
func TooLarge(what string, need, limit int, fix string) *mysql.SQLError {
	return mysql.NewSQLError(erTransCacheFull, mysql.SSUnknownSQLState,
		"Transaction too large: %s %d, the cluster's limit is %d; %s", what, need, limit, fix)
}

// RowTooLarge returns the error for a row or key beyond the limits.
func RowTooLarge(what string, need, limit int) *mysql.SQLError {
	return mysql.NewSQLError(erTooBigRowsize, "42000",
		"Row size too large: %s of %d bytes, the cluster's limit is %d bytes; store less in one row (or raise the cluster's transaction limits)", what, need, limit)
}

// NoAdminKey returns the error for DDL on a front-end without an admin key.
func NoAdminKey() *mysql.SQLError {
	return mysql.NewSQLError(mysql.ERSpecifiedAccessDenied, "42000",
		"Access denied; schema changes are metadata transactions signed by an admin key (txn.md M5), and this front-end has none: configure one of the cluster's admin keys to run DDL")
}

// ErrSchemaChanged is wrapped by the error of a statement whose transaction
// found the metadata version moved past the catalog it was planned with
// (M2): another front-end changed the schema. The statement runner reloads
// the catalog and runs an autocommit statement again; in an explicit
// transaction the client gets 1213 and restarts it.
var ErrSchemaChanged = errors.New("session: schema changed")

// schemaChanged is the MySQL face of ErrSchemaChanged: 1213, so clients
// restart, unwrapping to ErrSchemaChanged for the runner.
type schemaChanged struct {
	*mysql.SQLError
}

func (e schemaChanged) Unwrap() []error { return []error{e.SQLError, ErrSchemaChanged} }

func newSchemaChanged() error {
	return schemaChanged{Serialization("the schema changed since the statement was planned")}
}

// IsRetryable reports whether an autocommit statement that failed with err
// may run again: a serialization failure (1213) or a schema change.
func IsRetryable(err error) bool {
	if errors.Is(err, ErrSchemaChanged) {
		return true
	}
	se := AsSQLError(err)
	return se != nil && se.Num == mysql.ERLockDeadlock
}

// AsSQLError finds the *mysql.SQLError in err, looking through GMS's
// wrappers (which do not implement Unwrap).
func AsSQLError(err error) *mysql.SQLError {
	for err != nil {
		var se *mysql.SQLError
		if errors.As(err, &se) {
			return se
		}
		var sc schemaChanged
		if errors.As(err, &sc) {
			return sc.SQLError
		}
		switch w := err.(type) {
		case sql.WrappedInsertError:
			err = w.Cause
		case sql.WrappedTypeConversionError:
			err = w.Err
		default:
			return nil
		}
	}
	return nil
}

// internal wraps an unexpected error.
func internal(format string, args ...any) error {
	return fmt.Errorf("session: "+format, args...)
}

// SchemaChangedError returns the error of a statement planned against a
// catalog the metadata has moved past (for short transactions the backend
// sends outside the SQL transaction: AUTO_INCREMENT blocks, schema changes).
func SchemaChangedError() error { return newSchemaChanged() }
