package enginetest

import (
	"fmt"
	"testing"

	et "github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/sql"
)

// Suite is one Test* function of GMS's enginetest package, as the runner
// calls it.
type Suite struct {
	// Name is the enginetest function's name.
	Name string
	// Needs names the optional Backend interface the suite cannot run
	// without ("" when it needs none).
	Needs string
	// Run calls the function with the harness.
	Run func(t *testing.T, h *Harness)
}

func plain(f func(*testing.T, et.Harness)) func(*testing.T, *Harness) {
	return func(t *testing.T, h *Harness) { f(t, h) }
}

// Capabilities a suite may need (Suite.Needs).
const (
	needVersioned  = "VersionedBackend (AS OF queries)"
	needReadOnly   = "ReadOnlyBackend (read-only databases)"
	needPersisting = "PersistingBackend (SET PERSIST and session validation)"
)

// has reports whether b provides what a suite needs.
func has(b Backend, need string) bool {
	switch need {
	case "":
		return true
	case needVersioned:
		_, ok := b.(VersionedBackend)
		return ok
	case needReadOnly:
		_, ok := b.(ReadOnlyBackend)
		return ok
	case needPersisting:
		_, ok := b.(PersistingBackend)
		return ok
	}
	panic("enginetest: unknown need " + need)
}

