// Package sqllogictest parses and runs SQLite's sqllogictest format
// (https://www.sqlite.org/sqllogictest/doc/trunk/about.wiki) against any
// logictest.Engine, and embeds the select1–5 corpus (public domain; see
// testdata/README.md).
//
// The format, as this runner implements it:
//   - records are separated by blank lines; '#' lines are comments;
//   - "statement ok" / "statement error" run SQL that must succeed / fail;
//   - "query <types> [nosort|rowsort|valuesort] [label]" runs SQL whose
//     values, after the sort mode, must equal the lines after "----" (one
//     value per line) or, for "N values hashing to H", have that count and
//     MD5 (each value followed by a newline). Values are formatted by the
//     declared type letter as the reference runner does: I as a 64-bit
//     integer, R as "%.3f", T as text with "(empty)" for the empty string
//     and '@' for bytes outside printable ASCII, NULL as "NULL" (format.go);
//   - queries that share a label must produce the same values in a file;
//   - "skipif E" / "onlyif E" lines keep a record from engines other than /
//     only for E; the engine is "mysql" here. "halt" ends the file for the
//     engines it applies to; "hash-threshold N" is accepted (the files are
//     written with their threshold applied, so each record already holds
//     the form to compare).
//
// Scoring (Result): every statement and query that applies to the engine
// is a record, and it passed or it failed. A record skipif/onlyif keeps
// from the engine, or one after a halt, is not counted at all, as the
// format intends; a record the runner itself does not run (Options.Exclude,
// a timeout) is counted and failed. Each file runs in a database of its
// own, dropped and created afresh, on one session.
//
// Tests: TestSelectFilesOnMemory (make test) runs select1–3 whole and the
// first records of select4–5 on GMS's memory backend, every one of which
// must pass; TestSQLLogicTestAll (make sqllogictest) runs all of them and
// prints the score.
package sqllogictest
