package partition

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Validate implements host.Application: stateless validation (T4), the
// same at every replica of every group, run in parallel before ordering. A
// rejection becomes an error reply the client reads on f+1 matching replies,
// so every message is a deterministic function of the call's bytes. It
// checks decoding; limits; that the receiving group is in the declared set
// (T4, also for relays); the admin signature of a metadata transaction and
// the rules of the metadata keyspace (M1, M5); the signed votes a relay
// carries (T3); every part of a certificate but this group's own (E10); the
// acknowledgements of a termination proof (W2). Every data transaction
// carries cmp(metadata-version, v) for each involved group (M2) by
// construction: txn.Txn.Groups holds a version per declared group.
func (e *Engine) Validate(call []byte) error { return e.validate(call, e.keys) }

// ValidateCalls implements host.CallsValidator: Validate of each call, with
// the replica signatures of all of them checked in one batch (txn.SigBatch).
// Each verdict is exactly Validate's: if the batch fails, every call it
// would have passed is validated again alone, and so is a call that failed
// for another reason after some of its signatures were deferred (alone,
// one of those might have failed first, with another message). A forged
// signature thus costs at most a second validation of the envelope it came
// in, which is its sender's own: an envelope carries one client's calls.
func (e *Engine) ValidateCalls(calls [][]byte) []error {
	sb := txn.NewSigBatch()
	deferring := e.keys.Deferring(sb)
	errs := make([]error, len(calls))
	for i, call := range calls {
		before := sb.Adds()
		if errs[i] = e.validate(call, deferring); errs[i] != nil && sb.Adds() > before {
			errs[i] = e.validate(call, e.keys)
		}
	}
	if sb.Verify() {
		return errs
	}
	for i, call := range calls {
		if errs[i] == nil {
			errs[i] = e.validate(call, e.keys)
		}
	}
	return errs
}

// validate is Validate with keys, which may defer signature checks.
func (e *Engine) validate(call []byte, keys *txn.Keys) error {
	c, err := txn.DecodeCall(call)
	if err != nil {
		return err
	}
	if c.Kind == txn.CallQuery {
		return nil
	}
	t, err := e.limits.CheckEncoded(c.Txn)
	if err != nil {
		return err
	}
	if _, ok := t.Involves(e.self); !ok {
		return fmt.Errorf("%w: group %d is not among the transaction's groups %v", txn.ErrNotInvolved, e.self, t.GroupIDs())
	}
	for _, gv := range t.Groups {
		if !keys.HasGroup(gv.Group) {
			return fmt.Errorf("%w: group %d is not in the cluster", txn.ErrInvalid, gv.Group)
		}
	}
	id := e.dom.ID(c.Txn)
	if err := e.validateMeta(t, id, c.Admin); err != nil {
		return err
	}
	switch c.Kind {
	case txn.CallTxn:
		if c.Relay != nil {
			if _, ok := t.Involves(c.Relay.Votes.Group); !ok {
				return fmt.Errorf("%w: relay carries votes of group %d, not involved", txn.ErrInvalid, c.Relay.Votes.Group)
			}
			if err := keys.VerifyVotes(id, c.Relay.Decision, &c.Relay.Votes); err != nil {
				return fmt.Errorf("relay: %w", err)
			}
		}
	case txn.CallOutcome:
		if !t.MultiGroup() {
			return fmt.Errorf("%w: a single-group transaction terminates at its vote; it takes no certificate", txn.ErrInvalid)
		}
		if err := keys.VerifyCertificate(t, id, c.Cert, e.self, true); err != nil {
			return fmt.Errorf("certificate: %w", err)
		}
	case txn.CallRelease:
		if !t.MultiGroup() || !t.ReadOnly() {
			return fmt.Errorf("%w: only a multi-group read-only transaction is released without a certificate", txn.ErrInvalid)
		}
	case txn.CallProof:
		if !t.MultiGroup() || t.ReadOnly() {
			return fmt.Errorf("%w: only a multi-group update takes a termination proof", txn.ErrInvalid)
		}
		if err := keys.VerifyProof(t, id, c.Decision, c.Acks, e.self); err != nil {
			return fmt.Errorf("proof: %w", err)
		}
	}
	return nil
}

// validateMeta checks the metadata rules: only a metadata transaction
// carries an admin signature, and it must (M5); it involves every group of
// the cluster (M1); it writes no reserved key but the partition map, with
// `write` and a valid map over the cluster's groups (M2, M3).
func (e *Engine) validateMeta(t *txn.Txn, id txn.TxnID, admin *txn.AdminSig) error {
	if !t.WritesMetadata() {
		if admin != nil {
			return fmt.Errorf("%w: an admin signature on a data transaction", txn.ErrInvalid)
		}
		return nil
	}
	if admin == nil {
		return fmt.Errorf("%w: a metadata transaction needs an admin signature", txn.ErrSignature)
	}
	if err := e.keys.VerifyAdmin(id, admin); err != nil {
		return err
	}
	if !slices.Equal(t.GroupIDs(), e.groups) {
		return fmt.Errorf("%w: a metadata transaction involves every group %v, not %v", txn.ErrInvalid, e.groups, t.GroupIDs())
	}
	for i := range t.Ops {
		op := &t.Ops[i]
		if !op.Kind.IsUpdate() || !txn.IsReservedMetaKey(op.Key) {
			continue
		}
		if op.Kind != txn.OpWrite || !bytes.Equal(op.Key, txn.MetaPartitionsKey) {
			return fmt.Errorf("%w: operation %d: %s of reserved metadata key %q", txn.ErrInvalid, i, op.Kind, op.Key)
		}
		m, err := oracle.Decode(op.Value)
		if err != nil {
			return fmt.Errorf("operation %d: partition map: %w", i, err)
		}
		for _, g := range m.Groups() {
			if !e.keys.HasGroup(g) {
				return fmt.Errorf("%w: operation %d: the partition map names group %d, not in the cluster", txn.ErrInvalid, i, g)
			}
		}
	}
	return nil
}
