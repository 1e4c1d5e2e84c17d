package session

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/sql/internal/memstore"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

type fixture struct {
	t     *testing.T
	store *memstore.Store
	env   *Env
	sess  *Session
	ctx   *sql.Context
	pmap  *oracle.Map
}

func newFixture(t *testing.T, groups int) *fixture {
	st := memstore.New(groups)
	env := &Env{Store: st, FirstChunk: 2}
	s := New(sql.NewBaseSession(), env)
	ctx := sql.NewContext(context.Background(), sql.WithSession(s))
	res, err := st.Do(ctx, txnOps(txn.Op{Kind: txn.OpRead, Meta: true, Key: txn.MetaPartitionsKey}), optsNone)
	require.NoError(t, err)
	m, err := oracle.Decode(res.Ops[0].Value)
	require.NoError(t, err)
	return &fixture{t: t, store: st, env: env, sess: s, ctx: ctx, pmap: m}
}

func (f *fixture) begin(ro bool) *Txn {
	tc := sql.ReadWrite
	if ro {
		tc = sql.ReadOnly
	}
	tx, err := f.sess.StartTransaction(f.ctx, tc)
	require.NoError(f.t, err)
	t := tx.(*Txn)
	require.NoError(f.t, t.Pin(0, f.pmap))
	return t
}

func (f *fixture) put(k, v string) { f.store.Put([]byte(k), []byte(v)) }

func k(s string) []byte { return []byte(s) }

func sqlErrNum(err error) int {
	if se := AsSQLError(err); se != nil {
		return se.Num
	}
	return 0
}

// DESIGN.md §6: StartTransaction sends nothing, and a transaction that read
// nothing and wrote nothing commits without a round trip.
func TestStartTransactionIsLazy(t *testing.T) {
	f := newFixture(t, 1)
	n := f.store.Count()
	tx := f.begin(false)
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	require.Equal(t, n, f.store.Count())
}

// DESIGN.md §6: reads are cached for the SQL transaction: a key read again,
// or a key inside a range read before, costs nothing.
func TestReadsAreCachedForTheTransaction(t *testing.T) {
	f := newFixture(t, 2)
	f.put("\xf5a", "1")
	f.put("\xf5b", "2")
	tx := f.begin(false)
	n := f.store.Count()
	v, ok, err := tx.Get(f.ctx, k("\xf5a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", string(v))
	f.put("\xf5a", "changed")
	v, _, err = tx.Get(f.ctx, k("\xf5a"))
	require.NoError(t, err)
	require.Equal(t, "1", string(v), "repeatable within the transaction")
	require.Equal(t, n+1, f.store.Count())

	sc := tx.Scan(k("\xf5b"), k("\xf5z"))
	var got []string
	for {
		kv, ok, err := sc.Next(f.ctx)
		require.NoError(t, err)
		if !ok {
			break
		}
		got = append(got, string(kv.Key))
	}
	require.Equal(t, []string{"\xf5b"}, got)
	m := f.store.Count()
	_, ok, err = tx.Get(f.ctx, k("\xf5c"))
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, m, f.store.Count(), "a key inside a range read is answered from it")

	res, err := tx.GetMany(f.ctx, [][]byte{k("\xf5a"), k("\xf5x"), k("\xf5y"), k("\xf5x")})
	require.NoError(t, err)
	require.True(t, res[0].Present)
	require.False(t, res[1].Present)
	require.Equal(t, m, f.store.Count(), "all known")
	res, err = tx.GetMany(f.ctx, [][]byte{k("\xf5\x01"), k("\xf5\x02")})
	require.NoError(t, err)
	require.Equal(t, m+1, f.store.Count(), "unknown keys in one transaction")
	require.Len(t, f.store.Since(m)[0], 2)
}

