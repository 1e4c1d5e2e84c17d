package coord

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The core is a deterministic state machine (DESIGN.md §2, §8): the
// transaction simulator runs it exactly as production does, so its files
// start no goroutine, use no channel or lock, read no clock (Env.Now) and
// draw no randomness but Config.Seed's. Only client.go, the production host,
// may. This test reads the source to keep it so.
func TestCoreFilesAreDeterministic(t *testing.T) {
	forbiddenImports := map[string]bool{
		"sync": true, "sync/atomic": true, "os": true, "net": true, "crypto/rand": true,
		"math/rand": true, "log": true, "context": true,
	}
	forbiddenTime := map[string]bool{
		"Now": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true,
		"NewTicker": true, "Tick": true, "Since": true, "Until": true,
	}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "client.go" {
			continue
		}
		checked++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[p] {
				t.Errorf("%s imports %s", fset.Position(imp.Pos()), p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine in the core", fset.Position(n.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: a channel in the core", fset.Position(n.Pos()))
			case *ast.SelectStmt:
				t.Errorf("%s: a select in the core", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && forbiddenTime[n.Sel.Name] {
					t.Errorf("%s: time.%s in the core (use Env)", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
	require.Greater(t, checked, 8)
}
