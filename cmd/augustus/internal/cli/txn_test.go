package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord/coordtest"
)

func TestTxnParsesTheLanguage(t *testing.T) {
	stmts, err := parseTxn(`read k1; cmp k2 v; write k2 v2
insert "a b;c" 0x90ff ; delete 0x00
cmp k absent; cmp k "absent"; meta read "\x00version"
read-range a; read-range "" z limit 3; read-range a limit 7`)
	require.NoError(t, err)
	var ops []txn.Op
	for _, s := range stmts {
		ops = append(ops, s.op)
	}
	require.Equal(t, []txn.Op{
		{Kind: txn.OpRead, Key: []byte("k1")},
		{Kind: txn.OpCmp, Key: []byte("k2"), Value: []byte("v")},
		{Kind: txn.OpWrite, Key: []byte("k2"), Value: []byte("v2")},
		{Kind: txn.OpInsert, Key: []byte("a b;c"), Value: []byte{0x90, 0xff}},
		{Kind: txn.OpDelete, Key: []byte{0}},
		{Kind: txn.OpCmp, Key: []byte("k"), Absent: true},
		{Kind: txn.OpCmp, Key: []byte("k"), Value: []byte("absent")},
		{Kind: txn.OpRead, Meta: true, Key: txn.MetaVersionKey},
		{Kind: txn.OpReadRange, Key: []byte("a"), Limit: 100},
		{Kind: txn.OpReadRange, Key: []byte{}, End: []byte("z"), Limit: 3},
		{Kind: txn.OpReadRange, Key: []byte("a"), Limit: 7},
	}, ops)
	require.Equal(t, `insert "a b;c" 0x90ff`, stmts[3].text)
}

func TestTxnSyntaxErrorsAreOneClearLine(t *testing.T) {
	for src, want := range map[string]string{
		"":                      "no operations",
		"reed k":                `operation 1 (reed k): unknown operation "reed"`,
		"read k; write k":       "operation 2 (write k): want write KEY VALUE",
		`read "k`:               "unterminated quote",
		"read 0xzz":             "bad hex 0xzz",
		"cmp k":                 "want cmp KEY VALUE, or cmp KEY absent",
		"read-range a limit 0":  `limit "0": want a positive number`,
		"read-range a b c":      "want read-range START [END] [limit N]",
		"read \"\"":             "empty key",
		"cmp-range a b":         "cmp-range carries per-group digests",
		"meta":                  "want an operation",
		`"read" k`:              "want an operation",
		`insert k "bad\q"`:      "bad quoted string",
		"read k1; meta cmp k 1": "",
	} {
		_, err := parseTxn(src)
		if want == "" {
			require.NoError(t, err, src)
			continue
		}
		require.ErrorContains(t, err, want, src)
		require.NotContains(t, err.Error(), "\n", src)
	}
}

func TestTxnHelpShowsExamples(t *testing.T) {
	code, out, _ := runMain(t, "txn", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, `augustus txn --dir ./cluster 'insert k1 v1; insert "\x90k2" v2'`)
	require.Contains(t, out, "read-range START [END] [limit N]")
	code, out, _ = runMain(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "txn ")
}

func TestTxnBadSyntaxExitsWithOneLine(t *testing.T) {
	code, _, errOut := runMain(t, "txn", "--dir", t.TempDir(), "read k; frobnicate k")
	require.Equal(t, 1, code)
	require.Equal(t, "augustus: txn: operation 2 (frobnicate k): unknown operation \"frobnicate\": want read, read-range, cmp, insert, write, delete, or meta followed by one of them\n", errOut)
	code, _, errOut = runMain(t, "txn", "--dir", t.TempDir(), "read k")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no cluster.json")
}

// augustus txn against an in-process cluster of 2 groups of 4 replicas.
func TestTxnAgainstACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 replicas")
	}
	cl := coordtest.Start(t, coordtest.Options{})
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runMain(t, append([]string{"txn", "--dir", cl.Dir}, args...)...)
	}
	code, out, errOut := run(`insert k1 v1; insert "\x90k2" v2`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "committed (multi-group update, groups 0, 1, nonce 0, 1 attempt")
	require.Regexp(t, `0\s+insert k1 v1\s+0\s+ok`, out)
	require.Regexp(t, `1\s+insert "\\x90k2" v2\s+1\s+ok`, out)

	code, out, errOut = run(`read k1; cmp "\x90k2" v2; write "\x90k2" v3; read nope`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nonce 1", "a new process learns its next nonce (W3)")
	require.Regexp(t, `0\s+read k1\s+0\s+"v1"`, out)
	require.Regexp(t, `3\s+read nope\s+0\s+absent`, out)

	code, out, _ = run(`cmp k1 wrong; write k1 x`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "aborted: comparison failed at operation 0 (cmp k1 wrong), at group 0")

	code, out, _ = run(`insert k1 again`)
	require.Equal(t, 1, code)
	require.Contains(t, out, "aborted: key exists at operation 0 (insert k1 again), at group 0")

	code, out, errOut = run("read-range \"\" limit 1; read-range \"\"")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `1 entry, more from "k1\x00"`)
	require.Contains(t, out, `"\x90k2" = "v3"`)

	code, out, errOut = run("--json", `read k1; read-range "" limit 1`)
	require.Equal(t, 0, code, errOut)
	var j txnJSON
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, "committed", j.Outcome)
	require.Equal(t, "v1", *j.Ops[0].Value)
	require.True(t, j.Ops[1].More)
	require.Equal(t, "k1", j.Ops[1].Entries[0].Key)

	code, out, _ = run("--json", `delete nope`)
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Equal(t, "aborted", j.Outcome)
	require.Equal(t, "not_found", j.Abort.Reason)

	code, _, errOut = run(`meta insert schema/t def`)
	require.Equal(t, 1, code)
	require.Equal(t, "augustus: txn: metadata writes need an admin key: pass --admin NAME (an admin of cluster.json, e.g. admin0)\n", errOut)
	code, out, errOut = run("--admin", "admin0", `meta insert schema/t def`)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "committed (metadata, groups 0, 1")
	code, out, errOut = run(`meta read schema/t; read k1`)
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.Contains(out, `"def"`), out)
	require.Contains(t, out, "2 attempts", "a new process starts from cluster.json's map: stale, refreshed, retried (K1)")
	require.Regexp(t, `0\s+meta read schema/t\s+0\s+"def"`, out, "a metadata read runs at the declared groups")

	code, _, errOut = run("--client", "nobody", "read k1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--client "nobody": not a client of cluster.json`)
}

// A new user ran `augustus txn` and the transaction workloads of bench
// against a cluster started with --app noop, and read "txn: malformed:
// result kind: unexpected end at byte 0". Both now say what is wrong and
// which --app the cluster needs, as the noop bench does for its own case.
func TestTxnAndTxnBenchAgainstTheNoopApplicationSayWhichAppToStart(t *testing.T) {
	dir, _ := newTestCluster(t)
	startCluster(t, dir, appNoop)
	const want = "the replicas do not run the transaction engine: they answered the start-up query with something that is not a transaction result"
	hint := "start them with --app txn"
	cmd := "(augustus start --dir " + dir + " --app txn)"

	code, _, stderr := runMain(t, "txn", "--dir", dir, "read a")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, want)
	require.Contains(t, stderr, hint)
	require.Contains(t, stderr, cmd)

	code, _, stderr = runMain(t, "bench", "--workload", "A", "--dir", dir, "--duration", "2s", "--progress", "off", "--items", "10")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, want)
	require.Contains(t, stderr, cmd)
}
