package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// phase is what a replica knows about one (view, seq): the PRE-PREPARE
// (header only; bodies live in the slot), and the PREPAREs and COMMITs by
// sender. Only the first message per sender is kept. prepared is N4 for
// this view; digest is the PRE-PREPARE's, the one votes must match.
type phase struct {
	view     View
	pp       *bftpb.PrePrepare
	digest   Digest
	prepares []*bftpb.Prepare
	commits  []*bftpb.Commit
	prepared bool
}

// slot is what a replica knows about one sequence number in (h, h+L]: one
// phase per view it heard of (those of views before the current one are
// dropped when a view is entered, enterView), the batch bodies, and what
// outlives the phases: the prepared certificate of the highest view (V2) and
// the commit certificate (N6, G3).
type slot struct {
	seq    SeqNum
	phases map[View]*phase
	// bodies by digest; usually one.
	bodies map[Digest]*bftpb.Batch
	// bodyPersisted records digests whose body is in a persisted PRE-PREPARE.
	bodyPersisted map[Digest]bool

	// prepared is the prepared certificate of the highest view (V2).
	prepared *bftpb.PreparedCert

	// committed: the batch with commitDigest committed (N6 or a commit
	// certificate), proven by commitCert; commitPP is its PRE-PREPARE.
	committed    bool
	commitDigest Digest
	commitView   View
	commitCert   *bftpb.CommitCert
	commitPP     *bftpb.PrePrepare

	handedOff bool   // given to the host for execution
	progress  uint64 // tick of the last progress, for retransmission
}

// slotFor returns the slot of s, creating it. Callers have checked that s
// is within the watermarks, so the log stays bounded by L (G2).
func (n *Node) slotFor(s SeqNum) *slot {
	sl := n.slots[s]
	if sl == nil {
		sl = &slot{seq: s, phases: make(map[View]*phase, 1), bodies: make(map[Digest]*bftpb.Batch, 1), bodyPersisted: make(map[Digest]bool, 1), progress: n.now}
		n.slots[s] = sl
	}
	return sl
}

// phase returns the phase of view v, creating it with one vote entry per
// replica. Views are bounded by the callers (viewState: the current view
// and MaxFutureViews above it).
func (sl *slot) phase(v View, n int) *phase {
	ph := sl.phases[v]
	if ph == nil {
		ph = &phase{view: v, prepares: make([]*bftpb.Prepare, n), commits: make([]*bftpb.Commit, n)}
		sl.phases[v] = ph
	}
	return ph
}

// body returns the batch with digest d, if known. The null batch is always
// known.
func (n *Node) body(sl *slot, d Digest) *bftpb.Batch {
	if d == n.null {
		return emptyBatch
	}
	return sl.bodies[d]
}

// emptyBatch is the body of the null batch; shared, never modified.
var emptyBatch = &bftpb.Batch{}

// addBody stores a verified body and reports whether it was new. Bodies
// are verified against their digest by the Checker before they get here.
func (sl *slot) addBody(d Digest, b *bftpb.Batch) bool {
	if b == nil || sl.bodies[d] != nil {
		return false
	}
	sl.bodies[d] = b
	return true
}

// header returns a copy of pp without its body. Phases, certificates and
// NEW-VIEWs hold headers; a body is attached only when a PRE-PREPARE is
// persisted or sent with its batch (withBody).
func header(pp *bftpb.PrePrepare) *bftpb.PrePrepare {
	if pp.Batch == nil {
		return pp
	}
	return &bftpb.PrePrepare{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: pp.Replica, Signature: pp.Signature}
}

// withBody returns a copy of the header pp carrying body b.
func withBody(pp *bftpb.PrePrepare, b *bftpb.Batch) *bftpb.PrePrepare {
	return &bftpb.PrePrepare{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: pp.Replica, Signature: pp.Signature, Batch: b}
}

// pruneSlots discards slots at or below h (G2).
func (n *Node) pruneSlots() {
	for s := range n.slots {
		if s <= n.h {
			delete(n.slots, s)
			delete(n.bodyFetch, s)
		}
	}
}
