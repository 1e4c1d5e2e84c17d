package logictest_test

import (
	"testing"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// TestDataDrivenMemory runs the example SQL logic tests (testdata/logic)
// against GMS's memory backend, a fresh engine per file.
func TestDataDrivenMemory(t *testing.T) {
	logictest.RunDataDriven(t, logictest.ExamplesDir(), func(t *testing.T) logictest.Engine {
		return logictest.NewMemory()
	}, logictest.DataDrivenOptions{EngineTags: []string{"memory", "gms"}})
}
