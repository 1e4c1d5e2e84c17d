package sqllogictest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseReadsEveryRecordKind(t *testing.T) {
	src := `# a comment
hash-threshold 8

statement ok
CREATE TABLE t1(a INTEGER, b TEXT)

statement error
INSERT INTO nosuch VALUES(1)

skipif mysql
onlyif sqlite
query IT rowsort lbl
SELECT a,
       b FROM t1
----
1
x
2
(empty)

query I nosort
SELECT a FROM t1
----
30 values hashing to 3C59DC048E8850243BE8079A5C74D079

query R
SELECT 1.0
----
1.000

halt
`
	recs, err := Parse(strings.NewReader(src), "x.test")
	require.NoError(t, err)
	require.Len(t, recs, 7)

	require.Equal(t, HashThreshold, recs[0].Kind)
	require.Equal(t, 8, recs[0].Threshold)

	require.Equal(t, Statement, recs[1].Kind)
	require.False(t, recs[1].ExpectError)
	require.Equal(t, "CREATE TABLE t1(a INTEGER, b TEXT)", recs[1].SQL)
	require.Equal(t, 4, recs[1].Line)
	require.True(t, recs[2].ExpectError)

	q := recs[3]
	require.Equal(t, Query, q.Kind)
	require.Equal(t, []Condition{{Only: false, Engine: "mysql"}, {Only: true, Engine: "sqlite"}}, q.Conditions)
	require.Equal(t, "IT", q.Types)
	require.Equal(t, RowSort, q.Sort)
	require.Equal(t, "lbl", q.Label)
	require.Equal(t, "SELECT a,\n       b FROM t1", q.SQL)
	require.Equal(t, []string{"1", "x", "2", "(empty)"}, q.Expected)
	require.False(t, q.IsHash)
	require.False(t, q.Applies("mysql"), "skipif mysql")
	require.False(t, q.Applies("postgresql"), "onlyif sqlite")
	require.True(t, q.Applies("sqlite"))

	h := recs[4]
	require.True(t, h.IsHash)
	require.Equal(t, 30, h.HashCount)
	require.Equal(t, "3c59dc048e8850243be8079a5c74d079", h.Hash, "hashes compare in lower case")
	require.Nil(t, h.Expected)
	require.Equal(t, NoSort, h.Sort)

	require.Equal(t, NoSort, recs[5].Sort, "nosort is the default")
	require.Equal(t, []string{"1.000"}, recs[5].Expected)
	require.Equal(t, Halt, recs[6].Kind)
}

func TestParseHaltAndTrailingRecordWithoutBlankLine(t *testing.T) {
	recs, err := Parse(strings.NewReader("halt\n\nstatement ok\nSELECT 1"), "x.test")
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, Halt, recs[0].Kind)
	require.Equal(t, "SELECT 1", recs[1].SQL)
}

func TestParseRejectsMalformedFiles(t *testing.T) {
	for name, src := range map[string]string{
		"unknown record":        "frobnicate\nSELECT 1\n",
		"statement without ok":  "statement maybe\nSELECT 1\n",
		"unknown type":          "query X\nSELECT 1\n----\n1\n",
		"unknown sort":          "query I shuffled\nSELECT 1\n----\n1\n",
		"no SQL":                "statement ok\n\n",
		"dangling condition":    "skipif mysql\n",
		"condition then blank":  "onlyif mysql\n\nstatement ok\nSELECT 1\n",
		"bad hash count":        "query I\nSELECT 1\n----\nmany values hashing to 3c59dc048e8850243be8079a5c74d079\n",
		"bad hash":              "query I\nSELECT 1\n----\n3 values hashing to 3c59\n",
		"threshold not a count": "hash-threshold eight\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(src), "bad.test")
			require.Error(t, err)
			require.Contains(t, err.Error(), "bad.test:")
		})
	}
}

func TestParseReadsTheCorpus(t *testing.T) {
	// The shipped files parse, and their record counts are those of the
	// corpus (statements + queries, as counted by grep).
	want := map[string]int{"select1.test": 1031, "select2.test": 1031, "select3.test": 3351, "select4.test": 3857, "select5.test": 1436}
	for name, n := range want {
		recs := mustParseFile(t, "testdata/"+name)
		counted := 0
		for _, r := range recs {
			if r.Counted() {
				counted++
			}
		}
		require.Equal(t, n, counted, name)
	}
}
