package bft

import (
	"sort"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// checkpointStore keeps CHECKPOINT messages above h, indexed by seq and
// sender. Each replica may hold entries for at most perReplica seqs (its
// oldest are evicted), so a flood of checkpoints cannot grow memory (G2),
// while checkpoints far above H are still kept: they tell a lagging replica
// it is behind (G3).
//
// Only this replica's own CHECKPOINTs are persisted (takeCheckpoint): what
// matters after a crash is the certificate, persisted in the hard state
// when the checkpoint becomes stable (P2).
type checkpointStore struct {
	n          int
	perReplica int
	bySeq      map[SeqNum][]*bftpb.Checkpoint // indexed by replica
	seqsOf     [][]SeqNum                     // per replica, ascending
}

func newCheckpointStore(n, perReplica int) checkpointStore {
	return checkpointStore{n: n, perReplica: perReplica, bySeq: make(map[SeqNum][]*bftpb.Checkpoint), seqsOf: make([][]SeqNum, n)}
}

// add stores cp and reports whether it was new. The first CHECKPOINT per
// (seq, sender) is kept; a correct replica signs one per seq. A sender
// holding more than perReplica seqs loses its lowest ones, so a faulty
// replica flooding checkpoints displaces only its own (G2).
func (cs *checkpointStore) add(cp *bftpb.Checkpoint) bool {
	s, r := SeqNum(cp.Seq), int(cp.Replica)
	row := cs.bySeq[s]
	if row == nil {
		row = make([]*bftpb.Checkpoint, cs.n)
		cs.bySeq[s] = row
	}
	if row[r] != nil {
		return false
	}
	// Sorted per sender, so eviction takes the sender's lowest seq. A correct
	// sender stays within the bound unless this replica lags, and then its
	// highest checkpoints are the ones that tell this replica so (G3).
	row[r] = cp
	seqs := append(cs.seqsOf[r], s)
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	for len(seqs) > cs.perReplica {
		cs.drop(seqs[0], r)
		seqs = seqs[1:]
	}
	cs.seqsOf[r] = seqs
	return true
}

// drop forgets r's CHECKPOINT at s, and the row of s once it is empty.
func (cs *checkpointStore) drop(s SeqNum, r int) {
	if row := cs.bySeq[s]; row != nil {
		row[r] = nil
		for _, c := range row {
			if c != nil {
				return
			}
		}
		delete(cs.bySeq, s)
	}
}

// certificate returns a checkpoint certificate at s if 2f+1 replicas sent
// matching checkpoints (G1), this replica's own counting like any other. It
// holds exactly 2f+1 CHECKPOINTs, the first matching ones in replica order.
// Why 2f+1 and not f+1: see Checker.checkpointProof.
func (cs *checkpointStore) certificate(s SeqNum, quorum int) *bftpb.CheckpointCert {
	// Different digests at one seq may coexist (a faulty replica's, or a
	// correct one with a diverged state); each digest is tried from its first
	// sender. At most one digest can reach 2f+1, since two such sets would
	// share a correct replica, which signs one CHECKPOINT per seq.
	row := cs.bySeq[s]
	for i, c := range row {
		if c == nil {
			continue
		}
		var match []*bftpb.Checkpoint
		for _, o := range row[i:] {
			if o != nil && string(o.StateDigest) == string(c.StateDigest) {
				match = append(match, o)
			}
		}
		if len(match) >= quorum {
			return &bftpb.CheckpointCert{Seq: c.Seq, StateDigest: c.StateDigest, Checkpoints: match[:quorum]}
		}
	}
	return nil
}

// pruneUpTo forgets checkpoints at or below h.
func (cs *checkpointStore) pruneUpTo(h SeqNum) {
	for s := range cs.bySeq {
		if s <= h {
			delete(cs.bySeq, s)
		}
	}
	for r, seqs := range cs.seqsOf {
		i := 0
		for i < len(seqs) && seqs[i] <= h {
			i++
		}
		cs.seqsOf[r] = seqs[i:]
	}
}

// takeCheckpoint signs and sends this replica's checkpoint after executing
// seq (G1): seq is a multiple of K, and the host has committed the state
// after seq and reported its digest (P2, Executed). The CHECKPOINT is
// persisted before it leaves (P1) and counts towards the certificate like
// the others'. The own digest is remembered (ownCps) so that stabilize can
// tell whether this replica's state agrees with the certified one.
func (n *Node) takeCheckpoint(seq SeqNum, d Digest) {
	n.ownCps[seq] = d
	// At or below h the group made the checkpoint stable without this
	// replica's vote: nothing to send.
	if seq <= n.h {
		return
	}
	// Persisted with the round, before the broadcast leaves (P1); after a
	// restart restoreRecord puts it back, so retransmit re-sends this very
	// message and the replica never signs another digest for seq.
	cp := &bftpb.Checkpoint{Seq: uint64(seq), StateDigest: d[:], Replica: uint32(n.cfg.ID)}
	cp.Signature = n.sign(n.dom.CheckpointBytes(cp))
	n.cps.add(cp)
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Checkpoint{Checkpoint: cp}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_Checkpoint{Checkpoint: cp}})
	n.checkStable(seq)
}

