package enginetest_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	et "github.com/dolthub/go-mysql-server/enginetest"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/logictest/enginetest"
)

var (
	all = flag.Bool("enginetest.all", false, "run every enginetest suite (make enginetest), not the fast subset")
	// exclusionsFile is resolved before TestMain changes directory.
	exclusionsFile, _ = filepath.Abs("testdata/memory.exclusions")
	// moduleDir is go-mysql-server's directory, found before TestMain
	// leaves the module.
	moduleDir string
)

// fastSuites run in make test: a cross-section (queries, DML, DDL,
// transactions' session handling, prepared statements) that takes seconds.
var fastSuites = []string{
	"TestInsertInto", "TestUpdate", "TestDelete", "TestCreateTable", "TestAlterTable",
	"TestJoinQueries", "TestWindowFunctions", "TestVariables", "TestPrepared",
}

// gmsDir is the go-mysql-server module's directory in the module cache:
// where the source of its enginetest package compiled into this binary
// lies, or (with trimmed paths) go list's answer.
func gmsDir() (string, error) {
	pc := reflect.ValueOf(et.TestQueries).Pointer()
	if file, _ := runtime.FuncForPC(pc).FileLine(pc); filepath.IsAbs(file) {
		return filepath.Dir(filepath.Dir(file)), nil
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/dolthub/go-mysql-server").Output()
	if err != nil {
		return "", fmt.Errorf("go list go-mysql-server: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// TestMain runs the tests in a scratch directory holding a copy of GMS's
// enginetest/testdata: its suites read ./testdata (LOAD DATA files, a TLS
// certificate) and write files (SELECT ... INTO OUTFILE) in the working
// directory, and the module cache is read-only.
func TestMain(m *testing.M) {
	flag.Parse()
	code, err := func() (int, error) {
		dir, err := gmsDir()
		if err != nil {
			return 0, err
		}
		moduleDir = dir
		scratch, err := os.MkdirTemp("", "enginetest")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(scratch)
		if err := os.CopyFS(filepath.Join(scratch, "testdata"), os.DirFS(filepath.Join(dir, "enginetest", "testdata"))); err != nil {
			return 0, fmt.Errorf("copy GMS testdata: %w", err)
		}
		// CopyFS keeps the module cache's read-only modes.
		_ = filepath.WalkDir(scratch, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				mode := os.FileMode(0o644)
				if d.IsDir() {
					mode = 0o755
				}
				_ = os.Chmod(p, mode)
			}
			return nil
		})
		if err := os.Chdir(scratch); err != nil {
			return 0, err
		}
		return m.Run(), nil
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginetest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// TestEnginetestMemory runs GMS's enginetest suites through the Harness
// over GMS's memory backend: the fast subset by default, every suite with
// -enginetest.all (make enginetest, which scores the run).
func TestEnginetestMemory(t *testing.T) {
	excl, err := enginetest.ReadExclusions(exclusionsFile)
	require.NoError(t, err)
	opts := enginetest.Options{Exclusions: excl}
	if !*all {
		opts.Only = fastSuites
	}
	enginetest.RunSuites(t, enginetest.NewMemory(), opts)
}

// TestSuitesCoverEnginetest reads the enginetest package of the
// go-mysql-server module in use and checks that each of its exported Test*
// functions is either a suite the runner calls or a listed helper, so that
// "all of enginetest" stays all of it when the module is upgraded.
func TestSuitesCoverEnginetest(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(moduleDir, "enginetest"), func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	require.NoError(t, err)
	var found []string
	for _, f := range pkgs["enginetest"].Files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Name.IsExported() {
				found = append(found, fn.Name.Name)
			}
		}
	}
	require.NotEmpty(t, found)
	known := slices.Clone(enginetest.Helpers)
	for _, s := range enginetest.Suites {
		require.NotContains(t, known, s.Name, "listed twice")
		known = append(known, s.Name)
	}
	for _, name := range found {
		require.Contains(t, known, name, "enginetest.%s is neither a suite nor a helper", name)
	}
	for _, name := range known {
		require.Contains(t, found, name, "%s is not in go-mysql-server's enginetest", name)
	}
	t.Logf("%d suites and %d helpers cover enginetest's %d Test* functions", len(enginetest.Suites), len(enginetest.Helpers), len(found))
}
