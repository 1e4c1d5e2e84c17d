package enginetest

import (
	"os"
	"path/filepath"
	"testing"

	et "github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/scriptgen/setup"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/stretchr/testify/require"
)

func mustQuery(t *testing.T, h *Harness, e et.QueryEngine, q string) []sql.Row {
	t.Helper()
	ctx := et.NewContext(h)
	_, iter, _, err := e.Query(ctx, q)
	require.NoError(t, err, q)
	rows, err := sql.RowIterToRows(ctx, iter)
	require.NoError(t, err, q)
	return rows
}

func databases(t *testing.T, h *Harness, e et.QueryEngine) []string {
	var names []string
	for _, r := range mustQuery(t, h, e, "SHOW DATABASES") {
		names = append(names, r[0].(string))
	}
	return names
}

// One backend serves every engine; each new engine starts from exactly
// the set-up scripts' data, whatever the previous one left.
func TestHarnessReusesTheBackendAndResetsItsData(t *testing.T) {
	b := NewMemory()
	h := NewHarness(b, HarnessOptions{})
	h.Setup(setup.MydbData, setup.MytableData)
	e1, err := h.NewEngine(t)
	require.NoError(t, err)
	mustQuery(t, h, e1, "CREATE DATABASE leftover")
	mustQuery(t, h, e1, "INSERT INTO mydb.mytable VALUES (99, 'extra')")
	require.Contains(t, databases(t, h, e1), "leftover")
	require.Equal(t, []sql.Row{{int64(4)}}, mustQuery(t, h, e1, "SELECT count(*) FROM mydb.mytable"))

	e2, err := h.NewEngine(t)
	require.NoError(t, err)
	require.NotSame(t, e1, e2, "a new engine")
	require.Same(t, b.Provider(), e2.EngineAnalyzer().Catalog.DbProvider, "over the same backend")
	require.NotContains(t, databases(t, h, e2), "leftover")
	require.Equal(t, []sql.Row{{int64(3)}}, mustQuery(t, h, e2, "SELECT count(*) FROM mydb.mytable"))

	// A new suite starts empty (BeginSuite), then the default set-up
	// (mydb only) applies.
	require.NoError(t, h.BeginSuite())
	require.Empty(t, userDatabases(h.NewContext(), b.Provider()))
	e3, err := h.NewEngine(t)
	require.NoError(t, err)
	require.Empty(t, mustQuery(t, h, e3, "SHOW TABLES FROM mydb"))
}

// Databases a test builds straight into the provider (the versioned
// set-up does) survive the next engine, as with GMS's own harness, until
// the next suite.
func TestHarnessKeepsDataBuiltIntoTheProviderUntilTheNextSuite(t *testing.T) {
	h := NewHarness(NewMemory(), HarnessOptions{})
	require.NoError(t, h.BeginSuite())
	h.NewDatabases("direct")
	e, err := h.NewEngine(t)
	require.NoError(t, err)
	require.Contains(t, databases(t, h, e), "direct")
	require.NoError(t, h.BeginSuite())
	e, err = h.NewEngine(t)
	require.NoError(t, err)
	require.NotContains(t, databases(t, h, e), "direct")
}

// bare has only what Backend requires.
type bare struct{ m *Memory }

func (b bare) Name() string                          { return "bare" }
func (b bare) Provider() sql.MutableDatabaseProvider { return b.m.Provider() }
func (b bare) Features() Features                    { return b.m.Features() }
func (b bare) NewSession(base *sql.BaseSession) (sql.Session, error) {
	return b.m.NewSession(base)
}

// A suite a backend cannot run must be excluded in writing, with a reason.
func TestExclusionsMustNameEverySuiteABackendCannotRun(t *testing.T) {
	b := bare{NewMemory()}
	err := CheckExclusions(b, nil)
	require.Error(t, err)
	for _, name := range []string{"TestVersionedQueries", "TestReadOnlyDatabases", "TestPersist", "TestValidateSession"} {
		require.Contains(t, err.Error(), name)
	}
	require.NoError(t, CheckExclusions(NewMemory(), nil))

	path := filepath.Join(t.TempDir(), "bare.exclusions")
	var text string
	for _, s := range Suites {
		if !has(b, s.Needs) {
			text += s.Name + ": bare has no " + s.Needs + "\n"
		}
	}
	require.NoError(t, os.WriteFile(path, []byte("# comment\n\n"+text), 0o644))
	excl, err := ReadExclusions(path)
	require.NoError(t, err)
	require.NoError(t, CheckExclusions(b, excl))

	for name, bad := range map[string]string{
		"no reason":   "TestQueries:\n",
		"not a suite": "TestNoSuchThing: why\n",
		"twice":       "TestQueries: a\nTestQueries: b\n",
	} {
		require.NoError(t, os.WriteFile(path, []byte(bad), 0o644))
		_, err := ReadExclusions(path)
		require.Error(t, err, name)
	}
}
