package partition

import (
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// deliver executes a transaction call (CallTxn) in delivery order.
func (e *Engine) deliver(w *storage.Batch, d *delivery) ([]byte, error) {
	rec, err := e.loadRecord(w, d.id)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return e.redeliver(w, d.id, rec)
	}
	relay := d.c.Relay != nil
	if !relay && d.call.Client != d.t.Owner {
		// T3: a copy from anyone but the owner is answered only from this
		// group's records. Executing it would let any client spend the
		// owner's nonces or take locks in its name.
		return e.refuse(w, d, txn.RefuseNoRecord, fmt.Sprintf("no record of transaction %s: only its owner, or a relay with f+1 signed votes of one of its groups, may deliver it", d.id))
	}
	// The transaction is owner-authenticated: by the owner's envelope, or by
	// f+1 signed votes of one of its groups (checked in Validate). T3 speaks
	// of votes of a group that recorded it; Validate accepts any f+1 signed
	// votes, also an E2 abort that was signed but not recorded. That is as
	// strong: a correct replica signs a vote only for a transaction it
	// delivered owner-authenticated, or recorded from such a delivery or
	// from a certificate or release built on one, so among f+1 signers one
	// correct replica vouches that the owner sent it.
	os, err := e.raise(w, d.t.Owner, d.t.Watermark)
	if err != nil {
		return nil, err
	}
	multi, update := d.t.MultiGroup(), !d.t.ReadOnly()
	reason, err := e.window(w, d.t.Owner, d.t.Nonce, &os, true)
	if err != nil {
		return nil, err
	}
	if reason != txn.ReasonNone {
		// E2: an abort that is not recorded and stays the same on every
		// re-delivery. Signed for a multi-group update (E9) and for a
		// relay, whose sender is recovering the transaction (E8).
		e.metrics.vote(d.t.Kind(), txn.Abort, reason)
		body := txn.AppendVoteBody(nil, &txn.Result{Decision: txn.Abort, Reason: reason})
		return txn.AppendVote(nil, multi && (update || relay), d.id, e.self, txn.Abort, os.w, body), nil
	}
	rec = &record{
		multi: multi, update: update, meta: d.t.WritesMetadata(),
		owner: d.t.Owner, nonce: d.t.Nonce, order: e.takeOrder(),
		txn: d.c.Txn, admin: d.c.Admin,
	}
	if err := w.Set(storage.TxnRecords, nonceKey(rec.owner, rec.nonce), d.id[:]); err != nil {
		return nil, fmt.Errorf("partition: nonce index: %w", err)
	}
	if err := e.execute(w, d.id, d.t, rec); err != nil {
		return nil, err
	}
	if rec.state == txn.StateQueued {
		return e.queuedResult(w, d.id, rec, os.w)
	}
	// The first delivery of a multi-group read-only transaction is unsigned
	// (§3.5.2, E8): only a recovery needs its votes signed.
	return txn.AppendVote(nil, rec.multi && (rec.update || relay), d.id, e.self, rec.vote, os.w, rec.body), nil
}

// redeliver answers a transaction already recorded (E1): its recorded vote,
// state and results, unchanged; nothing is re-executed. A multi-group vote is
// signed on every re-delivery — for an update it always is, for a read-only
// transaction this is how a recovering client gets the signed votes it
// needs (E8, K4).
func (e *Engine) redeliver(r reader, id txn.TxnID, rec *record) ([]byte, error) {
	os, err := e.ownerState(r, rec.owner)
	if err != nil {
		return nil, err
	}
	if rec.state == txn.StateQueued {
		return e.queuedResult(r, id, rec, os.w)
	}
	return txn.AppendVote(nil, rec.multi, id, e.self, rec.vote, os.w, rec.body), nil
}

