package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/txn/txntest/elle"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// bankInitial is every account's opening balance.
const bankInitial = 100

// sqlBank is a bank over SQL: accounts split by id over two groups, and
// transfers, each a SQL transaction through the gateway that reads both
// accounts and writes both. Every write also sets the row's tag, a value
// unique in the whole test, so the history is a register history the Elle
// checker (txn.md X1) can order: a transfer is r(a)=tagA r(b)=tagB
// w(a,new) w(b,new), as the bench's bank records its cmp-guarded writes
// (cmd/augustus/internal/bench/bank.go).
type sqlBank struct {
	sc       *sqlCluster
	db       *sql.DB
	table    string // database.table
	accounts int
	rec      *history.Recorder
	tags     atomic.Int64

	mu       sync.Mutex
	outcomes map[history.Outcome]int
}

func newSQLBank(t *testing.T, sc *sqlCluster, name string, accounts int) *sqlBank {
	t.Helper()
	b := &sqlBank{
		sc: sc, db: sc.open(t, ""), table: name + ".accounts", accounts: accounts,
		rec:      history.NewRecorder(func() int64 { return time.Now().UnixNano() }),
		outcomes: map[history.Outcome]int{},
	}
	b.db.SetMaxOpenConns(32)
	mustExec(t, b.db, "CREATE DATABASE "+name, fmt.Sprintf(`CREATE TABLE %s (id INT PRIMARY KEY, balance INT NOT NULL, tag BIGINT NOT NULL)
COMMENT 'augustus:placement=range(low<%d@0,high<MAXVALUE@1)'`, b.table, accounts/2))
	// The opening balances, one transaction over both groups: the
	// history's first writes.
	var vals []string
	var mops []history.MicroOp
	for i := range accounts {
		tag := b.tags.Add(1)
		vals = append(vals, fmt.Sprintf("(%d, %d, %d)", i, bankInitial, tag))
		mops = append(mops, history.Write(bankKey(i), tag))
	}
	h := b.rec.Invoke(0, mops...)
	if _, err := b.db.Exec("INSERT INTO " + b.table + " VALUES " + strings.Join(vals, ", ")); err != nil {
		t.Fatalf("opening the accounts: %v", err)
	}
	b.complete(t, h, history.OK, mops)
	return b
}

func bankKey(id int) string { return fmt.Sprintf("acct%d", id) }

func (b *sqlBank) complete(t *testing.T, h history.Handle, o history.Outcome, mops []history.MicroOp) {
	if o != history.OK {
		mops = nil
	}
	if err := b.rec.Complete(h, o, mops); err != nil {
		t.Error(err)
	}
	b.mu.Lock()
	b.outcomes[o]++
	b.mu.Unlock()
}

// run transfers money with workers connections for d; during is called
// (if not nil) in its own goroutine while they run, with a context that
// ends with the run.
func (b *sqlBank) run(t *testing.T, d time.Duration, workers int, during func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				b.transfer(t, 1+w, rng)
			}
		}()
	}
	if during != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			during(ctx)
		}()
	}
	wg.Wait()
	b.mu.Lock()
	t.Logf("bank: %d committed, %d failed (1213 or refused), %d indeterminate transfers over %s with %d connections",
		b.outcomes[history.OK]-1, b.outcomes[history.Fail], b.outcomes[history.Info], d, workers)
	b.mu.Unlock()
}

// transfer moves 1..5 from one account to another in one SQL transaction.
func (b *sqlBank) transfer(t *testing.T, process int, rng *rand.Rand) {
	a := rng.IntN(b.accounts)
	c := (a + 1 + rng.IntN(b.accounts-1)) % b.accounts
	amount := 1 + rng.IntN(5)
	ta, tc := b.tags.Add(1), b.tags.Add(1)
	mops := []history.MicroOp{history.Read(bankKey(a)), history.Read(bankKey(c)), history.Write(bankKey(a), ta), history.Write(bankKey(c), tc)}
	// Each attempt gets a fresh deadline: a transfer stuck behind a killed
	// replica ends as indeterminate, not as a hung test.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h := b.rec.Invoke(process, mops...)
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		b.complete(t, h, history.Fail, nil) // nothing was sent
		return
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, balance, tag FROM "+b.table+" WHERE id IN (?, ?)", a, c)
	bal, tag := map[int]int{}, map[int]int64{}
	if err == nil {
		for rows.Next() {
			var id, balance int
			var tg int64
			if err = rows.Scan(&id, &balance, &tg); err != nil {
				break
			}
			bal[id], tag[id] = balance, tg
		}
		if err == nil {
			err = rows.Err()
		}
		_ = rows.Close()
	}
	if err == nil && len(bal) != 2 {
		err = fmt.Errorf("read %d of accounts %d and %d", len(bal), a, c)
		t.Error(err)
	}
	upd := "UPDATE " + b.table + " SET balance = ?, tag = ? WHERE id = ?"
	if err == nil {
		_, err = tx.ExecContext(ctx, upd, bal[a]-amount, ta, a)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, upd, bal[c]+amount, tc, c)
	}
	if err != nil {
		// COMMIT was never sent: the buffered writes die with the
		// transaction, whatever happened to the connection.
		_ = tx.Rollback()
		b.complete(t, h, history.Fail, nil)
		return
	}
	switch err := tx.Commit(); {
	case err == nil:
		b.complete(t, h, history.OK, []history.MicroOp{
			history.ReadValue(bankKey(a), tag[a]), history.ReadValue(bankKey(c), tag[c]),
			history.Write(bankKey(a), ta), history.Write(bankKey(c), tc)})
	case mysqlErrno(err) == 1213:
		// An abort the groups voted: certainly not committed.
		b.complete(t, h, history.Fail, nil)
	default:
		// A lost connection or a timeout at COMMIT: it may have committed.
		b.complete(t, h, history.Info, nil)
	}
}

