// Package enginetest runs go-mysql-server's own conformance suite
// (github.com/dolthub/go-mysql-server/enginetest: 170 suite functions,
// 20,213 tests on the memory backend) against a storage backend.
//
// A backend plugs in through Backend: its database provider, a session
// constructor and its Features, plus optional interfaces (EngineConfigurer,
// Resetter, VersionedBackend, ReadOnlyBackend, PersistingBackend). Harness
// implements enginetest.Harness and every optional harness interface over
// it, modelled on dolt's DoltHarness: the backend is created once and kept
// for the whole run; before each suite and each engine the harness drops
// every database (DROP DATABASE on a throwaway engine, or the backend's
// Reset) and replays the set-up scripts on a new engine over the same
// provider. So a backend that is expensive to build (an in-process
// cluster) costs one start-up, and swapping one in is a few lines:
//
//	func TestEnginetestAugustus(t *testing.T) {
//		b := newAugustusBackend(t) // implements enginetest.Backend
//		excl, err := enginetest.ReadExclusions("testdata/augustus.exclusions")
//		require.NoError(t, err)
//		enginetest.RunSuites(t, b, enginetest.Options{Exclusions: excl})
//	}
//
// RunSuites runs each suite of Suites as a subtest named after it. A suite
// the backend cannot run (it lacks an optional interface, or it crashes)
// must be listed in an exclusions file with the reason; excluded suites
// count as failed. Helpers lists enginetest's Test* functions that are not
// suites; TestSuitesCoverEnginetest checks against the module's source that
// the two lists cover every Test* function.
//
// Score (score.go, cmd/enginetest-score): the unit is a leaf test (each
// query or script assertion). A skipped or unfinished leaf counts as
// failed, and an excluded suite counts as failed with the number of leaves
// the memory backend ran in it (testdata/memory.leaves). make enginetest
// prints the share for the memory backend; the fast subset in make test
// runs a few suites (enginetest_test.go).
package enginetest
