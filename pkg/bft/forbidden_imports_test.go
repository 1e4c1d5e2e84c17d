package bft_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoIOClockOrRandomness keeps the core a deterministic state
// machine (DESIGN.md §2): pkg/bft and its internal packages import no
// network, storage, metrics, clock or randomness themselves, and nothing of
// ours but bftpb and bft/internal. (The protobuf runtime underneath bftpb
// uses the standard library freely; the rule is about what the core reaches
// for.)
func TestCoreImportsNoIOClockOrRandomness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	forbidden := []string{"net", "net/http", "os", "os/exec", "time", "math/rand", "math/rand/v2", "crypto/rand", "sync", "syscall", "log", "log/slog"}
	for _, pkg := range []string{".", "./internal/..."} {
		out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, imports, _ := strings.Cut(line, ": ")
			for _, imp := range strings.Fields(imports) {
				for _, f := range forbidden {
					if imp == f {
						t.Errorf("%s imports %s", name, imp)
					}
				}
				if strings.HasPrefix(imp, "github.com/augustus-db/augustus/") &&
					imp != "github.com/augustus-db/augustus/pkg/bft/bftpb" &&
					!strings.HasPrefix(imp, "github.com/augustus-db/augustus/pkg/bft/internal/") {
					t.Errorf("%s imports %s", name, imp)
				}
				if strings.Contains(imp, "grpc") || strings.Contains(imp, "pebble") || strings.Contains(imp, "prometheus") {
					t.Errorf("%s imports %s", name, imp)
				}
			}
		}
	}
}