// Suites lists every Test* function of go-mysql-server v0.20.0's enginetest
// package that is a test suite, with the arguments GMS's own
// memory_engine_test.go passes. TestSuitesCoverEnginetest checks against
// the module's source that none is missing; Helpers lists the Test*
// functions that are not suites.
var Suites = []Suite{
	{Name: "TestQueries", Run: plain(et.TestQueries)},
	{Name: "TestStatistics", Run: plain(et.TestStatistics)},
	{Name: "TestStatisticIndexFilters", Run: plain(et.TestStatisticIndexFilters)},
	{Name: "TestStatisticsPrepared", Run: plain(et.TestStatisticsPrepared)},
	{Name: "TestSpatialQueries", Run: plain(et.TestSpatialQueries)},
	{Name: "TestSpatialQueriesPrepared", Run: plain(et.TestSpatialQueriesPrepared)},
	{Name: "TestJoinQueries", Run: plain(et.TestJoinQueries)},
	{Name: "TestLateralJoinQueries", Run: plain(et.TestLateralJoinQueries)},
	{Name: "TestJSONTableQueries", Run: plain(et.TestJSONTableQueries)},
	{Name: "TestJSONTableQueriesPrepared", Run: plain(et.TestJSONTableQueriesPrepared)},
	{Name: "TestJSONTableScripts", Run: plain(et.TestJSONTableScripts)},
	{Name: "TestJSONTableScriptsPrepared", Run: plain(et.TestJSONTableScriptsPrepared)},
	{Name: "TestBrokenJSONTableScripts", Run: plain(et.TestBrokenJSONTableScripts)},
	{Name: "TestInfoSchemaPrepared", Run: plain(et.TestInfoSchemaPrepared)},
	{Name: "TestQueriesPrepared", Run: plain(et.TestQueriesPrepared)},
	{Name: "TestJoinQueriesPrepared", Run: plain(et.TestJoinQueriesPrepared)},
	{Name: "TestBrokenQueries", Run: plain(et.TestBrokenQueries)},
	{Name: "TestInfoSchema", Run: plain(et.TestInfoSchema)},
	{Name: "TestMySqlDb", Run: plain(et.TestMySqlDb)},
	{Name: "TestMySqlDbPrepared", Run: plain(et.TestMySqlDbPrepared)},
	{Name: "TestReadOnlyVersionedQueries", Run: plain(et.TestReadOnlyVersionedQueries)},
	{Name: "TestAnsiQuotesSqlMode", Run: plain(et.TestAnsiQuotesSqlMode)},
	{Name: "TestAnsiQuotesSqlModePrepared", Run: plain(et.TestAnsiQuotesSqlModePrepared)},
	{Name: "TestIntegrationPlans", Run: plain(et.TestIntegrationPlans)},
	{Name: "TestImdbPlans", Run: plain(et.TestImdbPlans)},
	{Name: "TestTpchPlans", Run: plain(et.TestTpchPlans)},
	{Name: "TestTpccPlans", Run: plain(et.TestTpccPlans)},
	{Name: "TestTpcdsPlans", Run: plain(et.TestTpcdsPlans)},
	{Name: "TestIndexQueryPlans", Run: plain(et.TestIndexQueryPlans)},
	{Name: "TestOrderByGroupBy", Run: plain(et.TestOrderByGroupBy)},
	{Name: "TestColumnAliases", Run: plain(et.TestColumnAliases)},
	{Name: "TestDerivedTableOuterScopeVisibility", Run: plain(et.TestDerivedTableOuterScopeVisibility)},
	{Name: "TestAmbiguousColumnResolution", Run: plain(et.TestAmbiguousColumnResolution)},
	{Name: "TestQueryErrors", Run: plain(et.TestQueryErrors)},
	{Name: "TestInsertInto", Run: plain(et.TestInsertInto)},
	{Name: "TestInsertDuplicateKeyKeyless", Run: plain(et.TestInsertDuplicateKeyKeyless)},
	{Name: "TestInsertIgnoreInto", Run: plain(et.TestInsertIgnoreInto)},
	{Name: "TestIgnoreIntoWithDuplicateUniqueKeyKeyless", Run: plain(et.TestIgnoreIntoWithDuplicateUniqueKeyKeyless)},
	{Name: "TestInsertDuplicateKeyKeylessPrepared", Run: plain(et.TestInsertDuplicateKeyKeylessPrepared)},
	{Name: "TestIgnoreIntoWithDuplicateUniqueKeyKeylessPrepared", Run: plain(et.TestIgnoreIntoWithDuplicateUniqueKeyKeylessPrepared)},
	{Name: "TestInsertIntoErrors", Run: plain(et.TestInsertIntoErrors)},
	{Name: "TestBrokenInsertScripts", Run: plain(et.TestBrokenInsertScripts)},
	{Name: "TestSpatialInsertInto", Run: plain(et.TestSpatialInsertInto)},
	{Name: "TestLoadData", Run: plain(et.TestLoadData)},
	{Name: "TestLoadDataErrors", Run: plain(et.TestLoadDataErrors)},
	{Name: "TestLoadDataFailing", Run: plain(et.TestLoadDataFailing)},
	{Name: "TestSelectIntoFile", Run: plain(et.TestSelectIntoFile)},
	{Name: "TestReplaceInto", Run: plain(et.TestReplaceInto)},
	{Name: "TestReplaceIntoErrors", Run: plain(et.TestReplaceIntoErrors)},
	{Name: "TestUpdate", Run: plain(et.TestUpdate)},
	{Name: "TestUpdateIgnore", Run: plain(et.TestUpdateIgnore)},
	{Name: "TestUpdateErrors", Run: plain(et.TestUpdateErrors)},
	{Name: "TestSpatialUpdate", Run: plain(et.TestSpatialUpdate)},
	{Name: "TestDelete", Run: plain(et.TestDelete)},
	{Name: "TestUpdateQueriesPrepared", Run: plain(et.TestUpdateQueriesPrepared)},
	{Name: "TestDeleteQueriesPrepared", Run: plain(et.TestDeleteQueriesPrepared)},
	{Name: "TestInsertQueriesPrepared", Run: plain(et.TestInsertQueriesPrepared)},
	{Name: "TestReplaceQueriesPrepared", Run: plain(et.TestReplaceQueriesPrepared)},
	{Name: "TestDeleteErrors", Run: plain(et.TestDeleteErrors)},
	{Name: "TestSpatialDelete", Run: plain(et.TestSpatialDelete)},
	{Name: "TestTruncate", Run: plain(et.TestTruncate)},
	{Name: "TestConvert", Run: plain(et.TestConvert)},
	{Name: "TestConvertPrepared", Run: plain(et.TestConvertPrepared)},
	{Name: "TestRowLimit", Run: plain(et.TestRowLimit)},
	{Name: "TestScripts", Run: plain(et.TestScripts)},
	{Name: "TestNumericErrorScripts", Run: plain(et.TestNumericErrorScripts)},
	{Name: "TestSpatialScripts", Run: plain(et.TestSpatialScripts)},
	{Name: "TestSpatialScriptsPrepared", Run: plain(et.TestSpatialScriptsPrepared)},
	{Name: "TestSpatialIndexScripts", Run: plain(et.TestSpatialIndexScripts)},
	{Name: "TestSpatialIndexScriptsPrepared", Run: plain(et.TestSpatialIndexScriptsPrepared)},
	{Name: "TestLoadDataPrepared", Run: plain(et.TestLoadDataPrepared)},
	{Name: "TestScriptsPrepared", Run: plain(et.TestScriptsPrepared)},
	{Name: "TestInsertScriptsPrepared", Run: plain(et.TestInsertScriptsPrepared)},
	{Name: "TestGeneratedColumns", Run: plain(et.TestGeneratedColumns)},
	{Name: "TestGeneratedColumnPlans", Run: plain(et.TestGeneratedColumnPlans)},
	{Name: "TestSysbenchPlans", Run: plain(et.TestSysbenchPlans)},
	{Name: "TestComplexIndexQueriesPrepared", Run: plain(et.TestComplexIndexQueriesPrepared)},
	{Name: "TestCreateCheckConstraintsScriptsPrepared", Run: plain(et.TestCreateCheckConstraintsScriptsPrepared)},
	{Name: "TestInsertIgnoreScriptsPrepared", Run: plain(et.TestInsertIgnoreScriptsPrepared)},
	{Name: "TestInsertErrorScriptsPrepared", Run: plain(et.TestInsertErrorScriptsPrepared)},
	{Name: "TestUserAuthentication", Run: plain(et.TestUserAuthentication)},
	{Name: "TestComplexIndexQueries", Run: plain(et.TestComplexIndexQueries)},
	{Name: "TestTriggers", Run: plain(et.TestTriggers)},
	{Name: "TestRollbackTriggers", Run: plain(et.TestRollbackTriggers)},
	{Name: "TestShowTriggers", Run: plain(et.TestShowTriggers)},
	{Name: "TestStoredProcedures", Run: plain(et.TestStoredProcedures)},
	{Name: "TestEvents", Run: plain(et.TestEvents)},
	{Name: "TestTriggerErrors", Run: plain(et.TestTriggerErrors)},
	{Name: "TestViews", Run: plain(et.TestViews)},
	{Name: "TestRecursiveViewDefinition", Run: plain(et.TestRecursiveViewDefinition)},
	{Name: "TestViewsPrepared", Run: plain(et.TestViewsPrepared)},
	{Name: "TestCreateTable", Run: plain(et.TestCreateTable)},
	{Name: "TestDropTable", Run: plain(et.TestDropTable)},
	{Name: "TestRenameTable", Run: plain(et.TestRenameTable)},
	{Name: "TestRenameColumn", Run: plain(et.TestRenameColumn)},
	{Name: "TestAddColumn", Run: plain(et.TestAddColumn)},
	{Name: "TestModifyColumn", Run: plain(et.TestModifyColumn)},
	{Name: "TestDropColumn", Run: plain(et.TestDropColumn)},
	{Name: "TestDropColumnKeylessTables", Run: plain(et.TestDropColumnKeylessTables)},
	{Name: "TestCreateDatabase", Run: plain(et.TestCreateDatabase)},
	{Name: "TestPkOrdinalsDDL", Run: plain(et.TestPkOrdinalsDDL)},
	{Name: "TestPkOrdinalsDML", Run: plain(et.TestPkOrdinalsDML)},
	{Name: "TestDropDatabase", Run: plain(et.TestDropDatabase)},
	{Name: "TestCreateForeignKeys", Run: plain(et.TestCreateForeignKeys)},
	{Name: "TestDropForeignKeys", Run: plain(et.TestDropForeignKeys)},
	{Name: "TestForeignKeys", Run: plain(et.TestForeignKeys)},
	{Name: "TestFulltextIndexes", Run: plain(et.TestFulltextIndexes)},
	{Name: "TestCreateCheckConstraints", Run: plain(et.TestCreateCheckConstraints)},
	{Name: "TestChecksOnInsert", Run: plain(et.TestChecksOnInsert)},
	{Name: "TestChecksOnUpdate", Run: plain(et.TestChecksOnUpdate)},
	{Name: "TestDisallowedCheckConstraints", Run: plain(et.TestDisallowedCheckConstraints)},
	{Name: "TestDropCheckConstraints", Run: plain(et.TestDropCheckConstraints)},
	{Name: "TestWindowFunctions", Run: plain(et.TestWindowFunctions)},
	{Name: "TestWindowRowFrames", Run: plain(et.TestWindowRowFrames)},
	{Name: "TestWindowRangeFrames", Run: plain(et.TestWindowRangeFrames)},
	{Name: "TestNamedWindows", Run: plain(et.TestNamedWindows)},
	{Name: "TestNaturalJoin", Run: plain(et.TestNaturalJoin)},
	{Name: "TestNaturalJoinEqual", Run: plain(et.TestNaturalJoinEqual)},
	{Name: "TestNaturalJoinDisjoint", Run: plain(et.TestNaturalJoinDisjoint)},
	{Name: "TestInnerNestedInNaturalJoins", Run: plain(et.TestInnerNestedInNaturalJoins)},
	{Name: "TestVariables", Run: plain(et.TestVariables)},
	{Name: "TestPreparedInsert", Run: plain(et.TestPreparedInsert)},
	{Name: "TestPreparedStatements", Run: plain(et.TestPreparedStatements)},
	{Name: "TestShowTableStatus", Run: plain(et.TestShowTableStatus)},
	{Name: "TestDateParse", Run: plain(et.TestDateParse)},
	{Name: "TestShowTableStatusPrepared", Run: plain(et.TestShowTableStatusPrepared)},
	{Name: "TestVariableErrors", Run: plain(et.TestVariableErrors)},
	{Name: "TestWarnings", Run: plain(et.TestWarnings)},
	{Name: "TestClearWarnings", Run: plain(et.TestClearWarnings)},
	{Name: "TestUse", Run: plain(et.TestUse)},
	{Name: "TestConcurrentTransactions", Run: plain(et.TestConcurrentTransactions)},
	{Name: "TestTransactionScripts", Run: plain(et.TestTransactionScripts)},
	{Name: "TestConcurrentProcessList", Run: plain(et.TestConcurrentProcessList)},
	{Name: "TestNoDatabaseSelected", Run: plain(et.TestNoDatabaseSelected)},
	{Name: "TestSessionSelectLimit", Run: plain(et.TestSessionSelectLimit)},
	{Name: "TestTracing", Run: plain(et.TestTracing)},
	{Name: "TestCurrentTimestamp", Run: plain(et.TestCurrentTimestamp)},
	{Name: "TestOnUpdateExprScripts", Run: plain(et.TestOnUpdateExprScripts)},
	{Name: "TestAddDropPks", Run: plain(et.TestAddDropPks)},
	{Name: "TestNullRanges", Run: plain(et.TestNullRanges)},
	{Name: "TestAlterTable", Run: plain(et.TestAlterTable)},
	{Name: "TestColumnDefaults", Run: plain(et.TestColumnDefaults)},
	{Name: "TestPrepared", Run: plain(et.TestPrepared)},
	{Name: "TestCharsetCollationEngine", Run: plain(et.TestCharsetCollationEngine)},
	{Name: "TestPrivilegePersistence", Run: plain(et.TestPrivilegePersistence)},
	{Name: "TestBlobs", Run: plain(et.TestBlobs)},
	{Name: "TestIndexes", Run: plain(et.TestIndexes)},
	{Name: "TestVectorIndexes", Run: plain(et.TestVectorIndexes)},
	{Name: "TestVectorFunctions", Run: plain(et.TestVectorFunctions)},
	{Name: "TestIndexPrefix", Run: plain(et.TestIndexPrefix)},
	{Name: "TestSQLLogicTests", Run: plain(et.TestSQLLogicTests)},
	{Name: "TestJoinPlanning", Run: plain(et.TestJoinPlanning)},
	// Join statistics live in the session: GMS's memory test keeps the
	// set-up scripts' session for this suite.
	{Name: "TestJoinStats", Run: func(t *testing.T, h *Harness) { h.RetainSessionAfterSetup(); et.TestJoinStats(t, h) }},
	{Name: "TestSpatialIndexPlans", Run: plain(et.TestSpatialIndexPlans)},
	{Name: "TestReadOnlyDatabases", Needs: needReadOnly, Run: func(t *testing.T, h *Harness) { et.TestReadOnlyDatabases(t, h) }},
	{Name: "TestQueryPlans", Run: func(t *testing.T, h *Harness) { et.TestQueryPlans(t, h, queries.PlanTests) }},
	{Name: "TestVersionedQueries", Needs: needVersioned, Run: func(t *testing.T, h *Harness) { et.TestVersionedQueries(t, h) }},
	{Name: "TestVersionedQueriesPrepared", Needs: needVersioned, Run: func(t *testing.T, h *Harness) { et.TestVersionedQueriesPrepared(t, h) }},
	{Name: "TestReadOnly", Run: func(t *testing.T, h *Harness) { et.TestReadOnly(t, h, true /* testStoredProcedures */) }},
	{Name: "TestJsonScriptsPrepared", Run: func(t *testing.T, h *Harness) { et.TestJsonScriptsPrepared(t, h, nil) }},
	{Name: "TestUserPrivileges", Run: func(t *testing.T, h *Harness) { et.TestUserPrivileges(t, h) }},
	{Name: "TestVersionedViews", Needs: needVersioned, Run: func(t *testing.T, h *Harness) { et.TestVersionedViews(t, h) }},
	{Name: "TestVersionedViewsPrepared", Needs: needVersioned, Run: func(t *testing.T, h *Harness) { et.TestVersionedViewsPrepared(t, h) }},
	{Name: "TestJsonScripts", Run: func(t *testing.T, h *Harness) { et.TestJsonScripts(t, h, nil) }},
	{Name: "TestPersist", Needs: needPersisting, Run: func(t *testing.T, h *Harness) {
		pb := h.Backend().(PersistingBackend)
		et.TestPersist(t, h, func(ctx *sql.Context) sql.PersistableSession {
			s, err := pb.PersistableSession(ctx)
			if err != nil {
				panic(fmt.Sprintf("enginetest: persistable session: %v", err))
			}
			return s
		})
	}},
	{Name: "TestValidateSession", Needs: needPersisting, Run: func(t *testing.T, h *Harness) {
		pb := h.Backend().(PersistingBackend)
		count := 0
		et.TestValidateSession(t, h, func(ctx *sql.Context) sql.PersistableSession {
			s, err := pb.ValidatingSession(ctx, func() { count++ })
			if err != nil {
				panic(fmt.Sprintf("enginetest: validating session: %v", err))
			}
			return s
		}, &count)
	}},
	{Name: "TestDatabaseCollationWire", Run: func(t *testing.T, h *Harness) { et.TestDatabaseCollationWire(t, h, h.SessionBuilder()) }},
	{Name: "TestCharsetCollationWire", Run: func(t *testing.T, h *Harness) { et.TestCharsetCollationWire(t, h, h.SessionBuilder()) }},
	{Name: "TestTypesOverWire", Run: func(t *testing.T, h *Harness) { et.TestTypesOverWire(t, h, h.SessionBuilder()) }},
	{Name: "TestJoinOps", Run: func(t *testing.T, h *Harness) { et.TestJoinOps(t, h, et.DefaultJoinOpTests) }},
}

// Helpers are the Test* functions of enginetest that run one test they are
// given (a query, a script, a plan) rather than a suite of their own: the
// suites call them, so they are covered, and they are not counted.
var Helpers = []string{
	"TestQueryPlan", "TestQueryPlanWithName", "TestQueryPlanWithEngine",
	"TestScript", "TestScriptWithEngine", "TestScriptPrepared", "TestScriptWithEnginePrepared",
	"TestTransactionScript", "TestTransactionScriptWithEngine",
	"TestQuery", "TestQuery2", "TestQueryWithEngine", "TestQueryWithContext", "TestQueryWithIndexCheck",
	"TestPreparedQuery", "TestPreparedQueryWithEngine", "TestPreparedQueryWithContext",
}
