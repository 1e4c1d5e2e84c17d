package transport

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// allowedOwn lists the only Augustus packages this package may depend on
// (doc.go): the message definitions, never the PBFT core or anything above.
var allowedOwn = map[string]bool{
	"github.com/augustus-db/augustus/pkg/bft/bftpb":                 true,
	"github.com/augustus-db/augustus/pkg/bft/transport":             true,
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb": true,
}

func TestTransportImportsOnlyMessageDefinitions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/augustus-db/augustus/") {
			require.True(t, allowedOwn[dep], "transport depends on %s", dep)
		}
		require.False(t, strings.HasPrefix(dep, "github.com/cockroachdb/pebble"), "transport depends on %s", dep)
	}
}
