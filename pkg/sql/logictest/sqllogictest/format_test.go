package sqllogictest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

func TestFormatValueFollowsTheDeclaredType(t *testing.T) {
	for _, c := range []struct {
		v    logictest.Value
		typ  byte
		want string
	}{
		{logictest.NullValue, 'I', "NULL"},
		{logictest.NullValue, 'R', "NULL"},
		{logictest.NullValue, 'T', "NULL"},
		{logictest.Text(""), 'T', "(empty)"},
		{logictest.Text("a b"), 'T', "a b"},
		{logictest.Text("tab\there\x7f"), 'T', "tab@here@"},
		{logictest.Text("é"), 'T', "@@"}, // two UTF-8 bytes
		{logictest.Text("42"), 'I', "42"},
		{logictest.Text("-7"), 'I', "-7"},
		{logictest.Text("2.5000"), 'I', "2"}, // a DECIMAL truncates toward zero
		{logictest.Text("-2.9"), 'I', "-2"},
		{logictest.Text("1e3"), 'I', "1000"},
		{logictest.Text("12abc"), 'I', "12"}, // leading numeric prefix
		{logictest.Text("abc"), 'I', "0"},
		{logictest.Text("99999999999999999999"), 'I', "9223372036854775807"},
		{logictest.Text("7"), 'R', "7.000"},
		{logictest.Text("2.5"), 'R', "2.500"},
		{logictest.Text("-0.0004"), 'R', "-0.000"},
		{logictest.Text("1.0005"), 'R', "1.000"}, // %.3f of the double 1.000499…
		{logictest.Text("x"), 'R', "0.000"},
		{logictest.Text("  3.25e1"), 'R', "32.500"},
	} {
		require.Equal(t, c.want, formatValue(c.v, c.typ), "%q as %c", c.v.Text, c.typ)
	}
}

func TestFormatRowsSortModes(t *testing.T) {
	rows := [][]logictest.Value{
		{logictest.Text("2"), logictest.Text("b")},
		{logictest.Text("10"), logictest.Text("a")},
		{logictest.Text("2"), logictest.Text("a")},
	}
	require.Equal(t, []string{"2", "b", "10", "a", "2", "a"}, formatRows(rows, "IT", NoSort))
	// Rows sort by their formatted values as strings, column by column:
	// "10" < "2".
	require.Equal(t, []string{"10", "a", "2", "a", "2", "b"}, formatRows(rows, "IT", RowSort))
	require.Equal(t, []string{"10", "2", "2", "a", "a", "b"}, formatRows(rows, "IT", ValueSort))
}

func TestHashValuesIsMD5OfNewlineTerminatedValues(t *testing.T) {
	// md5("1\n2\n") computed independently (printf '1\n2\n' | md5sum).
	require.Equal(t, "6ddb4095eb719e2a9f0a3f95677d24e0", hashValues([]string{"1", "2"}))
	require.Equal(t, "d41d8cd98f00b204e9800998ecf8427e", hashValues(nil))
}
