package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// peerStatus is the last Status hint from a peer. Hints only prompt
// fetches; what comes back proves itself (commit certificates, checkpoint
// certificates, NEW-VIEWs), so a lying peer costs bandwidth, not safety.
// Nothing in this file changes protocol state on a hint alone: state moves
// only when a self-certifying answer arrives and passes the Checker.
type peerStatus struct {
	known        bool
	view         View
	viewChanging bool
	stable       SeqNum
	lastExecuted SeqNum
	lastServed   uint64 // tick we last answered its COMMITTED fetch
}

// periodic runs every StatusInterval ticks: status hint, retransmission of
// what made no progress, catch-up.
//
// The Status (view, view-change flag, stable checkpoint, last executed) is
// unsigned and proves nothing; peers use it to decide what to re-send or
// fetch. During a view change every own VIEW-CHANGE since the last view
// entered is re-sent (vc.own, the last few), so that a lost one cannot keep
// the others from completing a view.
func (n *Node) periodic() {
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_Status{Status: &bftpb.Status{
		View: uint64(n.view), ViewChanging: n.viewChanging, StableSeq: uint64(n.h),
		LastExecuted: uint64(n.lastExecuted), Replica: uint32(n.cfg.ID),
	}}})
	if n.viewChanging {
		for _, vc := range n.vc.own {
			n.broadcast(&bftpb.Message{Body: &bftpb.Message_ViewChange{ViewChange: vc}})
		}
	}
	n.retransmit()
	n.catchUp()
}

// retransmit re-sends this replica's messages for slots of the current
// view that made no progress for a status interval, and its latest
// checkpoint above h, so that lost messages do not stall the group.
//
// Links lose messages (bounded queues, peers restarting), and the protocol
// has no acknowledgements. Only messages this replica already signed and
// persisted are re-sent, never a new signature, so retransmission cannot
// contradict P1 or P3. At most 2 × PipelineWindow slots per interval.
func (n *Node) retransmit() {
	// During a view change the old view's PRE-PREPAREs, PREPAREs and COMMITs
	// can no longer complete anything (V2: they are no longer accepted), and
	// what matters is the VIEW-CHANGE, which periodic re-sends.
	if n.viewChanging {
		return
	}
	// From the first batch not reported executed: below it nothing is
	// needed any more.
	budget := 2 * n.cfg.PipelineWindow
	for s := n.lastExecuted + 1; s <= n.highWatermark() && budget > 0; s++ {
		sl := n.slots[s]
		if sl == nil || n.now-sl.progress < uint64(n.cfg.StatusInterval) {
			continue
		}
		ph := sl.phases[n.view]
		if ph == nil || ph.pp == nil {
			continue
		}
		budget--
		sl.progress = n.now
		// The primary re-sends its PRE-PREPARE with the body; a backup its
		// PREPARE, or it asks again for the body it needs to PREPARE; every
		// replica its COMMIT.
		// Each is the stored message, with the signature made when it was
		// first sent: a backup that has not prepared yet sends no COMMIT, and
		// one that has not accepted the PRE-PREPARE sends no PREPARE, so
		// nothing here decides anything anew (P1, P3). The body goes with the
		// PRE-PREPARE because a backup may accept it only after checking the
		// digest and every request of the batch (N2).
		if n.IsPrimary() {
			if b := n.body(sl, ph.digest); b != nil {
				n.broadcast(&bftpb.Message{Body: &bftpb.Message_PrePrepare{PrePrepare: withBody(ph.pp, b)}})
			}
		} else if p := ph.prepares[n.cfg.ID]; p != nil {
			n.broadcast(&bftpb.Message{Body: &bftpb.Message_Prepare{Prepare: p}})
		} else if n.body(sl, ph.digest) == nil {
			n.fetchBody(s, ph.digest)
		}
		if c := ph.commits[n.cfg.ID]; c != nil {
			n.broadcast(&bftpb.Message{Body: &bftpb.Message_Commit{Commit: c}})
		}
	}
	var latest SeqNum
	for s := range n.ownCps {
		if s > n.h && s > latest {
			latest = s
		}
	}
	// A certificate needs 2f+1 CHECKPOINTs; a lost one could keep the
	// checkpoint from becoming stable, and the watermarks from moving.
	if latest > 0 {
		if row := n.cps.bySeq[latest]; row != nil && row[n.cfg.ID] != nil {
			n.broadcast(&bftpb.Message{Body: &bftpb.Message_Checkpoint{Checkpoint: row[n.cfg.ID]}})
		}
	}
	// The next batch to execute committed without its body (known by
	// certificate): ask again.
	if sl := n.slots[n.execCursor+1]; sl != nil && sl.committed && n.body(sl, sl.commitDigest) == nil {
		n.fetchBody(sl.seq, sl.commitDigest)
	}
}

