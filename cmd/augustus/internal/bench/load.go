package bench

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

// LoadResult is what the --load step did.
type LoadResult struct {
	// Items is what was loaded: items (A–D), accounts (bank), keys
	// (buzzer: accounts, follows and followers; Graph says more).
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
	// Graph describes the social graph the buzzer workload loaded.
	Graph *GraphStats `json:"graph,omitempty"`
}

// loadRetries bounds the attempts of one loading transaction that fails
// for another reason than an abort (a timeout while replicas restart).
const loadRetries = 5

// loadBatchSize is --load-batch, or the default for values of vsize bytes:
// 500 inserts of small values, fewer of large ones, so that one
// transaction stays well under the limits (MaxOps, MaxTxnBytes).
func (e *txnEnv) loadBatchSize(vsize int) int {
	if e.t.loadBatch > 0 {
		return e.t.loadBatch
	}
	n := 500
	if per := vsize + 16; n*per > e.limits.MaxTxnBytes/4 {
		n = max(1, e.limits.MaxTxnBytes/4/per)
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
	return interleave(per)
}

// interleave takes one unit of each group in turn.
func interleave[T any](per [][]T) []T {
	var out []T
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

// loadKVs inserts the key-value pairs of units, each unit in one
// transaction of one group, with --load-clients of them in flight; pairs
// whose key exists already are left as they are (a second --load
// completes an interrupted one). total is the number of pairs, noun what
// they are called in the progress lines.
func (e *txnEnv) loadKVs(ctx context.Context, units []func() []txn.KV, total int, noun string, batch int) (*LoadResult, error) {
	res := &LoadResult{Items: total, Batch: batch, InFlight: e.t.loadClients}
	start := time.Now()
	work := make(chan func() []txn.KV)
	var inserted, existing, txns atomic.Int64
	var firstErr error
	var errOnce sync.Once
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range e.t.loadClients {
		wg.Go(func() {
			for u := range work {
				ins, ex, n, err := e.loadUnit(loadCtx, u())
				inserted.Add(int64(ins))
				existing.Add(int64(ex))
				txns.Add(int64(n))
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
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
				fmt.Fprintf(e.stderr, "bench: loaded %d/%d %s (%.0f %s/s)\n", done, total, noun, float64(done)/time.Since(start).Seconds(), noun)
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
	fmt.Fprintf(e.stderr, "bench: loaded %d %s in %.1fs (%.0f %s/s; %d inserted, %d there already; load average %s)\n",
		total, noun, res.Seconds, res.ItemsPerSecond, noun, res.Inserted, res.Existing, res.LoadAvgAfter)
	return res, nil
}

// loadUnit inserts kvs in one transaction. If one exists already (a
// repeated or concurrent load), the transaction aborts as a whole (E5): it
// then reads the unit's keys and inserts only the absent ones.
func (e *txnEnv) loadUnit(ctx context.Context, kvs []txn.KV) (inserted, existing, txns int, err error) {
	todo := kvs
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt >= loadRetries {
			return inserted, existing, txns, fmt.Errorf("keys %x..%x: no success after %d attempts: %w", kvs[0].Key, kvs[len(kvs)-1].Key, attempt, err)
		}
		ops := make([]txn.Op, len(todo))
		for i, kv := range todo {
			ops[i] = txn.Op{Kind: txn.OpInsert, Key: kv.Key, Value: kv.Value}
		}
		txns++
		_, err = e.do(ctx, coord.Ops(ops), coord.Options{})
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
		for i, kv := range todo {
			reads[i] = txn.Op{Kind: txn.OpRead, Key: kv.Key}
		}
		txns++
		res, rerr := e.do(ctx, coord.Ops(reads), coord.Options{})
		if rerr != nil {
			err = rerr
			continue
		}
		var absent []txn.KV
		for i, kv := range todo {
			if res.Ops[i].Present {
				existing++
			} else {
				absent = append(absent, kv)
			}
		}
		todo = absent
	}
	return inserted, existing, txns, nil
}
