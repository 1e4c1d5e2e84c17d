package enginetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A run is scored from `go test -json` output (test2json events). The unit
// is a leaf test: a test (suite, script, query…) with no subtests, which is
// how enginetest reports each query and script assertion. A leaf passes
// only if it passed; a skipped leaf counts as failed, and so does a leaf
// that started but never finished (the binary crashed or timed out). An
// excluded suite counts as failed with as many leaves as the reference
// run (the memory backend) had in it, so that excluding a big suite cannot
// raise the share.

// event is a test2json event.
type event struct {
	Action string
	Test   string
	Output string
}

// SuiteScore is the score of one suite.
type SuiteScore struct {
	Name                    string
	Leaves, Passed, Skipped int
	// Unfinished counts leaves that started and never ended.
	Unfinished int
	// Excluded holds the exclusion's reason; Leaves then comes from the
	// reference.
	Excluded string
	// Crashed is set when the suite's process ended without reporting the
	// suite's result (a panic, a timeout): its unfinished leaves failed.
	Crashed bool
	// Elapsed is the suite's wall-clock time, when run in a process of its
	// own.
	Elapsed time.Duration
}

// Failed is the number of leaves that did not pass.
func (s SuiteScore) Failed() int { return s.Leaves - s.Passed }

// Score is a scored run.
type Score struct {
	Suites []SuiteScore
	// Finished is false if the run never reported its top test's result
	// (it crashed or was killed): the score is then incomplete.
	Finished bool
}

// Totals sums the leaves over the suites.
func (s *Score) Totals() (leaves, passed int) {
	for _, su := range s.Suites {
		leaves += su.Leaves
		passed += su.Passed
	}
	return leaves, passed
}

// SuitesPassed counts the suites all of whose leaves passed.
func (s *Score) SuitesPassed() int {
	n := 0
	for _, su := range s.Suites {
		if su.Excluded == "" && su.Leaves > 0 && su.Passed == su.Leaves {
			n++
		}
	}
	return n
}

// ScoreRun reads test2json events of a run whose top test is top (for
// example "TestEnginetestMemory"; its direct subtests are the suites) and
// scores it; reference maps suite names to their leaf counts for excluded
// suites.
func ScoreRun(r io.Reader, top string, reference map[string]int) (*Score, error) {
	type state struct {
		action   string
		children bool
		output   strings.Builder
	}
	tests := map[string]*state{}
	var order []string
	topDone := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // go test's own lines (build output)
		}
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("enginetest: score: %w", err)
		}
		if ev.Test == top && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip") {
			topDone = true
		}
		if !strings.HasPrefix(ev.Test, top+"/") {
			continue
		}
		st, ok := tests[ev.Test]
		if !ok {
			st = &state{}
			tests[ev.Test] = st
			order = append(order, ev.Test)
			// Every ancestor below top has a child now.
			for p := ev.Test; ; {
				i := strings.LastIndexByte(p, '/')
				if i <= len(top) {
					break
				}
				p = p[:i]
				if a, ok := tests[p]; ok {
					a.children = true
				}
			}
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			st.action = ev.Action
		case "output":
			if st.output.Len() < 4096 {
				st.output.WriteString(ev.Output)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("enginetest: score: %w", err)
	}

	suites := map[string]*SuiteScore{}
	var names []string
	for _, name := range order {
		st := tests[name]
		rest := name[len(top)+1:]
		suite, _, _ := strings.Cut(rest, "/")
		ss, ok := suites[suite]
		if !ok {
			ss = &SuiteScore{Name: suite}
			suites[suite] = ss
			names = append(names, suite)
		}
		if rest == suite && st.action == "" {
			ss.Crashed = true
		}
		if rest == suite && st.action == "skip" {
			if i := strings.Index(st.output.String(), ExcludedPrefix); i >= 0 {
				reason := st.output.String()[i+len(ExcludedPrefix):]
				reason, _, _ = strings.Cut(reason, "\n")
				ss.Excluded = strings.TrimSpace(reason)
				ss.Leaves = max(reference[suite], 1)
				continue
			}
		}
		if st.children {
			continue
		}
		ss.Leaves++
		switch st.action {
		case "pass":
			ss.Passed++
		case "skip":
			ss.Skipped++
		case "":
			ss.Unfinished++
		}
	}
	out := &Score{Finished: topDone}
	for _, n := range names {
		out.Suites = append(out.Suites, *suites[n])
	}
	return out, nil
}

// Write prints the score: a line per suite, the exclusions with their
// reasons, and the totals.
func (s *Score) Write(w io.Writer, backend string) {
	fmt.Fprintf(w, "%-44s %7s %7s %7s %7s %8s\n", "suite", "passed", "leaves", "skipped", "share", "time")
	for _, su := range s.Suites {
		note := ""
		if su.Excluded != "" {
			note = "  EXCLUDED: " + su.Excluded
		}
		if su.Crashed {
			note += fmt.Sprintf("  CRASHED (%d unfinished)", su.Unfinished)
		}
		fmt.Fprintf(w, "%-44s %7d %7d %7d %6.1f%% %8s%s\n", su.Name, su.Passed, su.Leaves, su.Skipped, pct(su.Passed, su.Leaves),
			su.Elapsed.Round(100*time.Millisecond), note)
	}
	leaves, passed := s.Totals()
	excluded, crashed := 0, 0
	var elapsed time.Duration
	for _, su := range s.Suites {
		if su.Excluded != "" {
			excluded++
		}
		if su.Crashed {
			crashed++
		}
		elapsed += su.Elapsed
	}
	fmt.Fprintf(w, "\nenginetest on %s: %d of %d tests passed (%.1f%%); %d of %d suites passed every test; %d suites excluded, %d crashed; %s\n",
		backend, passed, leaves, pct(passed, leaves), s.SuitesPassed(), len(s.Suites), excluded, crashed, elapsed.Round(time.Second))
	if !s.Finished {
		fmt.Fprintln(w, "the run did not finish (crash or timeout): the score is incomplete")
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// ReadReference reads a reference file: "TestName leaves" per line.
func ReadReference(path string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("enginetest: reference: %w", err)
	}
	out := map[string]int{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("enginetest: %s:%d: want \"TestName leaves\"", path, n+1)
		}
		v, err := strconv.Atoi(f[1])
		if err != nil || v < 0 {
			return nil, fmt.Errorf("enginetest: %s:%d: bad count %q", path, n+1, f[1])
		}
		out[f[0]] = v
	}
	return out, nil
}

// WriteReference writes the leaf count of every suite that ran.
func (s *Score) WriteReference(w io.Writer, backend string) error {
	if _, err := fmt.Fprintf(w, "# Leaf tests per enginetest suite on %s: the weight an excluded suite gets.\n", backend); err != nil {
		return err
	}
	suites := slices.Clone(s.Suites)
	slices.SortFunc(suites, func(a, b SuiteScore) int { return strings.Compare(a.Name, b.Name) })
	for _, su := range suites {
		if su.Excluded != "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s %d\n", su.Name, su.Leaves); err != nil {
			return err
		}
	}
	return nil
}