// onStatus records a peer's Status hint. from is the sender the transport
// authenticated, so a faulty replica can lie only about itself; what it
// says moves nothing but the fetches and relays below.
func (n *Node) onStatus(from ReplicaID, st *bftpb.Status) {
	p := &n.peers[from]
	p.known = true
	p.view, p.viewChanging = View(st.View), st.ViewChanging
	p.stable, p.lastExecuted = SeqNum(st.StableSeq), SeqNum(st.LastExecuted)
	// A peer behind in views, or still changing to the last view we
	// entered, gets the NEW-VIEW that started it (V5 makes it
	// self-certifying). Any member may relay it: the Checker checks the
	// primary's signature, not the sender.
	//
	// Also while we are changing to a later view (simulator seed 16459): a
	// NEW-VIEW(v) some replicas missed (a partition) leaves them collecting
	// VIEW-CHANGEs for v that will never reach 2f+1 — the replicas that
	// entered v sent theirs and moved on, and faulty ones withhold — so V6's
	// timer never starts there. If the replicas that entered v then time
	// out to v+1 and are fewer than f+1 correct ones with the faulty
	// withholding their VIEW-CHANGE(v+1) from the others, V7 does not pull
	// the others along either, and neither side ever gets 2f+1: the group
	// stalls for good. The NEW-VIEW(v) brings them into v; there their
	// request timers run, and they ask for v+1 too.
	if nv := n.vc.newView; nv != nil {
		if last := View(nv.View); p.view < last || (p.view == last && p.viewChanging) {
			n.send(from, &bftpb.Message{Body: &bftpb.Message_NewView{NewView: nv}})
		}
	}
}

// catchUp fetches committed batches (with commit certificates) or the
// stable checkpoint certificate from a peer that reports more progress
// (G3), at most once per status interval, rotating over peers. A peer whose
// Status lies costs this replica one fetch per interval, and the rotation
// moves on to the next peer that reports progress.
func (n *Node) catchUp() {
	if n.now-n.lastFetch < uint64(n.cfg.StatusInterval) {
		return
	}
	// During a state transfer only a newer checkpoint helps
	// (supersedeTransfer).
	if n.transfer != nil {
		n.supersedeTransfer()
		return
	}
	// Not stuck if the next batch is committed and merely executing.
	if sl := n.slots[n.execCursor+1]; sl != nil && sl.committed && n.body(sl, sl.commitDigest) != nil {
		return
	}
	// Starting after the peer asked last time: a faulty peer that claims
	// progress and answers nothing gets one fetch, then the next peer that
	// reports progress gets the following one.
	for i := 1; i <= n.cfg.N; i++ {
		id := (n.fetchPeer + i) % n.cfg.N
		p := &n.peers[id]
		// A peer is ahead if it executed more, or if its stable checkpoint is
		// above ours: without that certificate the high watermark stays
		// where it is and batches beyond it cannot be taken (G2, G3).
		if ReplicaID(id) == n.cfg.ID || !p.known || (p.lastExecuted <= n.execCursor && p.stable <= n.h) {
			continue
		}
		// From the next batch to hand out, up to what the peer executed and
		// at most MaxFetchBatches; at least one seq, so that a peer ahead
		// only in its stable checkpoint answers with its certificate.
		from := n.execCursor + 1
		to := p.lastExecuted
		if max := from + SeqNum(n.cfg.MaxFetchBatches) - 1; to > max {
			to = max
		}
		if to < from {
			to = from
		}
		n.fetchPeer, n.lastFetch = id, n.now
		n.stats.Fetches++
		n.send(ReplicaID(id), &bftpb.Message{Body: &bftpb.Message_Fetch{Fetch: &bftpb.Fetch{
			Kind: bftpb.Fetch_KIND_COMMITTED, FromSeq: uint64(from), ToSeq: uint64(to), Replica: uint32(n.cfg.ID),
		}}})
		return
	}
}

