package bft

import "github.com/augustus-db/augustus/internal/invariants"

// checkInvariants asserts, under the invariants build tag (tests and the
// simulator), what must hold between any two calls into the node. None of
// it depends on input: a violation is a bug in the core, never a faulty
// peer.
func (n *Node) checkInvariants() {
	if !invariants.Enabled || n.stopped != nil {
		return
	}
	// Execution is handed out in order and reported in order (N7): the host
	// can only report what it was given.
	invariants.Check(n.lastExecuted <= n.execCursor, "r%d: executed %d beyond the handed-out %d", n.cfg.ID, n.lastExecuted, n.execCursor)
	// The stable checkpoint is adopted only once executed, or together with
	// a state transfer that will install it (G2, G3).
	invariants.Check(n.h <= n.lastExecuted || n.transfer != nil, "r%d: stable checkpoint %d above executed %d without a transfer", n.cfg.ID, n.h, n.lastExecuted)
	// A primary never proposes at or below the low watermark (N1, G2).
	invariants.Check(n.nextSeq > n.h, "r%d: next seq %d at or below h %d", n.cfg.ID, n.nextSeq, n.h)
	for s, sl := range n.slots {
		// The log holds only (h, ...]: garbage collection ran (G2).
		invariants.Check(s > n.h, "r%d: slot %d kept at or below h %d", n.cfg.ID, s, n.h)
		invariants.Check(sl.seq == s, "r%d: slot %d filed under %d", n.cfg.ID, sl.seq, s)
		if sl.committed {
			invariants.Check(sl.commitCert != nil || sl.commitPP != nil, "r%d: slot %d committed without proof", n.cfg.ID, s)
		}
		// A correct replica signs at most one PREPARE per (v, s) (P3) and
		// never one contradicting a batch committed at s (V5, G2).
		if ph := sl.phases[n.view]; ph != nil && sl.committed && !n.viewChanging {
			if p := ph.prepares[n.cfg.ID]; p != nil && ph.view > sl.commitView {
				invariants.Check(string(p.Digest) == string(sl.commitDigest[:]), "r%d: PREPARE(v%d, s%d) for another batch than the one committed", n.cfg.ID, ph.view, s)
			}
		}
	}
	if n.transfer != nil {
		invariants.Check(n.transfer.Seq >= n.h, "r%d: transfer to %d below h %d", n.cfg.ID, n.transfer.Seq, n.h)
	}
}
