package elle

import (
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// TestChecks runs the datadriven scripts in testdata/checks: each `check` parses
// the history in its input and prints the checker's verdict, one summary
// line per anomaly ("valid" if none). txn.md X1: a hand-written history for
// every anomaly class the checker names (g0, g1, g2, realtime, list,
// internal) and valid histories that must pass (valid). Arguments: `serializable` leaves out
// real-time edges; `explain` prints the full explanations. Rewrite expected
// output with -rewrite after reviewing a change.
func TestChecks(t *testing.T) {
	datadriven.Walk(t, "testdata/checks", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "check":
				h, err := history.ParseString(d.Input)
				if err != nil {
					return "error: " + err.Error()
				}
				var opts Options
				if d.HasArg("serializable") {
					opts.Model = Serializable
				}
				res, err := Check(h, opts)
				if err != nil {
					return "error: " + err.Error()
				}
				if d.HasArg("explain") {
					return res.Explain() + "\n"
				}
				return res.String() + "\n"
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func mustCheck(t testing.TB, h history.History, opts Options) *Result {
	t.Helper()
	res, err := Check(h, opts)
	require.NoError(t, err)
	return res
}
