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
type checkpointStore struct {
	n          int
	perReplica int
	bySeq      map[SeqNum][]*bftpb.Checkpoint // indexed by replica
	seqsOf     [][]SeqNum                     // per replica, ascending
}

func newCheckpointStore(n, perReplica int) checkpointStore {
	return checkpointStore{n: n, perReplica: perReplica, bySeq: make(map[SeqNum][]*bftpb.Checkpoint), seqsOf: make([][]SeqNum, n)}
}

// add stores cp and reports whether it was new.
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
// matching checkpoints (G1).
func (cs *checkpointStore) certificate(s SeqNum, quorum int) *bftpb.CheckpointCert {
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
// seq (G1).
func (n *Node) takeCheckpoint(seq SeqNum, d Digest) {
	n.ownCps[seq] = d
	if seq <= n.h {
		return
	}
	cp := &bftpb.Checkpoint{Seq: uint64(seq), StateDigest: d[:], Replica: uint32(n.cfg.ID)}
	cp.Signature = n.sign(n.dom.CheckpointBytes(cp))
	n.cps.add(cp)
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Checkpoint{Checkpoint: cp}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_Checkpoint{Checkpoint: cp}})
	n.checkStable(seq)
}

func (n *Node) onCheckpoint(cp *bftpb.Checkpoint) {
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

func (n *Node) checkStable(s SeqNum) {
	if cert := n.cps.certificate(s, n.q.Quorum()); cert != nil {
		n.stabilize(cert)
	}
}

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
func (n *Node) stabilize(cert *bftpb.CheckpointCert) {
	s := SeqNum(cert.Seq)
	if s <= n.h {
		return
	}
	d, _ := digestFrom(cert.StateDigest)
	if s <= n.lastExecuted {
		own, ok := n.ownCps[s]
		n.adopt(cert)
		if ok && own != d {
			n.log.Warnf("r%d: own state digest %s at seq %d differs from the certified %s: fetching the certified state", n.cfg.ID, own, s, d)
			n.startTransfer(cert)
		}
		return
	}
	if n.transfer == nil && n.logCovers(s) {
		if n.pending == nil || SeqNum(n.pending.Seq) < s {
			n.pending = cert
		}
		return
	}
	n.adopt(cert)
	n.startTransfer(cert)
}

// logCovers reports whether every seq in (execCursor, s] is committed with
// its body in the log, so executing gets there without a state transfer.
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
// below it (G2).
func (n *Node) adopt(cert *bftpb.CheckpointCert) {
	s := SeqNum(cert.Seq)
	n.h, n.stable, n.hsDirty = s, cert, true
	n.stats.StableCheckpoints++
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
	if n.nextSeq <= s {
		n.nextSeq = s + 1
	}
	n.installDeferred()
	n.log.Debugf("r%d: stable checkpoint %d", n.cfg.ID, s)
}

// startTransfer asks the host for the state at cert (G3). Execution stops
// until StateInstalled; batches after the checkpoint execute afterwards.
func (n *Node) startTransfer(cert *bftpb.CheckpointCert) {
	d, _ := digestFrom(cert.StateDigest)
	n.transfer = &StateTarget{Seq: SeqNum(cert.Seq), Digest: d, Cert: cert}
	n.rd.StateTarget = n.transfer
	for _, sl := range n.slots {
		if sl.seq > SeqNum(cert.Seq) {
			sl.handedOff = false
		}
	}
	n.log.Debugf("r%d: state transfer to %d (executed %d)", n.cfg.ID, cert.Seq, n.lastExecuted)
}
