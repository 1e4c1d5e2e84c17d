// Command enginetest-score scores a run of GMS's enginetest suites
// (pkg/sql/logictest/enginetest): the share of tests that passed, where a
// skipped test, an unfinished one and an excluded suite count as failed.
//
// With -binary it runs the suites itself, each in a process of its own, so
// that a suite that panics or hangs (go-mysql-server's enginetest does not
// recover panics, and a backend under development will have some) loses
// only its own unfinished tests. `make enginetest` does this:
//
//	go test -c -o /tmp/et.test ./pkg/sql/logictest/enginetest/
//	go run ./pkg/sql/logictest/enginetest/cmd/enginetest-score -binary /tmp/et.test \
//	  -dir pkg/sql/logictest/enginetest -top TestEnginetestMemory \
//	  -reference pkg/sql/logictest/enginetest/testdata/memory.leaves
//
// Without -binary it scores a `go test -json` stream read from stdin.
// It exits 0 when it produced a score (failing tests are the figure, not
// an error) and 2 when it could not.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/augustus-db/augustus/pkg/sql/logictest/enginetest"
)

func main() {
	top := flag.String("top", "TestEnginetestMemory", "the top-level test whose subtests are the suites")
	backend := flag.String("backend", "memory", "the backend's name, for the report")
	reference := flag.String("reference", "", "leaf counts per suite (the weight of an excluded suite)")
	writeReference := flag.String("write-reference", "", "write this run's leaf counts per suite to this file")
	binary := flag.String("binary", "", "a test binary (go test -c) to run, one process per suite")
	dir := flag.String("dir", ".", "with -binary: the directory to run it in (its package's)")
	only := flag.String("run", "", "with -binary: run only the suites whose name matches this regular expression")
	suiteTimeout := flag.Duration("suite-timeout", 20*time.Minute, "with -binary: the time bound of one suite")
	flag.Parse()

	if err := run(*top, *backend, *reference, *writeReference, *binary, *dir, *only, *suiteTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "enginetest-score:", err)
		os.Exit(2)
	}
}

func run(top, backend, reference, writeReference, binary, dir, only string, suiteTimeout time.Duration) error {
	ref := map[string]int{}
	if reference != "" {
		r, err := enginetest.ReadReference(reference)
		if err != nil {
			return err
		}
		ref = r
	}
	var score *enginetest.Score
	var err error
	if binary == "" {
		score, err = enginetest.ScoreRun(os.Stdin, top, ref)
	} else {
		score, err = runIsolated(binary, dir, top, only, suiteTimeout, ref)
	}
	if err != nil {
		return err
	}
	score.Write(os.Stdout, backend)
	if writeReference != "" {
		f, err := os.Create(writeReference)
		if err != nil {
			return err
		}
		err = score.WriteReference(f, backend)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runIsolated runs every suite in a process of its own, through
// `go tool test2json`, and merges their scores.
func runIsolated(binary, dir, top, only string, timeout time.Duration, ref map[string]int) (*enginetest.Score, error) {
	var filter *regexp.Regexp
	if only != "" {
		var err error
		if filter, err = regexp.Compile(only); err != nil {
			return nil, err
		}
	}
	out := &enginetest.Score{Finished: true}
	for _, s := range enginetest.Suites {
		if filter != nil && !filter.MatchString(s.Name) {
			continue
		}
		start := time.Now()
		// The process gets a minute beyond the test binary's own timeout,
		// which panics with the stacks of a hung suite.
		ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
		cmd := exec.CommandContext(ctx, binary, "-test.v=test2json", "-test.run", "^"+top+"$/^"+s.Name+"$",
			"-test.timeout", timeout.String(), "-test.count=1", "-enginetest.all")
		cmd.Dir = dir
		var raw bytes.Buffer
		cmd.Stdout = &raw
		cmd.Stderr = &raw
		runErr := cmd.Run()
		killed := ctx.Err() != nil
		cancel()
		// A test binary exits 1 when tests fail (that is the score) and 2
		// when it panics or times out: the suite crashed.
		var exit *exec.ExitError
		crashed := killed || (errors.As(runErr, &exit) && exit.ExitCode() != 1)
		if runErr != nil && !crashed && !errors.As(runErr, &exit) {
			return nil, fmt.Errorf("%s: %w", s.Name, runErr)
		}
		conv := exec.Command("go", "tool", "test2json")
		conv.Stdin = &raw
		var stdout bytes.Buffer
		conv.Stdout = &stdout
		conv.Stderr = os.Stderr
		if err := conv.Run(); err != nil {
			return nil, fmt.Errorf("%s: test2json: %w", s.Name, err)
		}
		sc, err := enginetest.ScoreRun(&stdout, top, ref)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		var su enginetest.SuiteScore
		switch len(sc.Suites) {
		case 0:
			if !crashed {
				return nil, fmt.Errorf("%s: the run reported no suite:\n%s", s.Name, stdout.String())
			}
			su = enginetest.SuiteScore{Name: s.Name}
		case 1:
			su = sc.Suites[0]
		default:
			return nil, fmt.Errorf("%s: the run reported %d suites", s.Name, len(sc.Suites))
		}
		if crashed || !sc.Finished {
			// The tests the crash kept from starting are not in the
			// stream: the suite weighs at least what the reference run
			// saw of it, the difference counted as unfinished.
			su.Crashed = true
			if missing := ref[s.Name] - su.Leaves; missing > 0 {
				su.Leaves += missing
				su.Unfinished += missing
			}
			if su.Leaves == 0 {
				su.Leaves, su.Unfinished = 1, 1
			}
		}
		su.Elapsed = time.Since(start)
		fmt.Fprintf(os.Stderr, "%-44s %6d/%-6d %s%s\n", su.Name, su.Passed, su.Leaves, su.Elapsed.Round(100*time.Millisecond), map[bool]string{true: " CRASHED"}[su.Crashed])
		out.Suites = append(out.Suites, su)
	}
	return out, nil
}
