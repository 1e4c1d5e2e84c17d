package sqllogictest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// fake is an Engine whose answers are scripted: a statement succeeds unless
// it is in fails; a query returns rows[sql] (and fails if absent).
type fake struct {
	fails map[string]bool
	rows  map[string]*logictest.Rows
	slow  map[string]bool
	log   []string
}

func (f *fake) Connect(context.Context) (logictest.Session, error) { return f, nil }
func (f *fake) Close() error                                       { return nil }

func (f *fake) Exec(ctx context.Context, stmt string) (logictest.ExecResult, error) {
	f.log = append(f.log, stmt)
	if f.slow[stmt] {
		<-ctx.Done()
		return logictest.ExecResult{}, ctx.Err()
	}
	if f.fails[stmt] {
		return logictest.ExecResult{}, &logictest.Error{Code: 1064, State: "42000", Message: "no"}
	}
	return logictest.ExecResult{}, nil
}

func (f *fake) Query(ctx context.Context, q string) (*logictest.Rows, error) {
	f.log = append(f.log, q)
	if f.slow[q] {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r, ok := f.rows[q]; ok {
		return r, nil
	}
	return nil, errors.New("no such query")
}

func rows(cols int, vals ...string) *logictest.Rows {
	r := &logictest.Rows{Columns: make([]string, cols)}
	for i := 0; i < len(vals); i += cols {
		var row []logictest.Value
		for _, v := range vals[i : i+cols] {
			if v == "NULL" {
				row = append(row, logictest.NullValue)
			} else {
				row = append(row, logictest.Text(v))
			}
		}
		r.Values = append(r.Values, row)
	}
	return r
}

func run(t *testing.T, f *fake, src string, opts Options) *Result {
	t.Helper()
	recs, err := Parse(strings.NewReader(src), "f.test")
	require.NoError(t, err)
	res, err := Run(context.Background(), f, "f.test", recs, opts)
	require.NoError(t, err)
	return res
}

// reasons returns the failures' reasons by line.
func reasons(res *Result) map[int]string {
	out := map[int]string{}
	for _, f := range res.Failures {
		out[f.Line] = f.Reason
	}
	return out
}

func TestRunPassesMatchingResults(t *testing.T) {
	f := &fake{rows: map[string]*logictest.Rows{
		"SELECT a, b FROM t": rows(2, "2", "y", "1", "NULL"),
		"SELECT a FROM t":    rows(1, "2", "1"),
	}, fails: map[string]bool{"BAD": true}}
	res := run(t, f, `statement ok
CREATE TABLE t(a INT, b TEXT)

statement error
BAD

query IT rowsort
SELECT a, b FROM t
----
1
NULL
2
y

query I valuesort
SELECT a FROM t
----
2 values hashing to 6ddb4095eb719e2a9f0a3f95677d24e0
`, Options{})
	require.Empty(t, res.Failures)
	require.Equal(t, 4, res.Records)
	require.Equal(t, 4, res.Passed)
	// The file runs in a database of its own, made afresh and dropped.
	require.Equal(t, []string{"DROP DATABASE IF EXISTS slt", "CREATE DATABASE slt", "USE slt"}, f.log[:3])
	require.Equal(t, "DROP DATABASE IF EXISTS slt", f.log[len(f.log)-1])
}

// Each check the runner makes fails a record that breaks it: a wrong value,
// a wrong count, a wrong hash, a label whose results differ, an unexpected
// error or success, a wrong number of columns, an unsorted nosort result.
func TestRunFailsEveryKindOfMismatch(t *testing.T) {
	f := &fake{rows: map[string]*logictest.Rows{
		"SELECT 1":    rows(1, "1"),
		"SELECT 2":    rows(1, "2"),
		"SELECT 1, 2": rows(2, "1", "2"),
		"UNSORTED":    rows(1, "2", "1"),
	}, fails: map[string]bool{"BAD": true}}
	res := run(t, f, `query I
SELECT 2
----
1

query I
SELECT 1
----
1
1

query I
SELECT 1
----
1 values hashing to 6ddb4095eb719e2a9f0a3f95677d24e0

query I nosort lbl
SELECT 1
----
1

query I nosort lbl
SELECT 2
----
2

statement ok
BAD

statement error
GOOD

query I
NOSUCH
----

query I
SELECT 1, 2
----
1
2

query I nosort
UNSORTED
----
1
2
`, Options{})
	require.Equal(t, 10, res.Records)
	require.Equal(t, 1, res.Passed, "only the first labelled query is right")
	why := reasons(res)
	require.Contains(t, why[1], `value 1 is "2", expected "1"`)
	require.Contains(t, why[6], "got 1 values, expected 2")
	require.Contains(t, why[12], "got 1 values hashing to b026324c6904b2a9cb4b88d6d61c81d1")
	require.Contains(t, why[22], "label lbl")
	require.Contains(t, why[27], "statement failed: ERROR 1064 (42000): no")
	require.Contains(t, why[30], "an error was expected")
	require.Contains(t, why[33], "query failed: no such query")
	require.Contains(t, why[37], "2 columns, the record declares 1")
	require.Contains(t, why[43], `value 1 is "2", expected "1"`)
}

func TestRunCountsConditionsHaltExclusionsAndTimeouts(t *testing.T) {
	f := &fake{rows: map[string]*logictest.Rows{"SELECT 1": rows(1, "1")},
		slow: map[string]bool{"SLOW": true}}
	res := run(t, f, `skipif mysql
statement ok
NOT FOR MYSQL

onlyif sqlite
statement ok
ONLY SQLITE

onlyif mysql
query I
SELECT 1
----
1

statement ok
EXCLUDED

statement ok
SLOW

skipif sqlite
halt

statement ok
AFTER HALT

query I
SELECT 1
----
1
`, Options{Exclude: map[string]string{"f.test:15": "hangs"}, Timeout: 50 * time.Millisecond})
	// Not counted: the two records for other engines and the two after halt.
	require.Equal(t, 4, res.NotApplicable)
	// Counted: the mysql query (passes), the excluded statement and the
	// slow one (both fail).
	require.Equal(t, 3, res.Records)
	require.Equal(t, 1, res.Passed)
	require.Equal(t, 1, res.Excluded)
	why := reasons(res)
	require.Equal(t, "excluded: hangs", why[15])
	require.Contains(t, why[18], "timed out")
	require.NotContains(t, f.log, "NOT FOR MYSQL")
	require.NotContains(t, f.log, "EXCLUDED")
	require.NotContains(t, f.log, "AFTER HALT")
}

func TestRunStopsAtMaxRecords(t *testing.T) {
	f := &fake{}
	res := run(t, f, "statement ok\nA\n\nstatement ok\nB\n\nstatement ok\nC\n", Options{MaxRecords: 2})
	require.Equal(t, 2, res.Records)
	require.NotContains(t, f.log, "C")
}

func mustParseFile(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := Parse(f, path)
	require.NoError(t, err)
	return recs
}
