package gateway

// Conversions between GMS's results and vitess's wire structures. GMS keeps
// these in its server package, unexported; they are adapted here from
// go-mysql-server v0.20.0 server/handler.go (Apache License 2.0, Copyright
// Dolthub, Inc.), with the column metadata MySQL clients rely on that GMS
// gets wrong (gms-notes §9): FLOAT/DOUBLE without a declared scale report
// MySQL's "not fixed" 31 decimals and their display widths, YEAR is
// UNSIGNED ZEROFILL.

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// notFixedDec is MySQL's NOT_FIXED_DEC: the decimals of a FLOAT or DOUBLE
// column without a declared scale.
const notFixedDec = 31

// schemaToFields describes a result's columns for the client.
func schemaToFields(ctx *sql.Context, s sql.Schema) []*querypb.Field {
	charSetResults := ctx.GetCharacterSetResults()
	fields := make([]*querypb.Field, len(s))
	for i, c := range s {
		charset := uint32(sql.Collation_Default.CharacterSet())
		if collatedType, ok := c.Type.(sql.TypeWithCollation); ok {
			charset = uint32(collatedType.Collation().CharacterSet())
		}
		// Binary types always use the binary collation; others follow
		// character_set_results when it is set.
		if types.IsBinaryType(c.Type) {
			charset = uint32(sql.Collation_binary)
		} else if charSetResults != sql.CharacterSet_Unspecified {
			charset = uint32(charSetResults)
		}
		var flags querypb.MySqlFlag
		if !c.Nullable {
			flags |= querypb.MySqlFlag_NOT_NULL_FLAG
		}
		if c.AutoIncrement {
			flags |= querypb.MySqlFlag_AUTO_INCREMENT_FLAG
		}
		if c.PrimaryKey {
			flags |= querypb.MySqlFlag_PRI_KEY_FLAG
		}
		if types.IsUnsigned(c.Type) {
			flags |= querypb.MySqlFlag_UNSIGNED_FLAG
		}
		typ := c.Type.Type()
		f := &querypb.Field{
			Name:         c.Name,
			OrgName:      c.Name,
			Table:        c.Source,
			OrgTable:     c.Source,
			Database:     c.DatabaseSource,
			Type:         typ,
			Charset:      charset,
			ColumnLength: c.Type.MaxTextResponseByteLength(ctx),
		}
		switch {
		case types.IsDecimal(c.Type):
			f.Decimals = uint32(c.Type.(sql.DecimalType).Scale())
		case types.IsDatetimeType(c.Type):
			f.Decimals = uint32(c.Type.(sql.DatetimeType).Precision())
		case typ == sqltypes.Float32:
			f.Decimals, f.ColumnLength = notFixedDec, 12
		case typ == sqltypes.Float64:
			f.Decimals, f.ColumnLength = notFixedDec, 22
		case typ == sqltypes.Year:
			flags |= querypb.MySqlFlag_UNSIGNED_FLAG | querypb.MySqlFlag_ZEROFILL_FLAG
		}
		f.Flags = uint32(flags)
		fields[i] = f
	}
	return fields
}

// resultFromOk is the wire result of an OK row (INSERT, UPDATE, DDL, ...).
func resultFromOk(r types.OkResult) *sqltypes.Result {
	info := ""
	if r.Info != nil {
		info = r.Info.String()
	}
	return &sqltypes.Result{RowsAffected: r.RowsAffected, InsertID: r.InsertID, Info: info}
}

// bindingsToExprs turns a prepared statement's bind variables into the
// expressions engine.Run takes.
func bindingsToExprs(bindings map[string]*querypb.BindVariable) (map[string]sqlparser.Expr, error) {
	if len(bindings) == 0 {
		return nil, nil
	}
	res := make(map[string]sqlparser.Expr, len(bindings))
	for name, bv := range bindings {
		val, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return nil, err
		}
		expr, err := sqlparser.ExprFromValue(val)
		if err != nil {
			return nil, err
		}
		res[name] = expr
	}
	return res, nil
}

// setStatusFlags tells the client whether the session is in autocommit
// mode and inside a transaction (the status flags of every OK and EOF
// packet).
func setStatusFlags(ctx *sql.Context, c *mysql.Conn) {
	auto := false
	if v, err := ctx.GetSessionVariable(ctx, sql.AutoCommitSessionVar); err == nil {
		auto, _ = sql.ConvertToBool(ctx, v)
	}
	if auto {
		c.StatusFlags |= uint16(mysql.ServerStatusAutocommit)
	} else {
		c.StatusFlags &^= uint16(mysql.ServerStatusAutocommit)
	}
	// GMS keeps an implicit transaction on the context between statements
	// of an explicit one only; in autocommit mode a transaction left there
	// is forgotten before the next statement (engine.Run).
	if ctx.GetTransaction() != nil && (!auto || ctx.GetIgnoreAutoCommit()) {
		c.StatusFlags |= uint16(mysql.ServerInTransaction)
	} else {
		c.StatusFlags &^= uint16(mysql.ServerInTransaction)
	}
}
