package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// loadResult is what the --load step did.
type loadResult struct {
	Items          int     `json:"items"`
	Inserted       int64   `json:"inserted"`
	Existing       int64   `json:"existing"`
	Transactions   int64   `json:"transactions"`
	Batch          int     `json:"batch"`
	InFlight       int     `json:"in_flight"`
	Seconds        float64 `json:"seconds"`
	ItemsPerSecond float64 `json:"items_per_second"`
	LoadAvgAfter   string  `json:"loadavg_after"`
	// SettleSeconds is how long the bench then waited for the replicas'
	// compactions (settleAfterLoad), and Settle how that ended.
	SettleSeconds float64 `json:"settle_seconds"`
	Settle        string  `json:"settle,omitempty"`
}

// loadRetries bounds the attempts of one loading transaction that fails
// for another reason than an abort (a timeout while replicas restart).
const loadRetries = 5

// loadBatchSize is --load-batch, or the default for the value size: 500
// inserts of small values, fewer of large ones, so that one transaction
// stays well under the limits (MaxOps, MaxTxnBytes).
func (b *txnBench) loadBatchSize() int {
	if b.t.loadBatch > 0 {
		return b.t.loadBatch
	}
	n := 500
	if per := b.vsize + 16; n*per > b.limits.MaxTxnBytes/4 {
		n = max(1, b.limits.MaxTxnBytes/4/per)
	}
	return n
}

// loadUnits cuts every group's items into runs of at most batch
// consecutive items, each inside one group (so every loading transaction
// takes the single-group fast path, E7), interleaved over the groups so
// that all groups load at once.
func loadUnits(ks *keySpace, batch int) []itemSpan {
	per := make([][]itemSpan, len(ks.groups))
	for gi, spans := range ks.spans {
		for _, s := range spans {
			for lo := s.lo; lo < s.hi; lo += batch {
				per[gi] = append(per[gi], itemSpan{lo, min(lo+batch, s.hi)})
			}
		}
	}
	var out []itemSpan
	for i := 0; ; i++ {
		added := false
		for gi := range per {
			if i < len(per[gi]) {
				out = append(out, per[gi][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// loadStep loads the database: every item inserted with a value of the
// workload's size; items that exist already are left as they are (a second
// --load completes an interrupted one). The bank (re)sets its accounts
// instead (bankState.load).
func (b *txnBench) loadStep(ctx context.Context) (*loadResult, error) {
	if b.bank != nil {
		return b.bank.load(ctx, b)
	}
	batch := b.loadBatchSize()
	units := loadUnits(b.ks, batch)
	res := &loadResult{Items: b.ks.items, Batch: batch, InFlight: b.t.loadClients}
	fmt.Fprintf(b.stderr, "bench: loading %d items (%d-byte values) in %d transactions of up to %d inserts, %d in flight\n",
		b.ks.items, b.vsize, len(units), batch, b.t.loadClients)
	start := time.Now()
	work := make(chan itemSpan)
	var inserted, existing, txns atomic.Int64
	var firstErr error
	var errOnce sync.Once
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range b.t.loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				ins, ex, n, err := b.loadUnit(loadCtx, u)
				inserted.Add(int64(ins))
				existing.Add(int64(ex))
				txns.Add(int64(n))
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	tick := time.NewTicker(progressInterval)
	defer tick.Stop()
feed:
	for _, u := range units {
		for {
			select {
			case work <- u:
				continue feed
			case <-loadCtx.Done():
				break feed
			case <-tick.C:
				done := inserted.Load() + existing.Load()
				fmt.Fprintf(b.stderr, "bench: loaded %d/%d items (%.0f items/s)\n", done, b.ks.items, float64(done)/time.Since(start).Seconds())
			}
		}
	}
	close(work)
	wg.Wait()
	res.Inserted, res.Existing, res.Transactions = inserted.Load(), existing.Load(), txns.Load()
	res.Seconds = time.Since(start).Seconds()
	res.ItemsPerSecond = float64(res.Inserted+res.Existing) / res.Seconds
	res.LoadAvgAfter = loadAvg()
	if firstErr != nil {
		return res, fmt.Errorf("load: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("load interrupted: %w", err)
	}
	fmt.Fprintf(b.stderr, "bench: loaded %d items in %.1fs (%.0f items/s; %d inserted, %d there already; load average %s)\n",
		b.ks.items, res.Seconds, res.ItemsPerSecond, res.Inserted, res.Existing, res.LoadAvgAfter)
	return res, nil
}

// loadUnit inserts the items of u in one transaction. If one exists
// already (a repeated or concurrent load), the transaction aborts as a
// whole (E5): it then reads the unit's items and inserts only the absent
// ones.
func (b *txnBench) loadUnit(ctx context.Context, u itemSpan) (inserted, existing, txns int, err error) {
	todo := make([]int, 0, u.hi-u.lo)
	for it := u.lo; it < u.hi; it++ {
		todo = append(todo, it)
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt >= loadRetries {
			return inserted, existing, txns, fmt.Errorf("items %d..%d: no success after %d attempts: %w", u.lo, u.hi-1, attempt, err)
		}
		ops := make([]txn.Op, len(todo))
		for i, it := range todo {
			ops[i] = txn.Op{Kind: txn.OpInsert, Key: b.ks.key(it), Value: benchValue(b.vsize, uint64(it))}
		}
		txns++
		_, err = b.cl.Do(ctx, coord.Ops(ops), coord.Options{})
		if err == nil {
			return inserted + len(todo), existing, txns, nil
		}
		if ctx.Err() != nil {
			return inserted, existing, txns, ctx.Err()
		}
		if !errors.Is(err, txn.ErrKeyExists) {
			continue // a conflict past the library's retries, a timeout: again
		}
		reads := make([]txn.Op, len(todo))
		for i, it := range todo {
			reads[i] = txn.Op{Kind: txn.OpRead, Key: b.ks.key(it)}
		}
		txns++
		res, rerr := b.cl.Do(ctx, coord.Ops(reads), coord.Options{})
		if rerr != nil {
			err = rerr
			continue
		}
		absent := todo[:0]
		for i, it := range todo {
			if res.Ops[i].Present {
				existing++
			} else {
				absent = append(absent, it)
			}
		}
		todo = absent
	}
	return inserted, existing, txns, nil
}
