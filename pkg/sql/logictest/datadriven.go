package logictest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// DataDrivenOptions shape RunDataDriven.
type DataDrivenOptions struct {
	// Database is dropped, created and made current for each file
	// ("logictest" unless set); every session starts in it.
	Database string
	// Timeout bounds each directive (a minute unless set).
	Timeout time.Duration
	// EngineTags are the names the onlyif= and skipif= arguments of a
	// directive are matched against: the engine's own name ("memory",
	// "augustus") and the families it belongs to ("gms" for every engine
	// built on go-mysql-server, whose evaluator they share).
	EngineTags []string
}

// RunDataDriven runs the datadriven SQL logic-test files at path (a file, or
// a directory walked recursively) against engines from newEngine, called
// once per file. An expensive engine may be shared by returning the same
// one every time: each file works in a database of its own that is dropped
// and created when the file starts, so files do not see each other's
// tables.
//
// The directives (the first word of a directive line; `session=NAME`
// picks the session, "default" when absent, and a session is connected the
// first time it is named):
//
//	statement ok
//	<SQL>
//	----
//
// runs a statement that must succeed; its expected output is empty.
//
//	statement count N
//
// is statement ok whose rows-affected count must be N.
//
//	statement error [CODE]
//	<SQL>
//	----
//	ERROR 1062 (23000): Duplicate entry '1' for key 't.PRIMARY'
//
// runs a statement that must fail; the output is the error as the mysql
// client prints it, and CODE, when given, must be its MySQL error number
// (checked even under -rewrite, so a rewrite cannot accept a wrong kind of
// error). "statement error duplicate entry" instead requires the words
// (plain words: the directive line admits no '=' or parentheses in them) in
// the message, whatever its number. With a CODE or words and an empty
// expectation, only they are checked: engines word their messages
// differently, and a file meant for several can leave the message out
// (-rewrite fills it in).
//
//	query [rowsort|valuesort] [colnames]
//	<SQL>
//	----
//	1 | one
//	2 | NULL
//
// runs a query; the output is one line per row, values separated by " | ",
// NULL as NULL and the empty string as a pair of single quotes. rowsort
// sorts the lines (for queries without ORDER BY), valuesort sorts all
// values one per line, colnames prints the column names first.
//
//	query error [CODE]
//
// is a query that must fail, printed as statement error.
//
//	disconnect session=NAME
//
// closes a session (its open transaction rolls back); naming it again
// connects afresh.
//
// Any directive may carry onlyif=TAG or skipif=TAG (matched against
// DataDrivenOptions.EngineTags): a directive that does not apply is not run
// and keeps its expected output, so one file can state what differs between
// engines: MySQL's answer under skipif=gms beside go-mysql-server's under
// onlyif=gms where GMS departs from MySQL, or the memory backend's lack of
// isolation under onlyif=memory.
//
// `go test -rewrite` rewrites the expected outputs from the engine's answers
// (a failing "statement ok" or an unexpected error code still fails).
func RunDataDriven(t *testing.T, path string, newEngine func(t *testing.T) Engine, opts DataDrivenOptions) {
	t.Helper()
	if opts.Database == "" {
		opts.Database = "logictest"
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	datadriven.Walk(t, path, func(t *testing.T, path string) {
		f := &ddFile{engine: newEngine(t), opts: opts, sessions: map[string]Session{}}
		defer f.close(t)
		f.setUp(t)
		datadriven.RunTest(t, path, f.directive)
	})
}

type ddFile struct {
	engine   Engine
	opts     DataDrivenOptions
	sessions map[string]Session
}

func (f *ddFile) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), f.opts.Timeout)
}

func (f *ddFile) setUp(t *testing.T) {
	ctx, cancel := f.ctx()
	defer cancel()
	s, err := f.engine.Connect(ctx)
	if err != nil {
		t.Fatalf("logictest: connect: %v", err)
	}
	defer s.Close()
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + f.opts.Database, "CREATE DATABASE " + f.opts.Database} {
		if _, err := s.Exec(ctx, stmt); err != nil {
			t.Fatalf("logictest: set-up %q: %v", stmt, err)
		}
	}
}

func (f *ddFile) close(t *testing.T) {
	names := make([]string, 0, len(f.sessions))
	for name := range f.sessions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := f.sessions[name].Close(); err != nil {
			t.Errorf("logictest: close session %s: %v", name, err)
		}
	}
}

// session returns the directive's session, connecting it on first use.
func (f *ddFile) session(t *testing.T, ctx context.Context, d *datadriven.TestData) (string, Session) {
	name := "default"
	if d.HasArg("session") {
		d.ScanArgs(t, "session", &name)
	}
	if s, ok := f.sessions[name]; ok {
		return name, s
	}
	s, err := f.engine.Connect(ctx)
	if err != nil {
		d.Fatalf(t, "connect session %s: %v", name, err)
	}
	if _, err := s.Exec(ctx, "USE "+f.opts.Database); err != nil {
		d.Fatalf(t, "session %s: USE %s: %v", name, f.opts.Database, err)
	}
	f.sessions[name] = s
	return name, s
}