// check reads every account in one transaction, checks the total, and
// checks the whole history with the Elle checker (strict serializability,
// txn.md X1).
func (b *sqlBank) check(t *testing.T) {
	t.Helper()
	var total int
	var mops []history.MicroOp
	for attempt := 0; ; attempt++ {
		mops = mops[:0]
		for i := range b.accounts {
			mops = append(mops, history.Read(bankKey(i)))
		}
		h := b.rec.Invoke(999, mops...)
		total, mops = 0, mops[:0]
		err := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tx, err := b.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
			rows, err := tx.QueryContext(ctx, "SELECT id, balance, tag FROM "+b.table+" ORDER BY id")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id, balance int
				var tag int64
				if err := rows.Scan(&id, &balance, &tag); err != nil {
					return err
				}
				total += balance
				mops = append(mops, history.ReadValue(bankKey(id), tag))
			}
			if err := rows.Err(); err != nil {
				return err
			}
			// The COMMIT of a read-only transaction sends the guards of
			// its reads: only then is the read a consistent cut.
			return tx.Commit()
		}()
		if err == nil && len(mops) == b.accounts {
			b.complete(t, h, history.OK, mops)
			break
		}
		b.complete(t, h, history.Fail, nil)
		if mysqlErrno(err) != 1213 || attempt >= 10 {
			t.Fatalf("reading the accounts: %v (%d rows)", err, len(mops))
		}
	}
	if want := b.accounts * bankInitial; total != want {
		t.Errorf("the total is %d, want %d: money was created or lost", total, want)
	}
	hist := b.rec.History()
	res, err := elle.Check(hist, elle.Options{})
	if err != nil {
		t.Fatalf("the history cannot be checked: %v", err)
	}
	if !res.Valid() {
		t.Fatalf("the history of %d transactions has anomalies (txn.md X1):\n%s\n%s", len(hist), res.Explain(), hist.String())
	}
	t.Logf("bank: total %d over %d accounts; Elle: %d transactions, %d edges, no anomaly", total, b.accounts, res.Txns, res.Edges)
}

// A replica killed with kill -9 in each group while the bank runs — a
// backup of group 0 and the primary of group 1, so group 1 changes view —
// and restarted later changes nothing: the total holds and the history
// passes the checker.
func TestE2ESQLBankSurvivesKilledReplicas(t *testing.T) {
	skipInShort(t)
	sc := newSQLCluster(t)
	b := newSQLBank(t, sc, "bankkill", 12)
	var killed []string
	b.run(t, 30*time.Second, 6, func(ctx context.Context) {
		sleepCtx(ctx, 5*time.Second)
		for _, name := range []string{"g0r2", "g1r0"} {
			sc.kill(name)
			killed = append(killed, name)
		}
		sleepCtx(ctx, 10*time.Second)
		for _, name := range killed {
			sc.start(name, "--app", "txn")
		}
	})
	for _, name := range killed {
		sc.waitUp(name)
	}
	b.check(t)
	if views := sc.metric("g1r1", mView); views < 1 {
		t.Errorf("group 1 did not change view after its primary died (view %v)", views)
	}
	if b.outcomes[history.OK] < 10 {
		t.Errorf("only %d transfers committed", b.outcomes[history.OK]-1)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// The checker this test relies on fails on a history with a lost update:
// two transfers that read the same versions of both accounts and both
// committed (what the bank would record without the commit guards).
func TestSQLBankHistoryCheckerCatchesALostUpdate(t *testing.T) {
	h, err := history.ParseString(`ok p0 1 2 w(acct0,1) w(acct1,2)
ok p1 3 10 r(acct0)=1 r(acct1)=2 w(acct0,3) w(acct1,4)
ok p2 4 11 r(acct0)=1 r(acct1)=2 w(acct0,5) w(acct1,6)
ok p9 20 21 r(acct0)=5 r(acct1)=6
`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := elle.Check(h, elle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid() {
		t.Fatal("the checker passed a lost update")
	}
	if !strings.Contains(res.String(), "G") {
		t.Fatalf("the report names no cycle class: %s", res.String())
	}
}
