package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// terminate ends a pending transaction with an outcome: its buffered updates
// apply (commit) or are discarded (abort), its locks go, and the queue may
// drain (M4).
func (e *Engine) terminate(w *storage.Batch, id txn.TxnID, rec *record, outcome txn.Decision) error {
	if outcome == txn.Commit {
		if err := e.apply(w, rec.updates); err != nil {
			return err
		}
	}
	e.locks.Release(id)
	if err := w.Delete(storage.TxnRecords, pendingKey(rec.order)); err != nil {
		return fmt.Errorf("partition: pending index: %w", err)
	}
	rec.state, rec.outcome = txn.StateTerminated, outcome
	rec.locks, rec.updates = nil, nil
	e.pending--
	e.metrics.terminated(kindOf(rec), outcome)
	if err := e.putRecord(w, id, rec); err != nil {
		return err
	}
	return e.drain(w)
}

// ack answers "transaction id terminated here with outcome o" (E10), signed
// for certificates (W2 builds termination proofs from them).
func (e *Engine) ack(r reader, d *delivery, outcome txn.Decision, signed bool) ([]byte, error) {
	os, err := e.ownerState(r, d.t.Owner)
	if err != nil {
		return nil, err
	}
	return (&txn.Result{Kind: txn.ResultAck, Signed: signed, ID: d.id, Group: e.self, Decision: outcome, Watermark: os.w}).Encode(), nil
}

// outcome executes a certificate (E10). Validate checked every part but this
// group's own (signatures, f+1 distinct members, the declared groups).
func (e *Engine) outcome(w *storage.Batch, d *delivery) ([]byte, error) {
	cert := d.c.Cert
	own := cert.Decision == txn.Commit || cert.Parts[0].Group == e.self
	rec, err := e.loadRecord(w, d.id)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		// This group's part must claim the vote this group recorded: every
		// correct member computed the same vote, so the record is the
		// truth and the part's signatures add nothing.
		if own && (rec.state == txn.StateQueued || rec.vote != cert.Decision) {
			return e.refuse(w, d, txn.RefuseVoteMismatch, fmt.Sprintf("the certificate claims %s votes of group %d on %s; its recorded vote is %s", cert.Decision, e.self, d.id, voteName(rec)))
		}
		switch rec.state {
		case txn.StatePending:
			if err := e.terminate(w, d.id, rec, cert.Decision); err != nil {
				return nil, err
			}
			return e.ack(w, d, cert.Decision, true)
		case txn.StateQueued:
			// Only an ABORT certificate of another group gets here.
			if err := e.dequeue(w); err != nil {
				return nil, err
			}
			return e.ack(w, d, txn.Abort, true)
		}
		// Terminated: a certificate changes nothing.
		return e.ack(w, d, rec.outcome, true)
	}
	if own {
		// No record, and a part claiming this group's vote: only an abort
		// that E2 would give now (stale, second id, or at most the abort
		// mark) is consistent with it — and it changes nothing. Any other
		// claim about this group's vote is false.
		s, err := e.ownerState(w, d.t.Owner)
		if err != nil {
			return nil, err
		}
		if cert.Decision == txn.Abort {
			if reason, err := e.window(w, d.t.Owner, d.t.Nonce, &s, false); err != nil {
				return nil, err
			} else if reason == txn.ReasonStaleNonce || reason == txn.ReasonSecondID ||
				(reason == txn.ReasonBeyondWindow && s.hasMark && d.t.Nonce <= s.mark) {
				return e.ack(w, d, txn.Abort, true)
			}
		}
		return e.refuse(w, d, txn.RefuseVoteMismatch, fmt.Sprintf("the certificate claims %s votes of group %d on %s, which it never cast", cert.Decision, e.self, d.id))
	}
	// An ABORT certificate of another group for a transaction not yet
	// delivered here (every signature checked in Validate).
	if err := e.terminateEarly(w, d); err != nil {
		return nil, err
	}
	return e.ack(w, d, txn.Abort, true)
}

