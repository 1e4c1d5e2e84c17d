package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// phase is what a replica knows about one (view, seq): the PRE-PREPARE
// (header only; bodies live in the slot), and the PREPAREs and COMMITs by
// sender. Only the first message per sender is kept. prepared is N4 for
// this view; digest is the PRE-PREPARE's, the one votes must match.
//
// Votes are indexed by replica id, one entry each, so counting them counts
// distinct replicas (N4, N6): a faulty replica that sends many PREPAREs
// fills one entry, and its later ones, even with another digest, are
// dropped. The quorum intersection arguments need exactly that. Votes are
// kept whatever digest they name: one may arrive before the PRE-PREPARE it
// matches, and only those that match digest are counted.
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
	// A body is written to disk once per digest (onNewBody) however many
	// PRE-PREPAREs name it; after a restart the record lets the replica
	// execute a committed batch and serve it to peers (G3, V5) without
	// fetching it again.
	bodyPersisted map[Digest]bool

	// prepared is the prepared certificate of the highest view (V2). It
	// outlives the phase it came from (enterView drops older phases): a
	// VIEW-CHANGE to any later view must still report it, or a batch that
	// committed in that view could be replaced by the new primary (V4).
	prepared *bftpb.PreparedCert

	// committed: the batch with commitDigest committed (N6 or a commit
	// certificate), proven by commitCert; commitPP is its PRE-PREPARE.
	// Once committed is set the slot's batch is decided for good: a second
	// commit certificate with another digest takes more than f faulty
	// replicas and stops the node (markCommitted). commitCert and commitPP
	// are what catch-up sends to a lagging peer (onFetch, G3), so the peer
	// needs no local prepared certificate to accept the batch.
	committed    bool
	commitDigest Digest
	commitView   View
	commitCert   *bftpb.CommitCert
	commitPP     *bftpb.PrePrepare

	// handedOff is set when the batch goes into a Ready's Executions, so that
	// it is handed out once (N7); startTransfer clears it above the target,
	// whose earlier executions the install voids. progress is moved by a new
	// PRE-PREPARE, prepared or committed; a slot of the current view that
	// stays still for a status interval has its own messages re-sent
	// (retransmit).
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
// known: V4 fills gaps in a NEW-VIEW's O with it, and no replica could
// fetch a body for it, since none was ever sent.
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

// pruneSlots discards slots at or below h (G2). Everything they held is
// covered by the stable checkpoint's certificate: 2f+1 replicas (f+1 correct)
// reached the state after h, a replica behind it transfers that state (G3),
// and a VIEW-CHANGE reports nothing at or below its checkpoint (V2, V3).
// Pending body fetches for those seqs go too.
func (n *Node) pruneSlots() {
	for s := range n.slots {
		if s <= n.h {
			delete(n.slots, s)
			delete(n.bodyFetch, s)
		}
	}
}
