package gateway

import (
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/stretchr/testify/require"
)

// The column metadata MySQL clients read, where GMS's own is wrong
// (gms-notes §9): FLOAT/DOUBLE without a scale have MySQL's 31 "not fixed"
// decimals and widths 12 and 22; YEAR is UNSIGNED ZEROFILL.
func TestColumnMetadataAsMySQLSendsIt(t *testing.T) {
	ctx := sql.NewEmptyContext()
	fields := schemaToFields(ctx, sql.Schema{
		{Name: "f", Type: types.Float32, Nullable: true},
		{Name: "d", Type: types.Float64, Nullable: false},
		{Name: "y", Type: types.Year, Nullable: true},
		{Name: "n", Type: types.MustCreateDecimalType(10, 2), Nullable: true},
		{Name: "id", Type: types.Uint64, PrimaryKey: true, AutoIncrement: true},
	})
	require.EqualValues(t, 31, fields[0].Decimals)
	require.EqualValues(t, 12, fields[0].ColumnLength)
	require.EqualValues(t, 31, fields[1].Decimals)
	require.EqualValues(t, 22, fields[1].ColumnLength)
	require.NotZero(t, fields[1].Flags&uint32(querypb.MySqlFlag_NOT_NULL_FLAG))
	require.NotZero(t, fields[2].Flags&uint32(querypb.MySqlFlag_UNSIGNED_FLAG))
	require.NotZero(t, fields[2].Flags&uint32(querypb.MySqlFlag_ZEROFILL_FLAG))
	require.EqualValues(t, 2, fields[3].Decimals)
	for _, f := range []querypb.MySqlFlag{querypb.MySqlFlag_PRI_KEY_FLAG, querypb.MySqlFlag_AUTO_INCREMENT_FLAG, querypb.MySqlFlag_UNSIGNED_FLAG, querypb.MySqlFlag_NOT_NULL_FLAG} {
		require.NotZero(t, fields[4].Flags&uint32(f), f.String())
	}
}

func TestDoBecomesASelectOfItsExpressions(t *testing.T) {
	for in, want := range map[string]string{
		"DO 1":                       "SELECT 1",
		"  do sleep(0), 'x';  ":      "SELECT sleep(0), 'x'",
		"/* ping */ DO 1+1":          "SELECT 1+1",
		"/* a */ /* b */\nDo\n@x:=1": "SELECT @x:=1",
	} {
		got, ok := doStatement(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"SELECT 1", "DOUBLE", "do", "UPDATE t SET do = 1", "DROP TABLE t"} {
		_, ok := doStatement(in)
		require.False(t, ok, in)
	}
}

func TestPlaceholdersAreCountedOutsideStringsAndComments(t *testing.T) {
	require.Equal(t, 0, countPlaceholders("SELECT 1"))
	require.Equal(t, 2, countPlaceholders("SELECT ?, '?' FROM t WHERE a = ? /* ? */"))
}

func TestTrailingCommentsAreNoStatement(t *testing.T) {
	for _, rest := range []string{"", "  ", " -- c", " /* c */ ", ";;", " # c\n"} {
		require.Equal(t, "", statementsIn(rest), "%q", rest)
	}
	require.Equal(t, "SELECT 2", statementsIn(" SELECT 2"))
	require.Equal(t, "/* c */ SELECT 2", statementsIn(" /* c */ SELECT 2"))
}
