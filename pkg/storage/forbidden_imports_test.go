package storage

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImportsNothingOfOurs enforces DESIGN.md §2: pkg/storage is the bottom
// layer and imports no other Augustus package, directly or indirectly.
func TestImportsNothingOfOurs(t *testing.T) {
	const module = "github.com/augustus-db/augustus/"
	const self = module + "pkg/storage"
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module) && dep != self {
			t.Errorf("pkg/storage depends on %s", dep)
		}
	}
}
