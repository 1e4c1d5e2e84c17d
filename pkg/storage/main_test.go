package storage

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The SIGKILL crash test re-executes this binary as a writer process.
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(runCrashChild(dir))
	}
	os.Exit(m.Run())
}
