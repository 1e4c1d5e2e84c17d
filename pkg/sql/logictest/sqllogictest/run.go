package sqllogictest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// Options shape a run.
type Options struct {
	// EngineName is the name skipif/onlyif lines are matched against
	// ("mysql" unless set).
	EngineName string
	// Database is created afresh (dropped first) for each file and used by
	// its session ("slt" unless set).
	Database string
	// Timeout bounds each record (0: none). A record that runs out of time
	// fails.
	Timeout time.Duration
	// MaxRecords stops a file after that many counted records (0: all). The
	// records after the cut are neither run nor counted: it makes a subset,
	// not a score.
	MaxRecords int
	// Exclude names records the run must not execute (an engine that hangs
	// or crashes on them) with the reason; they count as failed. Keys are
	// "file:line" with the file's base name and the record's command line.
	Exclude map[string]string
	// Progress, when set, receives every failure as it happens.
	Progress func(Failure)
}

// Failure is one record that did not pass.
type Failure struct {
	File   string
	Line   int
	SQL    string
	Reason string
}

func (f Failure) String() string {
	return fmt.Sprintf("%s:%d: %s\n\t%s", f.File, f.Line, f.Reason, strings.ReplaceAll(f.SQL, "\n", "\n\t"))
}

// Result is the score of one file.
type Result struct {
	File string
	// Records is the number of records counted: every statement and query
	// that applies to the engine (not excluded by skipif/onlyif) before any
	// halt. Passed of them passed; the rest failed, Excluded of them because
	// Options.Exclude kept them from running.
	Records, Passed, Excluded int
	// NotApplicable counts the records skipif/onlyif kept from this engine
	// and those after a halt: the format's own choice, not counted at all.
	NotApplicable int
	Failures      []Failure
	Elapsed       time.Duration
}

// Failed is the number of counted records that did not pass.
func (r *Result) Failed() int { return r.Records - r.Passed }

// RunFile runs the file at path against a fresh database of eng.
func RunFile(ctx context.Context, eng logictest.Engine, path string, opts Options) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	defer f.Close()
	recs, err := Parse(f, filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return Run(ctx, eng, filepath.Base(path), recs, opts)
}

// Run runs parsed records against a fresh database of eng; name labels the
// result and the keys of Options.Exclude.
func Run(ctx context.Context, eng logictest.Engine, name string, recs []Record, opts Options) (res *Result, err error) {
	if opts.EngineName == "" {
		opts.EngineName = "mysql"
	}
	if opts.Database == "" {
		opts.Database = "slt"
	}
	start := time.Now()
	sess, err := eng.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqllogictest: %s: %w", name, err)
	}
	defer func() {
		if cerr := sess.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("sqllogictest: %s: close: %w", name, cerr)
		}
	}()
	for _, stmt := range []string{
		"DROP DATABASE IF EXISTS " + opts.Database,
		"CREATE DATABASE " + opts.Database,
		"USE " + opts.Database,
	} {
		if _, err := sess.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("sqllogictest: %s: set-up %q: %w", name, stmt, err)
		}
	}

	r := runner{sess: sess, opts: opts, labels: map[string]labelled{}, res: &Result{File: name}}
	for i := range recs {
		rec := &recs[i]
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("sqllogictest: %s: %w", name, err)
		}
		if !rec.Applies(opts.EngineName) {
			if rec.Counted() {
				r.res.NotApplicable++
			}
			continue
		}
		if rec.Kind == Halt {
			// The file stops here for this engine: what follows is not run
			// and, as in the reference runner, not counted.
			for j := i + 1; j < len(recs); j++ {
				if recs[j].Counted() {
					r.res.NotApplicable++
				}
			}
			break
		}
		if rec.Kind == HashThreshold {
			// The files are written with their threshold applied, so each
			// record's expected form (list or hash) is already fixed and
			// the runner compares whichever form the record holds.
			continue
		}
		if opts.MaxRecords > 0 && r.res.Records >= opts.MaxRecords {
			break
		}
		r.res.Records++
		if reason, ok := opts.Exclude[fmt.Sprintf("%s:%d", name, rec.Line)]; ok {
			r.res.Excluded++
			r.fail(rec, "excluded: "+reason)
			continue
		}
		if reason := r.record(ctx, rec); reason != "" {
			r.fail(rec, reason)
		} else {
			r.res.Passed++
		}
	}
	if _, err := sess.Exec(ctx, "DROP DATABASE IF EXISTS "+opts.Database); err != nil {
		return nil, fmt.Errorf("sqllogictest: %s: clean-up: %w", name, err)
	}
	r.res.Elapsed = time.Since(start)
	return r.res, nil
}