// supersedeTransfer handles a state transfer whose target the group has
// moved past (G3): peers keep the state of their checkpoints only from their
// stable checkpoint up, so once every peer's stable checkpoint is above the
// target nobody can serve it, and waiting for it would never end — as after
// a restart that reloaded an old target. A peer that reports a newer stable
// checkpoint is asked for its certificate (a COMMITTED fetch from below its
// h answers with it), and the newer certificate supersedes the target.
func (n *Node) supersedeTransfer() {
	for i := 1; i <= n.cfg.N; i++ {
		id := (n.fetchPeer + i) % n.cfg.N
		p := &n.peers[id]
		if ReplicaID(id) == n.cfg.ID || !p.known || p.stable <= n.transfer.Seq {
			continue
		}
		n.fetchPeer, n.lastFetch = id, n.now
		n.stats.Fetches++
		n.send(ReplicaID(id), &bftpb.Message{Body: &bftpb.Message_Fetch{Fetch: &bftpb.Fetch{
			Kind: bftpb.Fetch_KIND_COMMITTED, FromSeq: uint64(n.transfer.Seq), ToSeq: uint64(n.transfer.Seq), Replica: uint32(n.cfg.ID),
		}}})
		return
	}
}

// fetchBody asks every peer for the body of the batch with digest d at s
// (V5), at most once per status interval per seq. Every peer, not just the
// primary: the primary may be faulty and withhold it, while a batch that
// committed is held by the f+1 or more correct replicas that prepared it.
func (n *Node) fetchBody(s SeqNum, d Digest) {
	if t, ok := n.bodyFetch[s]; ok && n.now-t < uint64(n.cfg.StatusInterval) {
		return
	}
	n.bodyFetch[s] = n.now
	n.stats.Fetches++
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_Fetch{Fetch: &bftpb.Fetch{
		Kind: bftpb.Fetch_KIND_BATCH, FromSeq: uint64(s), Digest: append([]byte(nil), d[:]...), Replica: uint32(n.cfg.ID),
	}}})
}

// onFetch answers a peer's fetch from the log. Answers are bounded per
// fetch and COMMITTED fetches are rate-limited per peer. Answering changes
// no protocol state, and every answer proves itself at the receiver, so a
// fetch needs no signature.
func (n *Node) onFetch(from ReplicaID, f *bftpb.Fetch) {
	switch f.Kind {
	case bftpb.Fetch_KIND_COMMITTED:
		p := &n.peers[from]
		// At most one answer per half status interval per peer: a faulty peer
		// cannot make this replica send MaxFetchBatches batches per message
		// it sends.
		if p.lastServed != 0 && n.now-p.lastServed < uint64(n.cfg.StatusInterval)/2 {
			n.stats.Dropped[dropDuplicate]++
			return
		}
		p.lastServed = n.now
		// The stable certificate goes to a peer that asks from below it, and
		// to one whose last status showed an older stable checkpoint: it may
		// have executed up to our h without ever collecting 2f+1 CHECKPOINTs
		// for it (they were sent while it was down), and without the
		// certificate its watermarks cannot move (G2, G3).
		if n.stable != nil && (SeqNum(f.FromSeq) <= n.h || p.stable < n.h) {
			n.send(from, &bftpb.Message{Body: &bftpb.Message_CheckpointCert{CheckpointCert: n.stable}})
		}
		sent := 0
		start := SeqNum(f.FromSeq)
		if start <= n.h {
			start = n.h + 1
		}
		// Committed batches from the first asked for (or h+1), each with the
		// PRE-PREPARE that carries its body and its commit certificate. The
		// answer stops at the first seq not committed here: the fetcher
		// executes in order, so batches past a gap would wait anyway.
		for s := start; s <= SeqNum(f.ToSeq) && s <= n.highWatermark() && sent < n.cfg.MaxFetchBatches; s++ {
			sl := n.slots[s]
			if sl == nil || !sl.committed || sl.commitPP == nil {
				break
			}
			b := n.body(sl, sl.commitDigest)
			if b == nil {
				break
			}
			sent++
			n.send(from, &bftpb.Message{Body: &bftpb.Message_CommittedBatch{CommittedBatch: &bftpb.CommittedBatch{
				PrePrepare: withBody(sl.commitPP, b), Cert: sl.commitCert,
			}}})
		}
	// The NEW-VIEW of the current view; nothing in the core sends this fetch
	// kind.
	case bftpb.Fetch_KIND_NEW_VIEW:
		if n.vc.newView != nil && View(f.View) <= n.view && !n.viewChanging {
			n.send(from, &bftpb.Message{Body: &bftpb.Message_NewView{NewView: n.vc.newView}})
		}
	case bftpb.Fetch_KIND_BATCH:
		sl := n.slots[SeqNum(f.FromSeq)]
		d, _ := digestFrom(f.Digest)
		// Whatever body the slot holds for d (the receiver checks it against
		// d). The null batch needs no body. Serving a body commits this
		// replica to nothing: the receiver takes it only for a digest its own
		// log names (onBatchBody).
		if sl == nil || d == n.null {
			return
		}
		if b := sl.bodies[d]; b != nil {
			n.send(from, &bftpb.Message{Body: &bftpb.Message_BatchBody{BatchBody: &bftpb.BatchBody{Seq: f.FromSeq, Digest: f.Digest, Batch: b}}})
		}
	}
}

