package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/augustus-db/augustus/pkg/sql/catalog"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// Changer does the data work of schema changes that cannot fit one
// transaction, after the metadata transaction recorded what is to be done
// (CockroachDB's schema changer): it backfills new indexes (synchronously,
// for the CREATE INDEX that asked) and clears the spans of dropped tables,
// truncated tables and dropped indexes (in the background: a drop job in
// the catalog, removed once its span is empty). Jobs are in the catalog, so
// any front-end with an admin key finishes what another left.
type Changer struct {
	p    *Provider
	kick chan struct{}
	// Chunk bounds the keys one clearing or backfill transaction handles.
	Chunk int
	// Interval is how often Run looks for jobs without being kicked.
	Interval time.Duration
}

func newChanger(p *Provider) *Changer {
	return &Changer{p: p, kick: make(chan struct{}, 1), Chunk: 256, Interval: 30 * time.Second}
}

// Kick asks Run to look for jobs now.
func (c *Changer) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run clears drop jobs until ctx ends. Its owner (the engine) starts it and
// stops it with ctx. A front-end without an admin key cannot remove jobs
// and does not run them.
func (c *Changer) Run(ctx context.Context) {
	if !c.p.cfg.CanDDL {
		return
	}
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		if err := c.RunJobs(ctx); err != nil && ctx.Err() == nil {
			c.p.cfg.Logger.Warn("backend: schema changer", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-t.C:
		}
	}
}

// RunJobs clears every drop job of the current catalog and removes it.
func (c *Changer) RunJobs(ctx context.Context) error {
	for _, j := range c.p.cat.Current().Jobs() {
		if err := c.clear(ctx, j.Start, j.End); err != nil {
			return fmt.Errorf("clearing %s: %w", j.What, err)
		}
		for range 8 {
			ch := c.p.cat.Current().Edit()
			ch.RemoveJob(j.ID)
			_, err := c.p.cat.Commit(ctx, ch)
			if errors.Is(err, catalog.ErrStale) {
				if _, err = c.p.cat.Reload(ctx); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// clear deletes every key of [start, end), a chunk per transaction. Nothing
// writes there any more (the catalog no longer names the span, and every
// data transaction is pinned to a catalog version, M2), so a chunk's keys
// need no guard.
func (c *Changer) clear(ctx context.Context, start, end []byte) error {
	d := c.p.env.Store
	for {
		res, err := d.Do(ctx, coord.Ops{{Kind: txn.OpReadRange, Key: start, End: end, Limit: uint32(c.Chunk)}}, coord.Options{})
		if err != nil {
			return err
		}
		entries := res.Ops[0].Entries
		if len(entries) == 0 {
			return nil
		}
		ops := make([]txn.Op, len(entries))
		for i, e := range entries {
			ops[i] = txn.Op{Kind: txn.OpDelete, Key: e.Key}
		}
		if _, err := d.Do(ctx, coord.Ops(ops), coord.Options{}); err != nil && !errors.Is(err, txn.ErrKeyNotFound) {
			return err
		}
	}
}

// backfill writes the entries of index ix of table t (write-only in
// snapshot s) for every row, a chunk of rows at a time:
//
//  1. read a chunk of rows (read-range);
//  2. read the index keys they need, guarded by a cmp-range on the chunk;
//  3. insert the entries not there yet, guarded by the same cmp-range.
//
// Writers maintain the index since it became write-only, so an entry may
// already exist; the guard makes a chunk whose rows changed meanwhile start
// again. A unique index meeting an entry of another row fails with 1062.
func (c *Changer) backfill(ctx context.Context, db string, s *catalog.Snapshot, t *catalog.Table, ixID uint32) error {
	ti, err := c.p.info(db, t)
	if err != nil {
		return err
	}
	var ix *indexInfo
	for _, i := range ti.indexes {
		if i.desc.ID == ixID {
			ix = i
		}
	}
	if ix == nil {
		return fmt.Errorf("backend: backfill: no index %d", ixID)
	}
	opts := coord.Options{PinVersion: true, MetadataVersion: s.Version}
	do := func(ops []txn.Op) (*coord.Result, error) {
		res, err := c.p.env.Store.Do(ctx, coord.Ops(ops), opts)
		if errors.Is(err, txn.ErrStaleMetadata) {
			return nil, session.SchemaChangedError()
		}
		return res, err
	}
	span := rowenc.IndexSpan(t.ID, rowenc.PrimaryIndexID)
	pos := span.Start
	for attempts := 0; ; {
		res, err := do([]txn.Op{{Kind: txn.OpReadRange, Key: pos, End: span.End, Limit: uint32(c.Chunk)}})
		if err != nil {
			return err
		}
		rr := res.Ops[0]
		if len(rr.Entries) == 0 {
			return nil
		}
		covered := span.End
		if rr.More {
			covered = rr.Next
		}
		guard := session.RangeGuard(s.Map, pos, covered, rr.Entries)
		type entry struct{ key, value []byte }
		var entries []entry
		reads := []txn.Op{guard}
		for _, kv := range rr.Entries {
			row, err := ti.decodeRow(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			k, v, err := ti.indexEntry(ix, row, ti.suffixOf(kv.Key))
			if err != nil {
				return err
			}
			entries = append(entries, entry{k, v})
			reads = append(reads, txn.Op{Kind: txn.OpRead, Key: k})
		}
		res, err = do(reads)
		if errors.Is(err, txn.ErrCompareFailed) && attempts < 16 {
			attempts++
			continue // the chunk changed: read it again
		}
		if err != nil {
			return err
		}
		writes := []txn.Op{guard}
		seen := map[string]bool{}
		for i, e := range entries {
			if seen[string(e.key)] {
				// Two rows of the chunk with one unique entry.
				row, _ := ti.decodeRow(rr.Entries[i].Key, rr.Entries[i].Value)
				return session.DupEntry(describe(row, ix.ords), t.Name+"."+ix.desc.Name)
			}
			seen[string(e.key)] = true
			r := res.Ops[i+1]
			switch {
			case !r.Present:
				writes = append(writes, txn.Op{Kind: txn.OpInsert, Key: e.key, Value: e.value})
			case !bytes.Equal(r.Value, e.value):
				row, _ := ti.decodeRow(rr.Entries[i].Key, rr.Entries[i].Value)
				return session.DupEntry(describe(row, ix.ords), t.Name+"."+ix.desc.Name)
			}
		}
		if len(writes) > 1 {
			_, err = do(writes)
			if (errors.Is(err, txn.ErrCompareFailed) || errors.Is(err, txn.ErrKeyExists)) && attempts < 16 {
				attempts++
				continue
			}
			if err != nil {
				return err
			}
		}
		attempts = 0
		if !rr.More {
			return nil
		}
		pos = covered
	}
}