// DESIGN.md §6: reads see the transaction's own buffered writes, point
// reads and scans alike.
func TestReadsSeeTheTransactionsOwnWrites(t *testing.T) {
	f := newFixture(t, 1)
	for _, key := range []string{"\xf5a", "\xf5c", "\xf5e"} {
		f.put(key, "old")
	}
	tx := f.begin(false)
	_, _, err := tx.Get(f.ctx, k("\xf5c"))
	require.NoError(t, err)
	require.NoError(t, tx.Insert(k("\xf5b"), k("new"), &Dup{"b", "t.PRIMARY"}))
	require.NoError(t, tx.Update(k("\xf5c"), k("upd")))
	require.NoError(t, tx.Remove(k("\xf5e")))
	v, ok, err := tx.Get(f.ctx, k("\xf5b"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "new", string(v))
	sc := tx.Scan(k("\xf5"), k("\xf6"))
	var got []string
	for {
		kv, ok, err := sc.Next(f.ctx)
		require.NoError(t, err)
		if !ok {
			break
		}
		got = append(got, string(kv.Key[1:])+"="+string(kv.Value))
	}
	require.Equal(t, []string{"a=old", "b=new", "c=upd"}, got)
	require.Equal(t, 2, sc.Chunks(), "chunks of 2, then 4")
	// Nothing is in the store before COMMIT.
	_, ok = f.store.Value(k("\xf5b"))
	require.False(t, ok)
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	v, _ = f.store.Value(k("\xf5c"))
	require.Equal(t, "upd", string(v))
	_, ok = f.store.Value(k("\xf5e"))
	require.False(t, ok)
}

// DESIGN.md §6: COMMIT sends one transaction guarded by a cmp on every
// value read, a cmp absent on every key read as missing, a cmp-range on
// every range read; a concurrent change to anything read fails it with
// 1213 and nothing is applied.
func TestCommitGuardsEverythingRead(t *testing.T) {
	for _, change := range []string{"", "\xf5a", "\xf5m", "\xf5q"} {
		t.Run("change="+change, func(t *testing.T) {
			f := newFixture(t, 2)
			f.put("\xf5a", "1")
			f.put("\xf5r", "r")
			tx := f.begin(false)
			_, _, err := tx.Get(f.ctx, k("\xf5a"))
			require.NoError(t, err)
			_, _, err = tx.Get(f.ctx, k("\xf5m")) // absent
			require.NoError(t, err)
			sc := tx.Scan(k("\xf5p"), k("\xf5s"))
			for {
				_, ok, err := sc.Next(f.ctx)
				require.NoError(t, err)
				if !ok {
					break
				}
			}
			require.NoError(t, tx.Insert(k("\xf5new"), k("v"), &Dup{"new", "t.PRIMARY"}))
			if change != "" {
				f.put(change, "concurrent")
			}
			n := f.store.Count()
			err = f.sess.CommitTransaction(f.ctx, tx)
			sent := f.store.Since(n)
			require.Len(t, sent, 1, "one commit transaction")
			kinds := map[txn.OpKind]int{}
			for _, op := range sent[0] {
				kinds[op.Kind]++
				if op.Kind == txn.OpCmp && op.Absent {
					require.Equal(t, "\xf5m", string(op.Key))
				}
			}
			require.Equal(t, map[txn.OpKind]int{txn.OpCmp: 2, txn.OpCmpRange: 1, txn.OpInsert: 1}, kinds)
			if change == "" {
				require.NoError(t, err)
				_, ok := f.store.Value(k("\xf5new"))
				require.True(t, ok)
				return
			}
			require.Equal(t, mysql.ERLockDeadlock, sqlErrNum(err), "%v", err)
			require.True(t, IsRetryable(err))
			_, ok := f.store.Value(k("\xf5new"))
			require.False(t, ok, "nothing applied")
		})
	}
}

// DESIGN.md §6: a transaction that only read sends its guards at COMMIT —
// unless all its reads came from one short transaction.
func TestReadOnlyTransactionGuardsOnlyWhenItReadTwice(t *testing.T) {
	f := newFixture(t, 1)
	f.put("\xf5a", "1")
	tx := f.begin(false)
	_, _, err := tx.Get(f.ctx, k("\xf5a"))
	require.NoError(t, err)
	n := f.store.Count()
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	require.Equal(t, n, f.store.Count(), "one read: nothing more")

	tx = f.begin(false)
	_, _, err = tx.Get(f.ctx, k("\xf5a"))
	require.NoError(t, err)
	_, _, err = tx.Get(f.ctx, k("\xf5b"))
	require.NoError(t, err)
	f.put("\xf5b", "appeared") // write skew would follow from trusting both reads
	n = f.store.Count()
	err = f.sess.CommitTransaction(f.ctx, tx)
	require.Equal(t, n+1, f.store.Count(), "a cmp-only transaction")
	for _, op := range f.store.Since(n)[0] {
		require.Equal(t, txn.OpCmp, op.Kind)
	}
	require.Equal(t, mysql.ERLockDeadlock, sqlErrNum(err))
}

// A scan of several chunks is guarded by cmp-range over the chunks it read
// (merged into one span); more entries than a cmp-range may hold split it.
func TestMultiChunkScanIsGuardedAtCommit(t *testing.T) {
	f := newFixture(t, 2)
	for _, c := range "abcdefghij" {
		f.put("\xf5"+string(c), string(c))
	}
	f.env.Limits = txn.DefaultLimits()
	f.env.Limits.MaxRangeLimit = 4
	tx := f.begin(false)
	sc := tx.Scan(k("\xf5"), k("\xf6"))
	n := 0
	for {
		_, ok, err := sc.Next(f.ctx)
		require.NoError(t, err)
		if !ok {
			break
		}
		n++
	}
	require.Equal(t, 10, n)
	require.Equal(t, 4, sc.Chunks(), "2, 4, 4 entries then the empty rest")
	before := f.store.Count()
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	sent := f.store.Since(before)
	require.Len(t, sent, 1)
	require.Len(t, sent[0], 3, "10 entries in cmp-ranges of at most 4")
	for _, op := range sent[0] {
		require.Equal(t, txn.OpCmpRange, op.Kind)
	}
}

func TestReadOnlyTransactionRefusesWrites(t *testing.T) {
	f := newFixture(t, 1)
	tx := f.begin(true)
	require.True(t, tx.IsReadOnly())
	err := tx.Insert(k("\xf5a"), k("v"), &Dup{"a", "t.PRIMARY"})
	require.Equal(t, 1792, sqlErrNum(err))
	require.Equal(t, "25006", AsSQLError(err).State)
	require.ErrorContains(t, tx.Remove(k("\xf5a")), "READ ONLY")
}

// A blind insert of a key that exists is a 1062 at commit, and nothing of
// the transaction is applied; an insert of a key the transaction read as
// present is a 1062 at once.
func TestDuplicateKeysAre1062AndApplyNothing(t *testing.T) {
	f := newFixture(t, 1)
	f.put("\xf5dup", "x")
	tx := f.begin(false)
	require.NoError(t, tx.Insert(k("\xf5ok"), k("v"), &Dup{"ok", "t.PRIMARY"}))
	require.NoError(t, tx.Insert(k("\xf5dup"), k("v"), &Dup{"7", "t.PRIMARY"}))
	err := f.sess.CommitTransaction(f.ctx, tx)
	require.Equal(t, mysql.ERDupEntry, sqlErrNum(err))
	require.Contains(t, err.Error(), "Duplicate entry '7' for key 't.PRIMARY'")
	_, ok := f.store.Value(k("\xf5ok"))
	require.False(t, ok)

	tx = f.begin(false)
	_, _, err = tx.Get(f.ctx, k("\xf5dup"))
	require.NoError(t, err)
	err = tx.Insert(k("\xf5dup"), k("v"), &Dup{"7", "t.PRIMARY"})
	require.Equal(t, mysql.ERDupEntry, sqlErrNum(err))

	// Inserted and deleted again: still asserted new.
	tx = f.begin(false)
	require.NoError(t, tx.Insert(k("\xf5dup"), k("v"), &Dup{"7", "t.PRIMARY"}))
	require.NoError(t, tx.Remove(k("\xf5dup")))
	err = f.sess.CommitTransaction(f.ctx, tx)
	require.Equal(t, mysql.ERDupEntry, sqlErrNum(err))
}

// GMS's statement calls: a failed statement discards its own writes only;
// the runner's marks do the same for any statement.
func TestStatementDiscardKeepsEarlierWrites(t *testing.T) {
	f := newFixture(t, 1)
	tx := f.begin(false)
	tx.StatementBegin()
	require.NoError(t, tx.Insert(k("\xf5a"), k("1"), nil))
	tx.StatementComplete()
	tx.StatementBegin()
	require.NoError(t, tx.Insert(k("\xf5b"), k("2"), nil))
	require.NoError(t, tx.Update(k("\xf5a"), k("changed")))
	tx.StatementDiscard()
	mark := tx.Mark()
	require.NoError(t, tx.Insert(k("\xf5c"), k("3"), nil))
	tx.UndoTo(mark)
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	v, ok := f.store.Value(k("\xf5a"))
	require.True(t, ok)
	require.Equal(t, "1", string(v))
	_, ok = f.store.Value(k("\xf5b"))
	require.False(t, ok)
	_, ok = f.store.Value(k("\xf5c"))
	require.False(t, ok)
}

func TestSavepoints(t *testing.T) {
	f := newFixture(t, 1)
	tx := f.begin(false)
	require.NoError(t, tx.Insert(k("\xf5a"), k("1"), nil))
	require.NoError(t, f.sess.CreateSavepoint(f.ctx, tx, "sp"))
	require.NoError(t, tx.Insert(k("\xf5b"), k("2"), nil))
	require.NoError(t, f.sess.RollbackToSavepoint(f.ctx, tx, "SP"))
	require.Error(t, f.sess.ReleaseSavepoint(f.ctx, tx, "nope"))
	require.NoError(t, f.sess.CommitTransaction(f.ctx, tx))
	_, ok := f.store.Value(k("\xf5a"))
	require.True(t, ok)
	_, ok = f.store.Value(k("\xf5b"))
	require.False(t, ok)
}

// M2: a transaction pinned to one catalog version that meets a table of
// another fails as a schema change; a stale abort from the store does too,
// and the session remembers the version it saw for the runner's reload.
func TestSchemaChangesFailTheTransaction(t *testing.T) {
	f := newFixture(t, 1)
	tx := f.begin(false)
	require.ErrorIs(t, tx.Pin(1, f.pmap), ErrSchemaChanged)
	require.Equal(t, uint64(1), f.sess.TakeStale())

	tx = f.begin(false)
	f.store.FailNext(txn.ReasonStaleMetadata)
	_, _, err := tx.Get(f.ctx, k("\xf5a"))
	require.ErrorIs(t, err, ErrSchemaChanged)
	require.True(t, IsRetryable(err))
	require.Equal(t, mysql.ERLockDeadlock, sqlErrNum(err))

	f.store.FailNext(txn.ReasonConflict)
	tx = f.begin(false)
	_, _, err = tx.Get(f.ctx, k("\xf5a"))
	require.Equal(t, mysql.ERLockDeadlock, sqlErrNum(err))
}

// A row or key over the limits fails at once with a message saying what to
// change; a commit over the operation limit too, before anything is sent.
func TestLimitsGiveClearErrors(t *testing.T) {
	f := newFixture(t, 1)
	f.env.Limits = txn.DefaultLimits()
	f.env.Limits.MaxValueBytes = 10
	f.env.Limits.MaxOps = 3
	tx := f.begin(false)
	err := tx.Insert(k("\xf5a"), make([]byte, 11), nil)
	require.ErrorContains(t, err, "Row size too large")
	for _, c := range "abcd" {
		require.NoError(t, tx.Insert(k("\xf5"+string(c)), k("v"), nil))
	}
	n := f.store.Count()
	err = f.sess.CommitTransaction(f.ctx, tx)
	require.ErrorContains(t, err, "Transaction too large")
	require.ErrorContains(t, err, "fewer rows")
	require.Equal(t, n, f.store.Count())
}

var optsNone = coordOptions()