// terminateEarly handles a valid termination of a transaction this group has
// not delivered (an ABORT certificate of another group, E10, or the owner's
// release, E8): first W1's raise from the transaction it carries; then it is
// recorded as aborted if its nonce is inside the owner's window with no
// record yet, so the later delivery gets the abort at once without taking
// locks; beyond the window it raises the abort mark b; otherwise nothing is
// recorded. Nothing else records or raises b for a transaction this group has
// not delivered.
func (e *Engine) terminateEarly(w *storage.Batch, d *delivery) error {
	s, err := e.raise(w, d.t.Owner, d.t.Watermark)
	if err != nil {
		return err
	}
	reason, err := e.window(w, d.t.Owner, d.t.Nonce, &s, true)
	if err != nil || reason != txn.ReasonNone {
		return err
	}
	rec := &record{
		multi: d.t.MultiGroup(), update: !d.t.ReadOnly(), meta: d.t.WritesMetadata(),
		owner: d.t.Owner, nonce: d.t.Nonce, order: e.takeOrder(), txn: d.c.Txn, admin: d.c.Admin,
	}
	if err := w.Set(storage.TxnRecords, nonceKey(rec.owner, rec.nonce), d.id[:]); err != nil {
		return fmt.Errorf("partition: nonce index: %w", err)
	}
	return e.abort(w, d.id, rec, &txn.Result{Reason: txn.ReasonTerminatedEarly})
}

func voteName(rec *record) string {
	if rec.state == txn.StateQueued {
		return "none (queued)"
	}
	return rec.vote.String()
}

// release executes the owner's release of a multi-group read-only
// transaction (E8). Only the owner may release without a certificate: a bare
// release from anyone else changes nothing, since releasing a correct
// client's read locks in one group early would let it read a
// non-serializable state.
func (e *Engine) release(w *storage.Batch, d *delivery) ([]byte, error) {
	if d.call.Client != d.t.Owner {
		return e.refuse(w, d, txn.RefuseNotOwner, fmt.Sprintf("only the owner may release %s without a certificate", d.id))
	}
	rec, err := e.loadRecord(w, d.id)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		if err := e.terminateEarly(w, d); err != nil {
			return nil, err
		}
		return e.ack(w, d, txn.Abort, false)
	}
	if rec.state == txn.StatePending {
		if err := e.terminate(w, d.id, rec, d.c.Decision); err != nil {
			return nil, err
		}
		return e.ack(w, d, d.c.Decision, false)
	}
	return e.ack(w, d, rec.outcome, false)
}

// proof executes a termination proof (W2): f+1 signed acknowledgements of
// every other involved group (checked in Validate) let this group forget its
// commit vote once the owner's watermark passes it. A proof for a
// transaction still pending here is refused: the outcome comes first (K3).
func (e *Engine) proof(w *storage.Batch, d *delivery) ([]byte, error) {
	rec, err := e.loadRecord(w, d.id)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		switch {
		case rec.state != txn.StateTerminated:
			return e.refuse(w, d, txn.RefusePending, fmt.Sprintf("%s is %s here: send its outcome first", d.id, rec.state))
		case rec.outcome != d.c.Decision:
			return e.refuse(w, d, txn.RefuseOutcomeMismatch, fmt.Sprintf("%s terminated here with %s, the proof says %s", d.id, rec.outcome, d.c.Decision))
		}
		if rec.needsProof() && !rec.proven {
			if err := w.Set(storage.TxnRecords, provenKey(d.id), nil); err != nil {
				return nil, fmt.Errorf("partition: write proof mark of %s: %w", d.id, err)
			}
		}
	}
	s, err := e.ownerState(w, d.t.Owner)
	if err != nil {
		return nil, err
	}
	return (&txn.Result{Kind: txn.ResultProofAck, ID: d.id, Group: e.self, Watermark: s.w}).Encode(), nil
}
