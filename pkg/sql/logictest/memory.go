package logictest

import (
	"context"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
)

// NewMemory returns GMS's own in-memory backend behind the GMS adapter: the
// reference every runner here is proven against until Augustus' backend
// takes its place. Primary keys are native indexes (as enginetest's
// MemoryHarness sets them), so the analyzer plans indexed access.
func NewMemory() *GMS {
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(true), memory.HistoryProvider(true)).(*memory.DbProvider)
	e := sqle.NewDefault(pro)
	return NewGMS(e, MemorySessions(pro))
}

// MemorySessions makes memory-backend sessions for root@localhost over pro.
func MemorySessions(pro *memory.DbProvider) SessionFactory {
	return func(_ context.Context, connID uint32) (sql.Session, error) {
		base := sql.NewBaseSessionWithClientServer("logictest", sql.Client{Address: "localhost", User: "root"}, connID)
		return memory.NewSession(base, pro), nil
	}
}
