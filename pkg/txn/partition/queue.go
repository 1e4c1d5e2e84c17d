package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// Metadata transactions (M4) that conflict only with pending data
// transactions are queued in delivery order instead of aborting — the one
// waiting lock. Since a later metadata transaction aborts rather than wait
// behind a queued or pending one, at most one is queued. While it is queued,
// every later data transaction votes abort ("stale metadata") naming what it
// waits for; outcome messages need no locks, so the pending transactions
// terminate (by their clients, or by anyone recovering them, K4) and the
// queue drains; then the metadata transaction votes as E3–E5 would.

// queue records a metadata transaction as queued, with the exact lock set it
// waits for and its delivery order (E11).
func (e *Engine) queue(w *storage.Batch, id txn.TxnID, rec *record, locks []lock) error {
	rec.state = txn.StateQueued
	rec.locks = locks
	if err := w.Set(storage.TxnRecords, pendingKey(rec.order), id[:]); err != nil {
		return fmt.Errorf("partition: pending index: %w", err)
	}
	e.queued = &queuedMeta{id: id, rec: rec}
	return e.putRecord(w, id, rec)
}

// onlyDataHolders reports whether every conflicting holder is a data
// transaction.
func (e *Engine) onlyDataHolders(r reader, hs []holder) (bool, error) {
	for _, h := range hs {
		rec, err := e.loadRecord(r, h.ID)
		if err != nil {
			return false, err
		}
		if rec == nil {
			return false, fmt.Errorf("%w: lock holder %s without a record", errCorrupt, txn.TxnID(h.ID))
		}
		if rec.meta {
			return false, nil
		}
	}
	return true, nil
}

// blockers names the pending transactions the queued metadata transaction
// waits for, first delivered first, at most Limits.MaxNamed of them.
func (e *Engine) blockers(r reader, q *queuedMeta) ([]txn.Named, error) {
	hs, err := e.conflicts(q.id, q.rec.locks)
	if err != nil {
		return nil, err
	}
	if len(hs) > e.limits.MaxNamed {
		hs = hs[:e.limits.MaxNamed]
	}
	out := make([]txn.Named, 0, len(hs))
	for _, h := range hs {
		rec, err := e.loadRecord(r, h.ID)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, fmt.Errorf("%w: lock holder %s without a record", errCorrupt, txn.TxnID(h.ID))
		}
		out = append(out, rec.named())
	}
	return out, nil
}

// queuedResult answers a queued metadata transaction: "queued", naming the
// pending transactions it waits for now (E1, M4).
func (e *Engine) queuedResult(r reader, id txn.TxnID, rec *record, watermark uint64) ([]byte, error) {
	named, err := e.blockers(r, &queuedMeta{id: id, rec: rec})
	if err != nil {
		return nil, err
	}
	return (&txn.Result{Kind: txn.ResultQueued, ID: id, Group: e.self, Watermark: watermark, Named: named}).Encode(), nil
}

// drain lets the queued metadata transaction vote once nothing it waits for
// is pending any more. Its lock set cannot have grown meanwhile: metadata is
// written only by metadata transactions, and none ran while it was queued.
func (e *Engine) drain(w *storage.Batch) error {
	q := e.queued
	if q == nil {
		return nil
	}
	if c, err := e.conflicts(q.id, q.rec.locks); err != nil || len(c) > 0 {
		return err
	}
	e.queued = nil
	t, err := txn.Decode(q.rec.txn)
	if err != nil {
		return fmt.Errorf("%w: queued transaction: %w", errCorrupt, err)
	}
	if err := w.Delete(storage.TxnRecords, pendingKey(q.rec.order)); err != nil {
		return fmt.Errorf("partition: pending index: %w", err)
	}
	p, err := e.plan(w, t)
	if err != nil {
		return err
	}
	// The persisted lock set is the one it waited for (E11); the fresh plan
	// supplies what evaluation reads.
	p.locks = q.rec.locks
	if c, err := e.acquire(holder{ID: q.id, Order: q.rec.order}, p.locks); err != nil {
		return err
	} else if len(c) > 0 {
		return fmt.Errorf("%w: queued transaction %s still conflicts after draining", errCorrupt, q.id)
	}
	return e.decide(w, q.id, t, q.rec, p)
}

// dequeue terminates the queued metadata transaction with an abort (an ABORT
// certificate of another group reached this group, E10).
func (e *Engine) dequeue(w *storage.Batch) error {
	q := e.queued
	e.queued = nil
	if err := w.Delete(storage.TxnRecords, pendingKey(q.rec.order)); err != nil {
		return fmt.Errorf("partition: pending index: %w", err)
	}
	return e.abort(w, q.id, q.rec, &txn.Result{Reason: txn.ReasonTerminatedEarly})
}