// bareArgs returns the directive's arguments that have no value, in order
// (the words after the command, e.g. "ok", "error", "1062", "rowsort").
func bareArgs(d *datadriven.TestData) []string {
	var out []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 {
			out = append(out, a.Key)
		}
	}
	return out
}

func (f *ddFile) applies(t *testing.T, d *datadriven.TestData) bool {
	tagged := func(name string) bool {
		return slices.ContainsFunc(f.opts.EngineTags, func(tag string) bool { return strings.EqualFold(tag, name) })
	}
	var name string
	if d.HasArg("onlyif") {
		d.ScanArgs(t, "onlyif", &name)
		if !tagged(name) {
			return false
		}
	}
	if d.HasArg("skipif") {
		d.ScanArgs(t, "skipif", &name)
		if tagged(name) {
			return false
		}
	}
	return true
}

func (f *ddFile) directive(t *testing.T, d *datadriven.TestData) string {
	if !f.applies(t, d) {
		return d.Expected
	}
	ctx, cancel := f.ctx()
	defer cancel()
	args := bareArgs(d)
	mode := ""
	if len(args) > 0 {
		mode = args[0]
	}
	switch d.Cmd {
	case "disconnect":
		name := "default"
		if d.HasArg("session") {
			d.ScanArgs(t, "session", &name)
		}
		s, ok := f.sessions[name]
		if !ok {
			d.Fatalf(t, "session %s is not connected", name)
		}
		delete(f.sessions, name)
		if err := s.Close(); err != nil {
			d.Fatalf(t, "close session %s: %v", name, err)
		}
		return ""

	case "statement":
		name, s := f.session(t, ctx, d)
		res, err := s.Exec(ctx, d.Input)
		switch mode {
		case "ok", "count":
			if err != nil {
				d.Fatalf(t, "session %s: statement failed: %s", name, ErrorString(err))
			}
			if mode == "count" {
				if len(args) != 2 {
					d.Fatalf(t, "statement count needs the expected number of rows")
				}
				want, perr := strconv.ParseUint(args[1], 10, 64)
				if perr != nil {
					d.Fatalf(t, "statement count %q: %v", args[1], perr)
				}
				if res.RowsAffected != want {
					d.Fatalf(t, "session %s: %d rows affected, expected %d", name, res.RowsAffected, want)
				}
			}
			return ""
		case "error":
			return f.expectError(t, d, name, args, err)
		default:
			d.Fatalf(t, "statement must be followed by ok, count or error")
		}

	case "query":
		name, s := f.session(t, ctx, d)
		rows, err := s.Query(ctx, d.Input)
		if mode == "error" {
			return f.expectError(t, d, name, args, err)
		}
		if err != nil {
			d.Fatalf(t, "session %s: query failed: %s", name, ErrorString(err))
		}
		return formatDataDriven(rows, slices.Contains(args, "rowsort"), slices.Contains(args, "valuesort"), slices.Contains(args, "colnames"))
	}
	d.Fatalf(t, "unknown directive %q", d.Cmd)
	return ""
}

func (f *ddFile) expectError(t *testing.T, d *datadriven.TestData, session string, args []string, err error) string {
	if err == nil {
		d.Fatalf(t, "session %s: %s succeeded; an error was expected", session, d.Cmd)
	}
	if len(args) > 1 {
		if want, perr := strconv.ParseUint(args[1], 10, 16); perr == nil && len(args) == 2 {
			got := AsError(err)
			if got == nil || uint64(got.Code) != want {
				d.Fatalf(t, "session %s: got %s, expected error %d", session, ErrorString(err), want)
			}
		} else {
			words := strings.Join(args[1:], " ")
			if !strings.Contains(strings.ToLower(ErrorString(err)), strings.ToLower(words)) {
				d.Fatalf(t, "session %s: got %s, expected an error saying %q", session, ErrorString(err), words)
			}
		}
	}
	if len(args) > 1 && d.Expected == "" && !d.Rewrite {
		return "" // the code or the words were the check
	}
	return ErrorString(err) + "\n"
}

// formatDataDriven renders a query's rows for a datadriven expectation.
func formatDataDriven(rows *Rows, rowsort, valuesort, colnames bool) string {
	render := func(v Value) string {
		switch {
		case v.Null:
			return "NULL"
		case v.Text == "":
			return "''"
		}
		return v.Text
	}
	var lines []string
	for _, row := range rows.Values {
		vals := make([]string, len(row))
		for i, v := range row {
			vals[i] = render(v)
		}
		if valuesort {
			lines = append(lines, vals...)
		} else {
			lines = append(lines, strings.Join(vals, " | "))
		}
	}
	if rowsort || valuesort {
		slices.Sort(lines)
	}
	var b strings.Builder
	if colnames {
		fmt.Fprintln(&b, strings.Join(rows.Columns, " | "))
	}
	for _, l := range lines {
		fmt.Fprintln(&b, l)
	}
	return b.String()
}

// ExamplesDir is the absolute path of this package's example files
// (testdata/logic), so that another package's test can run them against its
// engine: logictest.RunDataDriven(t, logictest.ExamplesDir(), …). It relies
// on the source path compiled into the test binary (go test does not trim
// paths).
func ExamplesDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("logictest: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "testdata", "logic")
}
