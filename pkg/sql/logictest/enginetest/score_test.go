package enginetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stream renders test2json events, one per "action test [output]" line.
func stream(t *testing.T, lines ...string) string {
	var b strings.Builder
	b.WriteString("go: downloading something\n") // non-JSON lines are ignored
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		ev := event{Action: f[0], Test: f[1]}
		if len(f) == 3 {
			ev.Output = f[2] + "\n"
		}
		data, err := json.Marshal(ev)
		require.NoError(t, err)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestScoreCountsLeavesSkipsExclusionsAndCrashes(t *testing.T) {
	in := stream(t,
		"run Top",
		"run Top/A",
		"run Top/A/q1", "pass Top/A/q1",
		"run Top/A/q2", "fail Top/A/q2",
		"run Top/A/q3", "skip Top/A/q3",
		"fail Top/A",
		"run Top/B", "output Top/B     harness.go:1: "+ExcludedPrefix+"no AS OF", "skip Top/B",
		"run Top/C", "fail Top/C", // failed before any subtest: itself a leaf
		"run Top/D",
		"run Top/D/s", "run Top/D/s/x", "pass Top/D/s/x",
		"run Top/D/s/y", // never ends: the binary died
	)
	s, err := ScoreRun(strings.NewReader(in), "Top", map[string]int{"B": 40})
	require.NoError(t, err)
	require.False(t, s.Finished, "Top never ended")
	require.Equal(t, []SuiteScore{
		{Name: "A", Leaves: 3, Passed: 1, Skipped: 1},
		{Name: "B", Leaves: 40, Excluded: "no AS OF"},
		{Name: "C", Leaves: 1},
		{Name: "D", Leaves: 2, Passed: 1, Unfinished: 1, Crashed: true},
	}, s.Suites)
	leaves, passed := s.Totals()
	require.Equal(t, 46, leaves)
	require.Equal(t, 2, passed)
	require.Equal(t, 0, s.SuitesPassed())

	var out strings.Builder
	s.Write(&out, "fake")
	require.Contains(t, out.String(), "enginetest on fake: 2 of 46 tests passed (4.3%); 0 of 4 suites passed every test; 1 suites excluded, 1 crashed")
	require.Contains(t, out.String(), "EXCLUDED: no AS OF")
	require.Contains(t, out.String(), "the score is incomplete")
}

func TestScoreOfACleanRunAndItsReference(t *testing.T) {
	in := stream(t,
		"run Top", "run Top/A", "run Top/A/q", "pass Top/A/q", "pass Top/A",
		"run Top/B", "output Top/B "+ExcludedPrefix+"reason", "skip Top/B", "pass Top",
	)
	s, err := ScoreRun(strings.NewReader(in), "Top", nil)
	require.NoError(t, err)
	require.True(t, s.Finished)
	require.Equal(t, 1, s.SuitesPassed())
	leaves, passed := s.Totals()
	require.Equal(t, 2, leaves, "an excluded suite without a reference weighs one test")
	require.Equal(t, 1, passed)

	var ref strings.Builder
	require.NoError(t, s.WriteReference(&ref, "fake"))
	require.Equal(t, "# Leaf tests per enginetest suite on fake: the weight an excluded suite gets.\nA 1\n", ref.String())
}
