// Command enginetest-score reads the `go test -json` output of a run of
// GMS's enginetest suites (pkg/sql/logictest/enginetest) on stdin and
// prints the share of tests that passed: a skipped test, an unfinished one
// and an excluded suite count as failed. `make enginetest` pipes into it.
//
//	go test -json -run '^TestEnginetestMemory$' ./pkg/sql/logictest/enginetest/ -args -enginetest.all |
//	  go run ./pkg/sql/logictest/enginetest/cmd/enginetest-score -top TestEnginetestMemory \
//	    -reference pkg/sql/logictest/enginetest/testdata/memory.leaves
//
// It exits 1 when the run did not finish (a crash or a timeout), 0
// otherwise: failing tests are the figure, not an error.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/augustus-db/augustus/pkg/sql/logictest/enginetest"
)

func main() {
	top := flag.String("top", "TestEnginetestMemory", "the top-level test whose subtests are the suites")
	backend := flag.String("backend", "memory", "the backend's name, for the report")
	reference := flag.String("reference", "", "leaf counts per suite (the weight of an excluded suite)")
	writeReference := flag.String("write-reference", "", "write this run's leaf counts per suite to this file")
	flag.Parse()

	ref := map[string]int{}
	if *reference != "" {
		r, err := enginetest.ReadReference(*reference)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ref = r
	}
	score, err := enginetest.ScoreRun(os.Stdin, *top, ref)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	score.Write(os.Stdout, *backend)
	if *writeReference != "" {
		f, err := os.Create(*writeReference)
		if err == nil {
			err = score.WriteReference(f, *backend)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if !score.Finished {
		os.Exit(1)
	}
}
