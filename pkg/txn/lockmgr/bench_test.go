package lockmgr

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks of the engine's hot path: one Acquire and, at termination, one
// Release per transaction, against a table that already holds many pending
// transactions.

const benchHolders = 10_000

func benchKey(region byte, n int) []byte { return fmt.Appendf(nil, "%c/user/%012d", region, n) }

// benchTxn is a 10-operation transaction as the engine would lock it
// (txn.md L5): cmp on the metadata version key (M2: every data transaction
// has one, so all holders share an R on it), 5 reads, 2 writes, an insert
// (SW + W) and a read-range of 3 present keys (SR + 3 R). Its keys come from
// region, so transactions of different regions never conflict except
// through the shared R on the version key, which is compatible.
func benchTxn(rng *rand.Rand, region byte) []Lock {
	k := func() []byte { return benchKey(region, rng.IntN(10_000_000)) }
	locks := []Lock{{Mode: R, Start: []byte("meta/version")}}
	for range 5 {
		locks = append(locks, Lock{Mode: R, Start: k()})
	}
	for range 2 {
		locks = append(locks, Lock{Mode: W, Start: k()})
	}
	ins := k()
	locks = append(locks, Lock{Mode: SW, Start: ins}, Lock{Mode: W, Start: ins})
	lo := rng.IntN(10_000_000 - 100)
	locks = append(locks, Lock{Mode: SR, Start: benchKey(region, lo), End: benchKey(region, lo+100)})
	for i := range 3 {
		locks = append(locks, Lock{Mode: R, Start: benchKey(region, lo+1+i*30)})
	}
	return locks
}

// filledTable returns a table with benchHolders holders of benchTxn shape
// in region 'p' (a random draw that happens to conflict is skipped).
func filledTable(b *testing.B) *Table {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	tb := New()
	for i := 0; tb.Len() < benchHolders; i++ {
		c, err := tb.Acquire(Holder{ID: tid(i), Order: uint64(i)}, benchTxn(rng, 'p'))
		if err != nil {
			b.Fatal(err)
		}
		_ = c
	}
	return tb
}

// BenchmarkAcquireRelease10Ops: Acquire then Release of one 10-op
// transaction against a table holding 10K such transactions.
func BenchmarkAcquireRelease10Ops(b *testing.B) {
	tb := filledTable(b)
	rng := rand.New(rand.NewPCG(3, 4))
	txns := make([][]Lock, 1024)
	for i := range txns {
		txns[i] = benchTxn(rng, 'q')
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := Holder{ID: tid(1 << 30), Order: 1 << 40}
		if c, err := tb.Acquire(h, txns[i%len(txns)]); err != nil || c != nil {
			b.Fatalf("not granted: %v %v", c, err)
		}
		tb.Release(h.ID)
	}
}

// BenchmarkAcquireReleaseReadRange1000Keys: a read-range chunk of 1,000
// present keys (SR on the span + R on each key, plus the version key's R)
// against a table holding 10K transactions.
func BenchmarkAcquireReleaseReadRange1000Keys(b *testing.B) {
	tb := filledTable(b)
	locks := []Lock{{Mode: R, Start: []byte("meta/version")}, {Mode: SR, Start: benchKey('q', 0), End: benchKey('q', 10_000)}}
	for i := range 1000 {
		locks = append(locks, Lock{Mode: R, Start: benchKey('q', i*10)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := Holder{ID: tid(1 << 30), Order: 1 << 40}
		if c, err := tb.Acquire(h, locks); err != nil || c != nil {
			b.Fatalf("not granted: %v %v", c, err)
		}
		tb.Release(h.ID)
	}
}

// BenchmarkConflictsWriteOnSharedKey: the slow path a metadata transaction
// meets (M4): W on the version key that all 10K holders read reports every
// one of them, in delivery order.
func BenchmarkConflictsWriteOnSharedKey(b *testing.B) {
	tb := filledTable(b)
	q := []Lock{{Mode: W, Start: []byte("meta/version")}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, _ := tb.Conflicts(tid(1<<30), q)
		if len(c) != benchHolders {
			b.Fatalf("%d conflicts", len(c))
		}
	}
}

// BenchmarkRestore10KHolders: rebuilding a table of 10K pending
// transactions from their Held sets (txn.md E11, start-up and state
// transfer); one op is the whole table.
func BenchmarkRestore10KHolders(b *testing.B) {
	tb := filledTable(b)
	hs := tb.Holders()
	sets := make([][]Lock, len(hs))
	for i, h := range hs {
		sets[i], _ = tb.Held(h.ID)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fresh := New()
		for j, h := range hs {
			if err := fresh.Restore(h, sets[j]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
