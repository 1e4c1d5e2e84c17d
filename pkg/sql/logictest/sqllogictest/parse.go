package sqllogictest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind is what a record asks for.
type Kind int

const (
	// Statement runs SQL and expects success or an error.
	Statement Kind = iota + 1
	// Query runs SQL and compares its values.
	Query
	// HashThreshold sets the number of values above which expected results
	// are written as an MD5 hash.
	HashThreshold
	// Halt stops the file.
	Halt
)

// SortMode is how a query's values are ordered before they are compared.
type SortMode int

const (
	// NoSort keeps the engine's order (the query has an ORDER BY).
	NoSort SortMode = iota
	// RowSort sorts the rows, comparing their values as strings in column
	// order.
	RowSort
	// ValueSort sorts all values individually, ignoring row boundaries.
	ValueSort
)

// Condition is a skipif/onlyif line before a record.
type Condition struct {
	// Only is true for onlyif, false for skipif.
	Only   bool
	Engine string
}

// Record is one record of a file.
type Record struct {
	Kind Kind
	// Line is the 1-based line of the record's command (statement, query…).
	Line       int
	Conditions []Condition
	SQL        string

	// ExpectError is set for "statement error".
	ExpectError bool

	// Types has one letter per column: I (integer), R (real), T (text).
	Types string
	Sort  SortMode
	// Label names a result that every query with the same label in the file
	// must reproduce.
	Label string
	// Expected holds the expected values, one per line, when the file lists
	// them; HashCount and Hash hold "N values hashing to H" otherwise.
	Expected  []string
	IsHash    bool
	HashCount int
	Hash      string

	// Threshold is the value of a hash-threshold record.
	Threshold int
}

// Applies reports whether the record runs on engine, after its skipif and
// onlyif conditions.
func (r *Record) Applies(engine string) bool {
	for _, c := range r.Conditions {
		match := strings.EqualFold(c.Engine, engine)
		if c.Only != match {
			return false
		}
	}
	return true
}

// Counted reports whether the record is a test (a statement or a query) as
// opposed to a control record.
func (r *Record) Counted() bool { return r.Kind == Statement || r.Kind == Query }

// Parse reads a sqllogictest file. name is used in error messages.
//
// The grammar (SQLite's sqllogictest, "about.wiki"): records are separated
// by blank lines; '#' starts a comment line; a record is optional
// skipif/onlyif lines, then "statement ok|error" and SQL lines, or
// "query <types> <sort> [label]", SQL lines, "----" and expected values one
// per line (or "N values hashing to H"), or "hash-threshold N", or "halt".
func Parse(r io.Reader, name string) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return strings.TrimRight(sc.Text(), "\r"), true
	}
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("sqllogictest: %s:%d: %s", name, lineNo, fmt.Sprintf(format, args...))
	}

	var recs []Record
	var conds []Condition
	for {
		line, ok := next()
		if !ok {
			break
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			if len(conds) > 0 {
				return nil, errorf("condition without a record")
			}
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields := strings.Fields(trimmed)
		rec := Record{Line: lineNo}
		switch fields[0] {
		case "skipif", "onlyif":
			if len(fields) < 2 {
				return nil, errorf("%s needs an engine name", fields[0])
			}
			conds = append(conds, Condition{Only: fields[0] == "onlyif", Engine: fields[1]})
			continue
		case "halt":
			rec.Kind = Halt
		case "hash-threshold":
			if len(fields) != 2 {
				return nil, errorf("hash-threshold needs one number")
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil || n < 0 {
				return nil, errorf("hash-threshold %q is not a count", fields[1])
			}
			rec.Kind, rec.Threshold = HashThreshold, n
		case "statement":
			if len(fields) < 2 || (fields[1] != "ok" && fields[1] != "error") {
				return nil, errorf("statement must be followed by ok or error")
			}
			rec.Kind, rec.ExpectError = Statement, fields[1] == "error"
			var sqlLines []string
			for {
				l, ok := next()
				if !ok || strings.TrimSpace(l) == "" {
					break
				}
				sqlLines = append(sqlLines, l)
			}
			rec.SQL = strings.Join(sqlLines, "\n")
		case "query":
			if len(fields) < 2 {
				return nil, errorf("query needs a type string")
			}
			rec.Kind, rec.Types = Query, fields[1]
			for _, c := range rec.Types {
				if c != 'I' && c != 'R' && c != 'T' {
					return nil, errorf("unknown column type %q in %q", c, rec.Types)
				}
			}
			if len(fields) > 2 {
				switch fields[2] {
				case "nosort":
					rec.Sort = NoSort
				case "rowsort":
					rec.Sort = RowSort
				case "valuesort":
					rec.Sort = ValueSort
				default:
					return nil, errorf("unknown sort mode %q", fields[2])
				}
			}
			if len(fields) > 3 {
				rec.Label = fields[3]
			}
			var sqlLines []string
			results := false
			for {
				l, ok := next()
				if !ok || strings.TrimSpace(l) == "" {
					break
				}
				if strings.TrimSpace(l) == "----" {
					results = true
					break
				}
				sqlLines = append(sqlLines, l)
			}
			rec.SQL = strings.Join(sqlLines, "\n")
			if results {
				for {
					l, ok := next()
					if !ok || strings.TrimSpace(l) == "" {
						break
					}
					rec.Expected = append(rec.Expected, l)
				}
				if err := parseHash(&rec); err != nil {
					return nil, errorf("%v", err)
				}
			}
		default:
			return nil, errorf("unknown record %q", fields[0])
		}
		if rec.Counted() && rec.SQL == "" {
			return nil, errorf("record without SQL")
		}
		rec.Conditions, conds = conds, nil
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, errorf("%v", err)
	}
	if len(conds) > 0 {
		return nil, errorf("condition without a record at end of file")
	}
	return recs, nil
}

// parseHash recognises a single "N values hashing to H" line.
func parseHash(rec *Record) error {
	if len(rec.Expected) != 1 {
		return nil
	}
	f := strings.Fields(rec.Expected[0])
	if len(f) != 5 || f[1] != "values" || f[2] != "hashing" || f[3] != "to" {
		return nil
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return fmt.Errorf("bad value count in %q", rec.Expected[0])
	}
	if len(f[4]) != 32 {
		return fmt.Errorf("bad md5 in %q", rec.Expected[0])
	}
	rec.IsHash, rec.HashCount, rec.Hash, rec.Expected = true, n, strings.ToLower(f[4]), nil
	return nil
}
