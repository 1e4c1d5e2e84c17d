package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/augustus-db/augustus/"

// rule says what one package (and, with deps, everything it pulls in) may
// not depend on.
type rule struct {
	pkg string
	// ownAllowed, if set, lists the only packages of this module the package
	// may depend on (transitively); otherwise forbid is checked.
	ownAllowed []string
	// forbid lists prefixes no transitive dependency may have.
	forbid []string
	// forbidDirect lists packages the package may not import itself (the
	// core may not reach for I/O, clocks or randomness; the protobuf runtime
	// underneath it may).
	forbidDirect []string
}

var (
	// sqlForbid is what no SQL package may depend on.
	sqlForbid = []string{module + "pkg/bft/replica", module + "pkg/bft/host",
		module + "pkg/storage", module + "pkg/txn/partition", module + "pkg/txn/lockmgr", "github.com/cockroachdb/pebble"}
	external = []string{"google.golang.org/grpc", "github.com/cockroachdb/pebble", "github.com/prometheus/"}
	rules    = []rule{
		// The one back-off algorithm (gRPC's), shared by the transport and
		// the process supervisor: nothing of ours.
		{pkg: "internal/backoff", ownAllowed: []string{"internal/backoff"}},
		// storage is the bottom layer: nothing of ours.
		{pkg: "pkg/storage", ownAllowed: []string{"pkg/storage", "internal/invariants"}},
		// The PBFT core: a deterministic state machine (DESIGN.md §2, §3).
		{pkg: "pkg/bft", ownAllowed: []string{"pkg/bft", "pkg/bft/bftpb", "pkg/bft/internal/quorum", "internal/invariants"},
			forbid: external,
			forbidDirect: []string{"net", "net/http", "os", "os/exec", "time", "math/rand", "math/rand/v2",
				"crypto/rand", "sync", "syscall", "log", "log/slog"}},
		{pkg: "pkg/bft/internal/quorum", ownAllowed: []string{"pkg/bft/internal/quorum"}},
		// The assertion helper (DESIGN.md §9) is a leaf: every package may use it.
		{pkg: "internal/invariants", ownAllowed: []string{"internal/invariants"}, forbid: external},
		{pkg: "pkg/bft/envelope", ownAllowed: []string{"pkg/bft/envelope"}},
		// The transport moves bytes: no protocol logic, no storage.
		{pkg: "pkg/bft/transport", ownAllowed: []string{"internal/backoff", "pkg/bft/bftpb", "pkg/bft/transport", "pkg/bft/transport/transportpb"},
			forbid: []string{"github.com/cockroachdb/pebble"}},
		// Keys and the cluster file: no network, storage or metrics.
		{pkg: "pkg/bft/auth", forbid: append([]string{module + "pkg/bft/transport", module + "pkg/bft/replica",
			module + "pkg/bft/client", module + "pkg/bft/cluster", module + "pkg/storage", module + "pkg/txn", module + "pkg/sql"}, external...)},
		{pkg: "pkg/bft/cluster", forbid: append([]string{module + "pkg/bft/transport", module + "pkg/bft/replica",
			module + "pkg/bft/client", module + "pkg/storage", module + "pkg/txn", module + "pkg/sql"}, external...)},
		// The group client talks to replicas; it never touches a store.
		{pkg: "pkg/bft/client", forbid: []string{module + "pkg/bft/replica", module + "pkg/storage", "github.com/cockroachdb/pebble"}},
		// The replica runtime knows nothing of transactions or SQL.
		{pkg: "pkg/bft/replica", forbid: []string{module + "pkg/txn", module + "pkg/sql"}},
		// The event loop shared by production and simulation: no network
		// code, no goroutines of its own, no wall clock (a Clock is injected).
		{pkg: "pkg/bft/host", forbid: []string{module + "pkg/txn", module + "pkg/sql", module + "pkg/bft/transport", "google.golang.org/grpc"},
			forbidDirect: []string{"net", "net/http", "os", "os/exec", "math/rand", "math/rand/v2", "crypto/rand"}},
		// Transactions never reach up into SQL.
		{pkg: "pkg/txn", forbid: []string{module + "pkg/sql"}},
		// The lock table: deterministic, standard library only (its doc.go).
		{pkg: "pkg/txn/lockmgr", ownAllowed: []string{"pkg/txn/lockmgr"}, forbid: external,
			forbidDirect: []string{"net", "os", "time", "math/rand", "math/rand/v2", "crypto/rand", "sync", "unsafe", "log", "log/slog"}},
		// The history model and its checkers are imported by the transaction
		// simulator and by process-level tests: they import nothing else of ours.
		{pkg: "pkg/txn/txntest/history", ownAllowed: []string{"pkg/txn/txntest/history"}},
		{pkg: "pkg/txn/txntest/elle", ownAllowed: []string{"pkg/txn/txntest/elle", "pkg/txn/txntest/history"}},
		{pkg: "pkg/txn/txntest/linear", ownAllowed: []string{"pkg/txn/txntest/linear", "pkg/txn/txntest/history"}},
		// The public transaction types are shared by clients and replicas:
		// no storage, network, runtime or metrics.
		{pkg: "pkg/txn", forbid: append([]string{module + "pkg/storage", module + "pkg/bft/replica",
			module + "pkg/bft/client", module + "pkg/bft/transport", module + "pkg/txn/partition", module + "pkg/txn/oracle",
			module + "pkg/txn/coord", module + "pkg/txn/lockmgr"}, external...)},
		{pkg: "pkg/txn/oracle", forbid: append([]string{module + "pkg/storage", module + "pkg/bft/replica",
			module + "pkg/bft/client", module + "pkg/bft/transport", module + "pkg/txn/partition"}, external...)},
		// The state machine runs inside the replica's event loop (it imports
		// pkg/bft/host for Call, Reader and the Application interface): it
		// never talks to the network or to other groups itself, and reads no
		// clock or randomness.
		// The client library talks to groups only through the group client:
		// never the replica runtime, the engine, storage or SQL. Its core's
		// determinism (no goroutines, clock or randomness but a seed) is
		// checked in the package itself (purity_test.go): the production
		// Client lives beside it.
		{pkg: "pkg/txn/coord", forbid: []string{module + "pkg/bft/replica", module + "pkg/bft/host",
			module + "pkg/txn/partition", module + "pkg/txn/lockmgr", module + "pkg/storage", module + "pkg/sql",
			"github.com/cockroachdb/pebble"}},
		// The SQL layer talks to the transaction client only (DESIGN.md §2,
		// §6): never the replica runtime, the engine, storage, the lock
		// table (the client reaches the transport through pkg/bft/client).
		{pkg: "pkg/sql/rowenc", ownAllowed: []string{"pkg/sql/rowenc"}},
		{pkg: "pkg/sql/catalog", forbid: sqlForbid},
		{pkg: "pkg/sql/session", forbid: append([]string{module + "pkg/sql/backend", module + "pkg/sql/catalog",
			module + "pkg/sql/engine"}, sqlForbid...)},
		{pkg: "pkg/sql/backend", forbid: append([]string{module + "pkg/sql/engine"}, sqlForbid...)},
		{pkg: "pkg/sql/engine", forbid: sqlForbid},
		{pkg: "pkg/txn/partition", forbid: []string{module + "pkg/bft/client", module + "pkg/bft/transport",
			module + "pkg/bft/replica", module + "pkg/sql", "google.golang.org/grpc"},
			forbidDirect: []string{"net", "net/http", "os", "time", "math/rand", "math/rand/v2", "crypto/rand"}},
	}
)

func goList(t *testing.T, format, pkg string, deps bool) []string {
	t.Helper()
	args := []string{"list", "-f", format}
	if deps {
		args = append(args, "-deps")
	}
	out, err := exec.Command("go", append(args, module+pkg)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

// TestPackagesKeepTheLayering checks every rule above with go list, as
// pebble's forbidden-imports test does.
func TestPackagesKeepTheLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list for every package")
	}
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			for _, dep := range goList(t, "{{.ImportPath}}", r.pkg, true) {
				if r.ownAllowed != nil && strings.HasPrefix(dep, module) {
					ok := false
					for _, a := range r.ownAllowed {
						ok = ok || dep == module+a
					}
					if !ok {
						t.Errorf("%s depends on %s", r.pkg, dep)
					}
				}
				for _, f := range r.forbid {
					if strings.HasPrefix(dep, f) {
						t.Errorf("%s depends on %s", r.pkg, dep)
					}
				}
			}
			for _, imp := range goList(t, `{{join .Imports " "}}`, r.pkg, false) {
				for _, f := range r.forbidDirect {
					if imp == f {
						t.Errorf("%s imports %s", r.pkg, imp)
					}
				}
			}
		})
	}
}