// execute votes on a newly recorded transaction: T5, then M4, then E3–E7. It
// writes the record in every case.
func (e *Engine) execute(w *storage.Batch, id txn.TxnID, t *txn.Txn, rec *record) error {
	// T5: the declared groups must be the ones this group's partition map
	// assigns. A vote, not a refusal: a refusal here and a commit vote at
	// another group would leave the transaction pending forever.
	if !rec.meta {
		if want := txn.InvolvedGroups(t.Ops, e.pmap); len(want) > 0 && !slices.Equal(want, t.GroupIDs()) {
			return e.abort(w, id, rec, &txn.Result{Reason: txn.ReasonWrongGroups, Want: want})
		}
		for i := range t.Ops {
			op := &t.Ops[i]
			if op.Kind != txn.OpCmpRange || op.Meta {
				continue
			}
			// A cmp-range carries one digest per group its range involves.
			want := e.pmap.AppendRangeGroups(nil, op.Key, op.End)
			if !slices.EqualFunc(want, op.Digests, func(g bft.GroupID, d txn.GroupDigest) bool { return g == d.Group }) {
				return e.abort(w, id, rec, &txn.Result{Reason: txn.ReasonWrongGroups, Want: want})
			}
		}
	}
	// M4: while a metadata transaction is queued, every later transaction
	// would take a lock on the version key it waits to write: a data
	// transaction votes abort ("stale metadata") naming what the queued one
	// waits for, a metadata transaction aborts as a conflict (two metadata
	// transactions never wait for each other).
	if q := e.queued; q != nil {
		if rec.meta {
			return e.abort(w, id, rec, &txn.Result{Reason: txn.ReasonConflict, Named: []txn.Named{q.rec.named()}})
		}
		ver, err := e.version(w)
		if err != nil {
			return err
		}
		blockers, err := e.blockers(w, q)
		if err != nil {
			return err
		}
		return e.abort(w, id, rec, &txn.Result{Reason: txn.ReasonStaleMetadata, Version: ver, Named: blockers})
	}
	p, err := e.plan(w, t)
	if err != nil {
		return err
	}
	// E3, L6: all locks at once or none, never waiting.
	conflicts, err := e.acquire(holder{ID: id, Order: rec.order}, p.locks)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		if rec.meta {
			onlyData, err := e.onlyDataHolders(w, conflicts)
			if err != nil {
				return err
			}
			if onlyData {
				return e.queue(w, id, rec, p.locks)
			}
		}
		// Name the conflicting pending transaction delivered first, with its
		// encoding, so every correct replica names the same one and any
		// client can recover it (K4).
		first, err := e.loadRecord(w, conflicts[0].ID)
		if err != nil {
			return err
		}
		if first == nil {
			return fmt.Errorf("%w: lock holder %s without a record", errCorrupt, txn.TxnID(conflicts[0].ID))
		}
		return e.abort(w, id, rec, &txn.Result{Reason: txn.ReasonConflict, Named: []txn.Named{first.named()}})
	}
	return e.decide(w, id, t, rec, p)
}

// decide finishes a vote whose locks are held: E4–E7.
func (e *Engine) decide(w *storage.Batch, id txn.TxnID, t *txn.Txn, rec *record, p *plan) error {
	v, err := e.evaluate(w, t, p)
	if err != nil {
		return err
	}
	if v.reason != txn.ReasonNone {
		// E6: an abort terminates at once and keeps no locks.
		e.locks.Release(id)
		return e.abort(w, id, rec, &txn.Result{Reason: v.reason, Op: v.op, Version: v.version})
	}
	rec.vote = txn.Commit
	rec.body = txn.AppendVoteBody(nil, &txn.Result{Decision: txn.Commit, Reads: v.reads})
	e.metrics.vote(kindOf(rec), txn.Commit, txn.ReasonNone)
	if !rec.multi {
		// E7: a single-group transaction's commit vote is its outcome; the
		// updates apply in the same execution and its locks go at once.
		if err := e.apply(w, v.updates); err != nil {
			return err
		}
		e.locks.Release(id)
		rec.state, rec.outcome = txn.StateTerminated, txn.Commit
		return e.putRecord(w, id, rec)
	}
	// E6: a commit vote makes the transaction pending: locks held, updates
	// buffered, results and vote recorded — with the exact lock set, so
	// Restored rebuilds the lock table verbatim (E11).
	rec.state = txn.StatePending
	rec.locks = p.locks
	rec.updates = v.updates
	if err := w.Set(storage.TxnRecords, pendingKey(rec.order), id[:]); err != nil {
		return fmt.Errorf("partition: pending index: %w", err)
	}
	e.pending++
	return e.putRecord(w, id, rec)
}

// abort records an abort vote that terminates the transaction at once (E6).
func (e *Engine) abort(w *storage.Batch, id txn.TxnID, rec *record, res *txn.Result) error {
	res.Decision = txn.Abort
	rec.state, rec.vote, rec.outcome = txn.StateTerminated, txn.Abort, txn.Abort
	rec.body = txn.AppendVoteBody(nil, res)
	rec.locks, rec.updates = nil, nil
	e.metrics.vote(kindOf(rec), txn.Abort, res.Reason)
	return e.putRecord(w, id, rec)
}

// apply writes buffered updates; a partition-map write replaces the map the
// engine routes with (M3).
func (e *Engine) apply(w *storage.Batch, ups []update) error {
	for i := range ups {
		u := &ups[i]
		var err error
		if u.delete {
			err = w.Delete(u.keyspace(), u.key)
		} else {
			err = w.Set(u.keyspace(), u.key, u.value)
		}
		if err != nil {
			return fmt.Errorf("partition: apply update: %w", err)
		}
	}
	for i := range ups {
		if ups[i].meta && string(ups[i].key) == string(txn.MetaPartitionsKey) {
			return e.loadMetadata(w)
		}
	}
	return nil
}

// refuse answers a call with a refusal carrying the owner's watermark (W3).
func (e *Engine) refuse(r reader, d *delivery, code txn.RefusalCode, msg string) ([]byte, error) {
	os, err := e.ownerState(r, d.t.Owner)
	if err != nil {
		return nil, err
	}
	e.metrics.refused(code)
	return (&txn.Result{Kind: txn.ResultRefusal, ID: d.id, Group: e.self, Watermark: os.w, Code: code, Message: msg}).Encode(), nil
}