// onCheckpoint takes another replica's CHECKPOINT (G1). At or below h it is
// stale. Above H it is kept too, bounded per sender: a certificate far
// above H tells this replica it is behind (G3).
func (n *Node) onCheckpoint(cp *bftpb.Checkpoint) {
	// At or below h the stable certificate already decided, and G2 has
	// discarded the older checkpoints.
	if SeqNum(cp.Seq) <= n.h {
		n.stats.Dropped[dropStale]++
		return
	}
	if !n.cps.add(cp) {
		n.stats.Dropped[dropDuplicate]++
		return
	}
	n.checkStable(SeqNum(cp.Seq))
}

// checkStable acts on a certificate at s once 2f+1 matching CHECKPOINTs
// are held.
func (n *Node) checkStable(s SeqNum) {
	if cert := n.cps.certificate(s, n.q.Quorum()); cert != nil {
		n.stabilize(cert)
	}
}

// onCheckpointCert takes a certificate a peer sent whole in catch-up
// (onFetch). The Checker verified its 2f+1 signatures, so who sent it does
// not matter.
func (n *Node) onCheckpointCert(cert *bftpb.CheckpointCert) {
	if SeqNum(cert.Seq) <= n.h {
		n.stats.Dropped[dropStale]++
		return
	}
	n.stabilize(cert)
}

// stabilize acts on a checkpoint certificate (G2, G3). At or below the last
// executed seq it becomes the stable checkpoint at once — unless this
// replica's own digest differs, in which case its state is wrong and it
// fetches the certified state. Above it, the replica waits if its log holds
// every committed batch up to the checkpoint, and otherwise fetches the
// state.
//
// The wait is the pending certificate, a departure from pbft.md G2 (where
// h is the last stable checkpoint as soon as its certificate exists).
// Execution is asynchronous, so a replica often holds a certificate for a
// seq it has committed but not executed yet. Adopting it at once would
// garbage-collect those committed batches (G2) and force a state transfer
// it does not need. Instead, while its own log reaches the checkpoint, the
// replica keeps the certificate aside and adopts it when Executed passes
// its seq, comparing its own digest then. Only the highest pending
// certificate is kept, and it is not persisted: after a restart the replica
// learns it again from its peers (retransmitted CHECKPOINTs, or the stable
// certificate in a catch-up answer). Meanwhile h, and so H, lag behind the
// group; a NEW-VIEW whose min-s is above h is then the case vc.floor covers.
func (n *Node) stabilize(cert *bftpb.CheckpointCert) {
	s := SeqNum(cert.Seq)
	if s <= n.h {
		return
	}
	d, _ := digestFrom(cert.StateDigest)
	// Executed up to s: adopt. If the own digest at s differs, this replica's
	// state diverged from the one 2f+1 replicas (f+1 correct) reached — a
	// local fault, such as a non-deterministic application — and it fetches
	// the certified state rather than go on from its own.
	if s <= n.lastExecuted {
		own, ok := n.ownCps[s]
		n.adopt(cert)
		if ok && own != d {
			n.log.Warnf("r%d: own state digest %s at seq %d differs from the certified %s: fetching the certified state", n.cfg.ID, own, s, d)
			n.startTransfer(cert)
		}
		return
	}
	// The log reaches s and no transfer runs: wait for execution (pending).
	if n.transfer == nil && n.logCovers(s) {
		if n.pending == nil || SeqNum(n.pending.Seq) < s {
			n.pending = cert
		}
		return
	}
	// Behind beyond the log (or already transferring, and a newer target
	// replaces the old): adopt now, which moves the watermarks, and fetch
	// the state (G3).
	n.adopt(cert)
	n.startTransfer(cert)
}

