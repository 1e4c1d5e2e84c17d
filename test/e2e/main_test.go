package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// binary is the augustus binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "augustus-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(tmp)
	binary = filepath.Join(tmp, "augustus")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	start := time.Now()
	cmd := exec.Command(goTool, "build", "-o", binary, "github.com/augustus-db/augustus/cmd/augustus")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build augustus: %v\n%s", err, out)
		return 2
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", binary, time.Since(start).Round(time.Millisecond))
	}
	return m.Run()
}

// skipInShort skips the tests that `make test` leaves to `make e2e`.
func skipInShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("process-level fault test: runs in make e2e, not in the short suite")
	}
}

// runAugustus runs the binary to completion within timeout.
func runAugustus(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("augustus %s did not finish within %s:\n%s", strings.Join(args, " "), timeout, out.String())
		return "", nil
	}
}
