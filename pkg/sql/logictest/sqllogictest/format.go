package sqllogictest

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// formatValue renders v as the column type letter typ asks, the way the
// reference runner (sqllogictest.c over SQLite) does: the declared type, not
// the engine's, decides the form, so "query I" of a DECIMAL 2.5 reads 2 and
// "query R" of an integer 7 reads 7.000.
//   - NULL is "NULL" whatever the type;
//   - T: the text, "(empty)" for the empty string, every byte outside
//     printable ASCII replaced by '@';
//   - I: the value converted to a 64-bit integer (a number's leading numeric
//     prefix, truncated toward zero; 0 for text that is not a number), "%d";
//   - R: the value converted to a double, "%.3f".
func formatValue(v logictest.Value, typ byte) string {
	if v.Null {
		return "NULL"
	}
	switch typ {
	case 'T':
		if v.Text == "" {
			return "(empty)"
		}
		b := []byte(v.Text)
		for i, c := range b {
			if c < ' ' || c > '~' {
				b[i] = '@'
			}
		}
		return string(b)
	case 'I':
		return strconv.FormatInt(textToInt(v.Text), 10)
	case 'R':
		return fmt.Sprintf("%.3f", textToFloat(v.Text))
	default:
		panic(fmt.Sprintf("sqllogictest: unknown type %q", typ)) // Parse rejects it
	}
}

// numericPrefix returns the longest prefix of s (after leading spaces) that
// reads as a decimal number, as SQLite's text-to-number conversion takes it.
func numericPrefix(s string) string {
	s = strings.TrimLeft(s, " \t\n\r")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		frac := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
			frac++
		}
		if digits+frac > 0 {
			i = j
			digits += frac
		}
	}
	if digits == 0 {
		return ""
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			i = k
		}
	}
	return s[:i]
}

func textToFloat(s string) float64 {
	p := numericPrefix(s)
	if p == "" {
		return 0
	}
	f, err := strconv.ParseFloat(p, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0
	}
	return f
}

func textToInt(s string) int64 {
	p := numericPrefix(s)
	if p == "" {
		return 0
	}
	if n, err := strconv.ParseInt(p, 10, 64); err == nil {
		return n
	}
	f := textToFloat(p)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f) // truncation toward zero, as a C cast
}

// formatRows turns rows into the record's list of values, sorted by its
// sort mode.
func formatRows(rows [][]logictest.Value, types string, mode SortMode) []string {
	formatted := make([][]string, len(rows))
	for i, row := range rows {
		formatted[i] = make([]string, len(types))
		for j := range types {
			formatted[i][j] = formatValue(row[j], types[j])
		}
	}
	if mode == RowSort {
		slices.SortStableFunc(formatted, func(a, b []string) int { return slices.Compare(a, b) })
	}
	var vals []string
	for _, row := range formatted {
		vals = append(vals, row...)
	}
	if mode == ValueSort {
		slices.Sort(vals)
	}
	return vals
}

// hashValues is the reference runner's result hash: MD5 over every value
// followed by a newline, in order, in lower-case hex.
func hashValues(vals []string) string {
	h := md5.New()
	for _, v := range vals {
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
