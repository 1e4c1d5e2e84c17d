package auth

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forbiddenDeps lists what this package must not depend on (doc.go): the
// network, storage and metrics layers, and the packages built on it.
var forbiddenDeps = []string{
	"google.golang.org/grpc",
	"github.com/prometheus/",
	"github.com/cockroachdb/pebble",
	"github.com/augustus-db/augustus/pkg/bft/transport",
	"github.com/augustus-db/augustus/pkg/bft/replica",
	"github.com/augustus-db/augustus/pkg/bft/client",
	"github.com/augustus-db/augustus/pkg/bft/cluster",
	"github.com/augustus-db/augustus/pkg/storage",
	"github.com/augustus-db/augustus/pkg/txn",
	"github.com/augustus-db/augustus/pkg/sql",
}

func TestAuthImportsNoForbiddenPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range forbiddenDeps {
			require.False(t, strings.HasPrefix(dep, bad), "auth depends on %s", dep)
		}
	}
}
