package sqllogictest

import (
	"fmt"
	"io"
	"time"
)

// WriteReport prints records passed / all records per file and in total.
// A record a skipif/onlyif or a halt kept from the engine is not counted;
// an excluded or timed-out record is counted and failed.
func WriteReport(w io.Writer, engine string, results []*Result) {
	fmt.Fprintf(w, "sqllogictest on %s\n", engine)
	fmt.Fprintf(w, "%-14s %8s %8s %7s %9s %9s %9s\n", "file", "passed", "records", "share", "excluded", "not-run", "time")
	var total Result
	for _, r := range results {
		writeLine(w, r.File, r)
		total.Records += r.Records
		total.Passed += r.Passed
		total.Excluded += r.Excluded
		total.NotApplicable += r.NotApplicable
		total.Elapsed += r.Elapsed
	}
	writeLine(w, "total", &total)
}

func writeLine(w io.Writer, name string, r *Result) {
	share := 0.0
	if r.Records > 0 {
		share = 100 * float64(r.Passed) / float64(r.Records)
	}
	fmt.Fprintf(w, "%-14s %8d %8d %6.2f%% %9d %9d %9s\n", name, r.Passed, r.Records, share, r.Excluded, r.NotApplicable, r.Elapsed.Round(100*time.Millisecond))
}