// logCovers reports whether every seq in (execCursor, s] is committed with
// its body in the log, so executing gets there without a state transfer.
// Batches up to execCursor are already with the host and will be reported.
func (n *Node) logCovers(s SeqNum) bool {
	for x := n.execCursor + 1; x <= s; x++ {
		sl := n.slots[x]
		if sl == nil || !sl.committed || n.body(sl, sl.commitDigest) == nil {
			return false
		}
	}
	return true
}

// adopt makes cert the stable checkpoint and garbage-collects the log
// below it (G2): h = s and H = s + L. Slots at or below s go, with their
// PRE-PREPAREs, PREPAREs, COMMITs and certificates, and so do older
// CHECKPOINTs, own digests and the log records on disk. The deletes go in
// the same atomic write as the hard state that records the new stable
// certificate (P2), so a restart finds either the old checkpoint with its
// log or the new one without it. Memory stays bounded: the log holds at
// most L seqs, whatever arrives.
func (n *Node) adopt(cert *bftpb.CheckpointCert) {
	s := SeqNum(cert.Seq)
	// hsDirty: the certificate goes into the next Ready's hard state, in the
	// same write as the deletes below (P2).
	n.h, n.stable, n.hsDirty = s, cert, true
	n.stats.StableCheckpoints++
	// A pending certificate at or below s is superseded.
	if n.pending != nil && SeqNum(n.pending.Seq) <= s {
		n.pending = nil
	}
	n.pruneSlots()
	n.cps.pruneUpTo(s)
	for x := range n.ownCps {
		if x < s {
			delete(n.ownCps, x)
		}
	}
	n.rd.Deletes = append(n.rd.Deletes, slotRecordsUpTo(s), checkpointRecordsUpTo(s))
	// A primary never proposes at or below h (N1): backups would drop such a
	// PRE-PREPARE (N2), and the seqs are decided by the certificate.
	if n.nextSeq <= s {
		n.nextSeq = s + 1
	}
	// NEW-VIEW entries the moved H now admits (V5).
	n.installDeferred()
	n.log.Debugf("r%d: stable checkpoint %d", n.cfg.ID, s)
}

// startTransfer asks the host for the state at cert (G3). Execution stops
// until StateInstalled; batches after the checkpoint execute afterwards.
//
// The host fetches the state from peers, checks it against the certified
// digest, installs it atomically and calls StateInstalled. Batches above
// the target that were handed out before are void — the host ignores their
// results (transfer generations), since they ran on the state the install
// replaces — so they are marked to be handed out again. A newer target
// replaces an older one.
func (n *Node) startTransfer(cert *bftpb.CheckpointCert) {
	d, _ := digestFrom(cert.StateDigest)
	// The target carries the certificate, so the host can check the fetched
	// state against a digest 2f+1 replicas signed, and a peer that serves
	// another state is caught (G3).
	n.transfer = &StateTarget{Seq: SeqNum(cert.Seq), Digest: d, Cert: cert}
	n.rd.StateTarget = n.transfer
	for _, sl := range n.slots {
		if sl.seq > SeqNum(cert.Seq) {
			sl.handedOff = false
		}
	}
	n.log.Debugf("r%d: state transfer to %d (executed %d)", n.cfg.ID, cert.Seq, n.lastExecuted)
}