// onCommittedBatch takes a batch proven committed by 2f+1 COMMITs (G3). It
// is taken without local prepared (N6 asks for it at committed-local): the
// certificate shows that f+1 correct replicas prepared the batch, so every
// later view keeps it (Checker.CommitCert). Only seqs this replica still
// needs (above what it handed out and above h) and can hold (at most H) are
// taken.
func (n *Node) onCommittedBatch(cb *bftpb.CommittedBatch) {
	pp := cb.PrePrepare
	s := SeqNum(pp.Seq)
	// Already handed out, or decided by the stable checkpoint.
	if s <= n.execCursor || s <= n.h {
		n.stats.Dropped[dropStale]++
		return
	}
	// Beyond the log's bound; the stable certificate that moves H comes in
	// the same catch-up answer when this replica needs it (onFetch).
	if s > n.highWatermark() {
		n.stats.Dropped[dropWatermark]++
		return
	}
	// The Checker verified the certificate: 2f+1 COMMITs for (v, s, d) from
	// distinct replicas, each signed, and the PRE-PREPARE's signature by the
	// primary of v, with the body matching d.
	sl := n.slotFor(s)
	d, _ := digestFrom(pp.Digest)
	// A slot already committed keeps its certificate. A second certificate
	// for another batch means more than f replicas are faulty: markCommitted
	// stops the replica rather than let it diverge.
	if sl.committed {
		if sl.commitDigest != d {
			n.markCommitted(sl, View(pp.View), d, pp, cb.Cert)
			return
		}
		n.stats.Dropped[dropDuplicate]++
		return
	}
	sl.addBody(d, pp.Batch)
	sl.bodyPersisted[d] = true
	// Persisted, the PRE-PREPARE with its body and the 2f+1 COMMITs: a
	// restarted replica rebuilds the commit from them (restorePhase) instead
	// of fetching again.
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: pp}})
	for _, c := range cb.Cert.Commits {
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Commit{Commit: c}})
	}
	n.stats.CommittedFetched++
	n.markCommitted(sl, View(pp.View), d, pp, cb.Cert)
}

// onBatchBody takes a body the log references by digest: a PRE-PREPARE of
// some view, or the commit certificate, must name d, so a peer cannot plant
// a body; the Checker verified the body against d.
func (n *Node) onBatchBody(bb *bftpb.BatchBody) {
	sl := n.slots[SeqNum(bb.Seq)]
	if sl == nil {
		n.stats.Dropped[dropStale]++
		return
	}
	d, _ := digestFrom(bb.Digest)
	// Only a body this replica waits for is stored: otherwise a peer could
	// fill the log's memory with verified but useless bodies (G2).
	wanted := sl.committed && sl.commitDigest == d
	for _, ph := range sl.phases {
		if ph.pp != nil && ph.digest == d {
			wanted = true
		}
	}
	if !wanted || !sl.addBody(d, bb.Batch) {
		n.stats.Dropped[dropDuplicate]++
		return
	}
	n.onNewBody(sl, d, bb.Batch)
}
