package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// ownerState returns an owner's watermark and abort mark (zero when it has
// none yet).
func (e *Engine) ownerState(r reader, owner bft.ClientID) (ownerState, error) {
	v, ok, err := get(r, storage.TxnRecords, ownerKey(owner))
	if err != nil {
		return ownerState{}, fmt.Errorf("partition: read owner state: %w", err)
	}
	if !ok {
		return ownerState{}, nil
	}
	s, err := decodeOwnerState(v)
	if err != nil {
		return ownerState{}, fmt.Errorf("%w: owner state: %w", errCorrupt, err)
	}
	return s, nil
}

func (e *Engine) putOwnerState(w *storage.Batch, owner bft.ClientID, s ownerState) error {
	if err := w.Set(storage.TxnRecords, ownerKey(owner), s.encode()); err != nil {
		return fmt.Errorf("partition: write owner state: %w", err)
	}
	return nil
}

// raise applies W1 and W2 for an owner-authenticated transaction that states
// watermark stated: the group's copy w rises to stated, never lowers, and
// never passes a nonce it holds pending, queued or unproven (a commit-voted
// multi-group update without its termination proof). Every record it passes
// is deleted (W2): its nonce now re-derives as a stale abort (E2). So no
// transaction is ever aborted or released because of a watermark — that
// would split a Byzantine owner's committed update.
func (e *Engine) raise(w *storage.Batch, owner bft.ClientID, stated uint64) (ownerState, error) {
	s, err := e.ownerState(w, owner)
	if err != nil {
		return s, err
	}
	if stated <= s.w {
		return s, nil
	}
	type entry struct {
		nonce uint64
		id    txn.TxnID
	}
	// Records exist only inside the window [w, w+P), so this scan reads at
	// most P entries whatever the stated watermark.
	var passed []entry
	err = w.Scan(storage.TxnRecords, nonceKey(owner, s.w), nonceKey(owner, stated), 0, func(k, v []byte) error {
		if len(v) != 32 || len(k) != 1+txn.OwnerSize+8 {
			return fmt.Errorf("%w: nonce index entry", errCorrupt)
		}
		passed = append(passed, entry{nonce: beUint64(k[1+txn.OwnerSize:]), id: txn.TxnID(v)})
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("partition: scan nonce index: %w", err)
	}
	next := stated
	for _, p := range passed {
		rec, err := e.loadRecord(w, p.id)
		if err != nil {
			return s, err
		}
		if rec == nil {
			return s, fmt.Errorf("%w: nonce index names %s without a record", errCorrupt, p.id)
		}
		if rec.blocksWatermark() {
			next = p.nonce
			break
		}
		if err := w.Delete(storage.TxnRecords, recordKey(p.id)); err != nil {
			return s, fmt.Errorf("partition: delete record: %w", err)
		}
		if err := w.Delete(storage.TxnRecords, nonceKey(owner, p.nonce)); err != nil {
			return s, fmt.Errorf("partition: delete nonce index: %w", err)
		}
		if rec.needsProof() {
			if err := w.Delete(storage.TxnRecords, provenKey(p.id)); err != nil {
				return s, fmt.Errorf("partition: delete proof mark: %w", err)
			}
		}
	}
	if next > s.w {
		s.w = next
		if err := e.putOwnerState(w, owner, s); err != nil {
			return s, err
		}
	}
	return s, nil
}

// window applies E2 to an owner's unrecorded nonce: the owner's window at
// this group is [w, w+P). It returns the abort reason, or ReasonNone if the
// nonce may be recorded:
//   - below w: stale — W2 guarantees no group still holds it pending with a
//     commit vote of this group;
//   - a nonce already recorded under another id: second id;
//   - at or beyond w+P: beyond window; with raiseMark it raises the owner's
//     abort mark b to the nonce, so the nonce aborts forever after (else a
//     later commit vote for it could meet an ABORT certificate made from
//     this abort);
//   - at most b: beyond window (it was, when b was raised).
func (e *Engine) window(w *storage.Batch, owner bft.ClientID, nonce uint64, s *ownerState, raiseMark bool) (txn.Reason, error) {
	if nonce < s.w {
		return txn.ReasonStaleNonce, nil
	}
	if _, ok, err := get(w, storage.TxnRecords, nonceKey(owner, nonce)); err != nil {
		return 0, fmt.Errorf("partition: read nonce index: %w", err)
	} else if ok {
		return txn.ReasonSecondID, nil
	}
	if nonce-s.w >= e.limits.Window {
		if raiseMark && (!s.hasMark || nonce > s.mark) {
			s.hasMark, s.mark = true, nonce
			if err := e.putOwnerState(w, owner, *s); err != nil {
				return 0, err
			}
		}
		return txn.ReasonBeyondWindow, nil
	}
	if s.hasMark && nonce <= s.mark {
		return txn.ReasonBeyondWindow, nil
	}
	return txn.ReasonNone, nil
}