type labelled struct {
	line int
	hash string
	n    int
}

type runner struct {
	sess   logictest.Session
	opts   Options
	labels map[string]labelled
	res    *Result
}

func (r *runner) fail(rec *Record, reason string) {
	f := Failure{File: r.res.File, Line: rec.Line, SQL: rec.SQL, Reason: reason}
	r.res.Failures = append(r.res.Failures, f)
	if r.opts.Progress != nil {
		r.opts.Progress(f)
	}
}

// record runs one statement or query and returns why it failed, or "".
func (r *runner) record(ctx context.Context, rec *Record) string {
	if r.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.Timeout)
		defer cancel()
	}
	if rec.Kind == Statement {
		_, err := r.sess.Exec(ctx, rec.SQL)
		switch {
		case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fmt.Sprintf("timed out after %s", r.opts.Timeout)
		case rec.ExpectError && err == nil:
			return "statement succeeded; an error was expected"
		case !rec.ExpectError && err != nil:
			return "statement failed: " + logictest.ErrorString(err)
		}
		return ""
	}

	rows, err := r.sess.Query(ctx, rec.SQL)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Sprintf("timed out after %s", r.opts.Timeout)
		}
		return "query failed: " + logictest.ErrorString(err)
	}
	if len(rows.Columns) != len(rec.Types) {
		return fmt.Sprintf("query returned %d columns, the record declares %d (%s)", len(rows.Columns), len(rec.Types), rec.Types)
	}
	vals := formatRows(rows.Values, rec.Types, rec.Sort)
	hash := hashValues(vals)

	reason := ""
	if rec.IsHash {
		if len(vals) != rec.HashCount || hash != rec.Hash {
			reason = fmt.Sprintf("got %d values hashing to %s, expected %d values hashing to %s", len(vals), hash, rec.HashCount, rec.Hash)
		}
	} else {
		reason = compareValues(rec.Expected, vals)
	}
	if rec.Label != "" {
		if prev, ok := r.labels[rec.Label]; ok {
			if prev.hash != hash && reason == "" {
				reason = fmt.Sprintf("label %s: %d values hashing to %s differ from the %d values hashing to %s of line %d",
					rec.Label, len(vals), hash, prev.n, prev.hash, prev.line)
			}
		} else {
			r.labels[rec.Label] = labelled{line: rec.Line, hash: hash, n: len(vals)}
		}
	}
	return reason
}

// compareValues compares a listed expectation with the values and describes
// the first difference.
func compareValues(want, got []string) string {
	for i := 0; i < len(want) && i < len(got); i++ {
		if want[i] != got[i] {
			return fmt.Sprintf("value %d is %q, expected %q (got %d values, expected %d)", i+1, got[i], want[i], len(got), len(want))
		}
	}
	if len(want) != len(got) {
		return fmt.Sprintf("got %d values, expected %d: %s", len(got), len(want), abbreviate(got))
	}
	return ""
}

func abbreviate(vals []string) string {
	const max = 12
	if len(vals) <= max {
		return "[" + strings.Join(vals, " ") + "]"
	}
	return "[" + strings.Join(vals[:max], " ") + " …]"
}
