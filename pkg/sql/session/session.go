package session

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// Store runs short transactions: a *coord.Client, shared by every session
// of the process (one nonce sequence, W3; its envelopes batch the calls of
// all sessions, DESIGN.md §3.1).
type Store interface {
	Do(ctx context.Context, ops coord.OpSource, opts coord.Options) (*coord.Result, error)
}

// Env is what the sessions of one front-end share.
type Env struct {
	Store Store
	// Limits are the replicas' transaction limits (txn.DefaultLimits()
	// unless the cluster says otherwise): a transaction the session would
	// build beyond them fails with a clear error instead of a refusal.
	Limits txn.Limits
	// FirstChunk is the first read-range chunk of a scan (default 256
	// entries); each further chunk doubles, up to Limits.MaxRangeLimit.
	FirstChunk int
	// Stats counts what the sessions send.
	Stats Stats
}

// Stats are counters of the transactions sessions send, by purpose.
type Stats struct {
	ReadTxns, GuardTxns, CommitTxns, Conflicts atomic.Int64
}

func (e *Env) limits() txn.Limits {
	if e.Limits == (txn.Limits{}) {
		return txn.DefaultLimits()
	}
	return e.Limits
}

func (e *Env) firstChunk() int {
	if e.FirstChunk > 0 {
		return e.FirstChunk
	}
	return 256
}

// Flags describe the statement running now, as the statement runner parsed
// it (GMS does not tell the backend).
type Flags struct {
	// SyncDuplicates: INSERT IGNORE or INSERT ... ON DUPLICATE KEY UPDATE:
	// an inserted key is read at once, so a duplicate is known to GMS while
	// the statement runs. Without it an insert of a key not read before is
	// blind: the duplicate shows at commit as 1062 (one transaction per
	// INSERT, DESIGN.md §6).
	SyncDuplicates bool
	// Placement: the placement spec of a CREATE TABLE's PARTITION BY
	// clause, which GMS drops before the backend sees the table (the
	// backend's placement spec syntax).
	Placement string
	// Truncate: the statement is TRUNCATE TABLE. GMS also turns DELETE
	// without WHERE into a truncate; that one must stay an ordinary
	// transactional delete.
	Truncate bool
}

// Session is a GMS session whose transactions follow the BFT Derby model
// (DESIGN.md §6). It embeds GMS's BaseSession for variables, the current
// database and warnings, and owns its SQL transaction, as dolt's dsess does.
type Session struct {
	*sql.BaseSession
	env   *Env
	flags Flags
	// ddl is the schema change the running statement staged (committed
	// with the statement, dropped with it).
	ddl DDL
	// stale is set when a transaction of this session met a stale-metadata
	// abort: the metadata version it saw (the runner reloads past it).
	stale atomic.Uint64
}

var (
	_ sql.Session            = (*Session)(nil)
	_ sql.TransactionSession = (*Session)(nil)
)

// New returns a session over env.
func New(base *sql.BaseSession, env *Env) *Session {
	return &Session{BaseSession: base, env: env}
}

// FromContext returns the session of ctx, if it is one of ours.
func FromContext(ctx *sql.Context) (*Session, bool) {
	s, ok := ctx.Session.(*Session)
	return s, ok
}

// Env returns the session's environment.
func (s *Session) Env() *Env { return s.env }

// SetFlags sets the flags of the statement about to run.
func (s *Session) SetFlags(f Flags) { s.flags = f }

// Flags returns the flags of the statement running.
func (s *Session) Flags() Flags { return s.flags }

// DDL is a schema change a DDL statement stages (the backend's): GMS
// commits a DDL statement implicitly when it ends, and CommitTransaction
// then commits the staged change, so every schema change of one statement
// goes in ONE metadata transaction, and a statement that fails leaves
// nothing applied.
type DDL interface {
	Commit(ctx *sql.Context) error
}

// DDL returns the staged schema change, if any.
func (s *Session) DDL() DDL { return s.ddl }

// SetDDL stages a schema change (nil drops it).
func (s *Session) SetDDL(d DDL) { s.ddl = d }

// TakeStale returns and clears the metadata version a stale abort showed
// (0: none).
func (s *Session) TakeStale() uint64 { return s.stale.Swap(0) }

// StartTransaction implements sql.TransactionSession. It sends nothing: GMS
// starts a transaction before every statement that runs outside one, and
// drops it on errors without calling Rollback (gms-notes §2), so a
// transaction exists only in memory until it reads or commits, and one
// dropped is simply forgotten — nothing was sent that needs undoing.
func (s *Session) StartTransaction(ctx *sql.Context, tc sql.TransactionCharacteristic) (sql.Transaction, error) {
	ro := tc == sql.ReadOnly
	if !ro {
		// SET [SESSION] TRANSACTION READ ONLY: every transaction of the
		// session is read-only.
		if v, err := s.GetSessionVariable(ctx, "transaction_read_only"); err == nil {
			if b, err := sql.ConvertToBool(ctx, v); err == nil && b {
				ro = true
			}
		}
	}
	return newTxn(s, ro), nil
}

// CommitTransaction implements sql.TransactionSession: one update
// transaction guarded by what the SQL transaction read (commit.go).
func (s *Session) CommitTransaction(ctx *sql.Context, tx sql.Transaction) error {
	t, ok := tx.(*Txn)
	if !ok || t.s != s {
		return internal("commit of a transaction of another session")
	}
	if err := t.commit(ctx); err != nil {
		s.ddl = nil
		return err
	}
	if d := s.ddl; d != nil {
		s.ddl = nil
		return d.Commit(ctx)
	}
	return nil
}

// Rollback implements sql.TransactionSession: the buffered writes are
// dropped; nothing was sent.
func (s *Session) Rollback(ctx *sql.Context, tx sql.Transaction) error {
	if t, ok := tx.(*Txn); ok {
		t.rollback()
	}
	s.ddl = nil
	return nil
}

// CreateSavepoint implements sql.TransactionSession.
func (s *Session) CreateSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	t, ok := tx.(*Txn)
	if !ok {
		return internal("savepoint on a foreign transaction")
	}
	t.savepoints = append(removeSavepoint(t.savepoints, name), savepoint{name: strings.ToLower(name), undo: len(t.undo)})
	return nil
}

// RollbackToSavepoint implements sql.TransactionSession: the writes since
// the savepoint are undone (reads stay: they remain guards).
func (s *Session) RollbackToSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	t, ok := tx.(*Txn)
	if !ok {
		return internal("savepoint on a foreign transaction")
	}
	for i := len(t.savepoints) - 1; i >= 0; i-- {
		if t.savepoints[i].name == strings.ToLower(name) {
			t.undoTo(t.savepoints[i].undo)
			t.savepoints = t.savepoints[:i+1]
			return nil
		}
	}
	return sql.ErrSavepointDoesNotExist.New(name)
}

// ReleaseSavepoint implements sql.TransactionSession.
func (s *Session) ReleaseSavepoint(ctx *sql.Context, tx sql.Transaction, name string) error {
	t, ok := tx.(*Txn)
	if !ok {
		return internal("savepoint on a foreign transaction")
	}
	n := len(t.savepoints)
	t.savepoints = removeSavepoint(t.savepoints, name)
	if len(t.savepoints) == n {
		return sql.ErrSavepointDoesNotExist.New(name)
	}
	return nil
}

type savepoint struct {
	name string
	undo int
}

func removeSavepoint(sps []savepoint, name string) []savepoint {
	name = strings.ToLower(name)
	for i := range sps {
		if sps[i].name == name {
			return sps[:i]
		}
	}
	return sps
}
