package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// onRequest handles a client request that passed Checker.Request, from the
// client (Propose) or forwarded by another replica (C3, C4, V1); both are
// handled alike (forwarded is not used).
//
// The client table decides first (C2): a request already executed gets its
// cached reply again; one at or below the client's low watermark gets a
// STALE reply (pbft.md C2 drops it: the reply lets the client learn at once
// that it will never execute); one above the window is refused until the
// window moves. Only a request the table would execute is held as pending:
// the primary queues it for the next batch (N1); a backup forwards it to
// the primary and starts its request timer (C4, V1), so that a primary that
// ignores it is replaced.
func (n *Node) onRequest(r *bftpb.Request, forwarded bool) error {
	key := reqKey{ClientID(r.Client), r.Timestamp}
	cs := n.clients.m[key.client]
	switch disp, low := n.clients.classify(cs, r); disp {
	case dispDuplicate:
		// A duplicate whose batch is still executing (done is false) is
		// answered when the host reports that execution (Executed).
		if cr := cs.replies[r.Timestamp]; cr.done {
			n.reply(key, bftpb.ReplyStatus_REPLY_STATUS_OK, cr.result, 0)
		}
		return nil
	case dispStale:
		n.reply(key, bftpb.ReplyStatus_REPLY_STATUS_STALE, nil, low)
		return nil
	case dispRefused:
		n.stats.Dropped[dropRequest]++
		return ErrOutsideWindow
	}
	if p := n.reqs.m[key]; p != nil {
		// Retransmission: the client has not heard back, so a backup forwards
		// it to the primary again (C4), at most once per status interval.
		if !n.IsPrimary() && !n.viewChanging && n.now-p.lastForward >= uint64(n.cfg.StatusInterval) {
			p.lastForward = n.now
			n.send(n.Primary(), &bftpb.Message{Body: &bftpb.Message_Request{Request: r}})
		}
		n.stats.Dropped[dropDuplicate]++
		return nil
	}
	// Bounded, so that a flood of valid requests cannot grow memory without
	// bound; the client retransmits later (C4).
	if n.reqs.len() >= n.cfg.MaxPendingRequests {
		n.stats.Dropped[dropRequest]++
		return ErrBusy
	}
	// The request digest is computed once, here, and reused for the batch
	// digest (batchDigestFromRequestDigests).
	p := n.reqs.add(key, r, n.dom.RequestDigest(r))
	// During a view change there is no primary to send it to.
	if n.viewChanging {
		return nil // forwarded or queued when the new view starts
	}
	// The primary cuts batches in Ready (propose), so every request that
	// arrives in one round can join one batch.
	if n.IsPrimary() {
		n.reqs.enqueue(p)
		return nil
	}
	p.lastForward = n.now
	n.send(n.Primary(), &bftpb.Message{Body: &bftpb.Message_Request{Request: r}})
	// V1: the timer runs while this backup holds a request it has not seen
	// executed; further requests do not restart it. If the primary never
	// orders one (it is faulty, or the request never reached it), the timer
	// expires and the backup starts a view change. After view changes without
	// progress the timeout is doubled (V6, backoff).
	if !n.reqTimer.active {
		n.reqTimer.start(n.now, n.backoff(n.cfg.RequestTimeout)) // V1
	}
	return nil
}

// reply queues a reply to a client (C3). The host adds a MAC under the
// pairwise key of this replica and the client (DESIGN.md §3) and sends it.
// Every replica that executes a request replies, so the client can wait for
// f+1 matching replies from distinct replicas, at least one of them correct;
// the view tells the client who is primary now. In a STALE reply, low is the
// client's low watermark at this replica.
func (n *Node) reply(key reqKey, status bftpb.ReplyStatus, result []byte, low uint64) {
	n.rd.Replies = append(n.rd.Replies, &bftpb.Reply{
		View: uint64(n.view), Client: []byte(key.client), Timestamp: key.ts,
		Replica: uint32(n.cfg.ID), Status: status, Result: result, Low: low,
	})
}

// inflight is the number of batches pre-prepared and not yet executed. It
// counts until the host reports execution (lastExecuted), not until commit,
// so a slow executor holds the primary back: the pipeline window of N1 is
// also the group's backpressure.
func (n *Node) inflight() int {
	if n.nextSeq <= n.lastExecuted+1 {
		return 0
	}
	return int(n.nextSeq - 1 - n.lastExecuted)
}

// canPropose reports whether the primary may cut a batch now (N1): it is
// the primary of an active view, has queued requests, the pipeline window
// has room and the next seq is within the high watermark. Above H every
// backup would drop the PRE-PREPARE (N2, G2); at or below h the stable
// checkpoint already decided the seq.
func (n *Node) canPropose() bool {
	return !n.viewChanging && n.IsPrimary() && len(n.reqs.queue) > 0 &&
		n.inflight() < n.cfg.PipelineWindow && n.nextSeq > n.h && n.nextSeq <= n.highWatermark()
}

// propose cuts batches while it may (N1): never waiting for a full batch,
// so an idle primary proposes a single request at once and a loaded one
// proposes whatever queued while the window was full.
func (n *Node) propose() {
	for n.canPropose() {
		batch, digests := n.cutBatch()
		// Every queued request was stale or already in flight.
		if len(batch.Requests) == 0 {
			return
		}
		n.proposeBatch(batch, digests)
	}
}

// cutBatch takes requests from the head of the primary's queue, in arrival
// order, up to the batch limits (N1; the Checker applies the same limits at
// the backups). The queue is cleaned lazily: an entry whose request has
// since executed, been answered or been replaced is skipped, and so is a
// request already in a batch in flight — a client's retransmission must not
// be ordered twice — or one the client table would no longer execute (C2).
// Skipped entries leave the queue with the taken ones.
func (n *Node) cutBatch() (*bftpb.Batch, []Digest) {
	batch := &bftpb.Batch{}
	var digests []Digest
	bytes := 0
	q := n.reqs.queue
	i := 0
	for ; i < len(q); i++ {
		p := q[i]
		if n.reqs.m[p.key] != p {
			continue // executed, stale or replaced since it was queued
		}
		if _, busy := n.reqs.inflight[p.key]; busy {
			continue
		}
		if disp, _ := n.clients.classify(n.clients.m[p.key.client], p.req); disp != dispExecute {
			continue
		}
		// The first request always fits (MaxRequestBytes <= MaxBatchBytes),
		// so a batch is never empty while a request waits.
		if len(batch.Requests) == n.cfg.MaxBatchRequests || (len(batch.Requests) > 0 && bytes+p.size > n.cfg.MaxBatchBytes) {
			break
		}
		batch.Requests = append(batch.Requests, p.req)
		digests = append(digests, p.digest)
		bytes += p.size
		// Remembered until it executes (Executed) or a new view rebuilds the
		// set (enterView).
		n.reqs.inflight[p.key] = n.nextSeq
	}
	n.reqs.queue = q[i:]
	return batch, digests
}

// proposeBatch is N1 at the primary: it assigns the next seq, signs
// PRE-PREPARE(v, s, d) — the signature covers the header; the body travels
// beside it — and records it as the view's PRE-PREPARE for s. The record,
// with the body, is persisted before the broadcast leaves (P1): a primary
// that forgot after a crash which seqs it used could sign a second
// PRE-PREPARE for a (v, s), equivocating like a faulty one (P3, and
// restore's nextSeq). The primary sends no PREPARE (N3): its PRE-PREPARE
// stands for it.
func (n *Node) proposeBatch(batch *bftpb.Batch, digests []Digest) {
	s := n.nextSeq
	n.nextSeq++
	d := batchDigestFromRequestDigests(digests)
	pp := &bftpb.PrePrepare{View: uint64(n.view), Seq: uint64(s), Digest: d[:], Replica: uint32(n.cfg.ID)}
	pp.Signature = n.sign(n.dom.PrePrepareBytes(pp))
	sl := n.slotFor(s)
	ph := sl.phase(n.view, n.cfg.N)
	ph.pp, ph.digest = pp, d
	sl.addBody(d, batch)
	sl.bodyPersisted[d] = true
	sl.progress = n.now
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: withBody(pp, batch)}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_PrePrepare{PrePrepare: withBody(pp, batch)}})
	n.stats.BatchesProposed++
	n.stats.RequestsProposed += uint64(len(batch.Requests))
}

// viewState tells how a message of view v relates to the node's view: act
// on it now, buffer it (the view is the target of a view change in progress
// or a bounded distance ahead, N4), or drop it.
//
// A message of an older view is dropped: this replica left that view (V2),
// and its VIEW-CHANGE reported what it had prepared there; preparing more in
// the old view would make the report false. A message for the target of a
// view change in progress is kept but not acted on until the NEW-VIEW
// arrives (V2, V5). Buffering is bounded by MaxFutureViews (N4).
func (n *Node) viewState(v View) (active, keep bool) {
	switch {
	case v == n.view:
		return !n.viewChanging, true
	case v > n.view && v <= n.view+n.cfg.MaxFutureViews:
		return false, true
	default:
		return false, false
	}
}

// onPrePrepare handles a PRE-PREPARE (N2). The Checker verified the
// signature of the primary of v, the body against the digest and every
// request in it; what remains depends on state: v is the current view (act)
// or one that may be buffered (N4), h < s <= H (G2), s above the new-view
// floor (V5), and no other PRE-PREPARE accepted for (v, s).
func (n *Node) onPrePrepare(pp *bftpb.PrePrepare) {
	v, s := View(pp.View), SeqNum(pp.Seq)
	// Defensive: the Checker makes the signer the sender and the primary of
	// v, and Step drops messages from this replica itself, so a checked
	// message never gets here.
	if n.primaryOf(v) == n.cfg.ID {
		n.stats.Dropped[dropNotPrimary]++ // claims to be us
		return
	}
	active, keep := n.viewState(v)
	if !keep {
		n.stats.Dropped[dropWrongView]++
		return
	}
	if !n.inWindow(s) || (v == n.view && !n.viewChanging && s <= n.vc.floor) {
		// G2: the watermarks bound the log, and so memory, and keep a faulty
		// primary from using up sequence numbers far ahead; at or below h the
		// stable checkpoint decided. V5: at or below min-s of the view's
		// NEW-VIEW there is nothing to pre-prepare (see
		// viewChangeState.floor).
		n.stats.Dropped[dropWatermark]++
		return
	}
	d, _ := digestFrom(pp.Digest)
	sl := n.slotFor(s)
	ph := sl.phase(v, n.cfg.N)
	// N2: one PRE-PREPARE per (v, s). A second one with another digest is the
	// primary equivocating: counted and refused. Accepting it would let this
	// backup PREPARE two batches at one (v, s), the one thing that keeps
	// prepared certificates unique. The same digest again may bring the body
	// the first one lacked.
	if ph.pp != nil {
		if ph.digest != d {
			n.stats.Equivocations++ // N2: one PRE-PREPARE per (v, s)
			n.stats.Dropped[dropConflict]++
			return
		}
		if pp.Batch != nil && sl.addBody(d, pp.Batch) {
			n.onNewBody(sl, d, pp.Batch)
		} else {
			n.stats.Dropped[dropDuplicate]++
		}
		return
	}
	// Accepted: the header becomes the view's PRE-PREPARE for s (bodies live
	// in the slot). It is persisted before anything is sent for it (P1), so a
	// restarted replica still knows which PRE-PREPARE it took for (v, s) and
	// takes no other (P3). In a buffered view it is only recorded; enterView
	// acts on it.
	ph.pp, ph.digest = header(pp), d
	sl.addBody(d, pp.Batch)
	if pp.Batch != nil {
		sl.bodyPersisted[d] = true
	}
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: pp}})
	sl.progress = n.now
	if active {
		n.acceptPrePrepare(sl, ph)
	}
}

// acceptPrePrepare sends this backup's PREPARE once it holds the body (N3)
// and checks whether the slot is now prepared. It runs only in an active
// view: when a PRE-PREPARE arrives, when the view is entered for those
// buffered before (enterView), when a missing body arrives (onNewBody) and
// when the watermark moves for deferred NEW-VIEW entries (installDeferred).
func (n *Node) acceptPrePrepare(sl *slot, ph *phase) {
	// V5, G2: the checkpoint at min-s of the NEW-VIEW that started this view
	// decided every seq up to min-s, and this view orders nothing there.
	// While that checkpoint waits as pending, h is below min-s and the
	// watermarks alone would let a faulty new primary's PRE-PREPARE through
	// (see viewChangeState.floor).
	if sl.seq <= n.vc.floor && ph.view == n.view && !n.viewChanging {
		return // V5, G2: min-s of this view's NEW-VIEW decided it
	}
	if sl.committed && sl.commitDigest != ph.digest {
		// Never sign a PREPARE for a seq this replica holds a commit
		// certificate for with another batch: 2f+1 replicas committed that
		// one, so only a faulty primary can propose this.
		n.stats.Equivocations++
		return
	}
	// N2: a PREPARE vouches that every request of the batch is valid, which
	// needs the body. Preparing on the header alone would also let a faulty
	// primary get a batch committed whose body it never sends, stalling
	// execution (N7) everywhere. The body is asked of every peer.
	if n.body(sl, ph.digest) == nil {
		n.fetchBody(sl.seq, ph.digest)
		return
	}
	// N3: a backup PREPAREs once per (v, s); the primary never does. A
	// PREPARE signed before a restart is in the restored log and is not
	// signed again (P3). It is persisted before it is broadcast (P1): a
	// replica that forgot its PREPARE in a crash could PREPARE another batch
	// at the same (v, s).
	if n.cfg.ID != n.primaryOf(ph.view) && ph.prepares[n.cfg.ID] == nil {
		p := &bftpb.Prepare{View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Replica: uint32(n.cfg.ID)}
		p.Signature = n.sign(n.dom.PrepareBytes(p))
		ph.prepares[n.cfg.ID] = p
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Prepare{Prepare: p}})
		n.broadcast(&bftpb.Message{Body: &bftpb.Message_Prepare{Prepare: p}})
	}
	n.checkPrepared(sl, ph)
}

// onNewBody is called when the body of digest d arrives for a slot (with a
// PRE-PREPARE or in answer to a body fetch; verified against d by the
// Checker). The body is persisted once per digest, inside a PRE-PREPARE
// record under the same key as the header record, which it replaces: after
// a restart the log holds the batch, so the replica can execute it and serve
// it. Then whatever waited for the body goes on: the view's PREPARE and
// execution.
func (n *Node) onNewBody(sl *slot, d Digest, b *bftpb.Batch) {
	delete(n.bodyFetch, sl.seq)
	for _, ph := range sl.phases {
		if ph.pp != nil && ph.digest == d && !sl.bodyPersisted[d] {
			sl.bodyPersisted[d] = true
			n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: withBody(ph.pp, b)}})
		}
	}
	// A batch known only by its commit certificate keeps its body under the
	// PRE-PREPARE of the certificate's view.
	if sl.committed && sl.commitDigest == d && !sl.bodyPersisted[d] && sl.commitPP != nil {
		sl.bodyPersisted[d] = true
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: withBody(sl.commitPP, b)}})
	}
	if ph := sl.phases[n.view]; ph != nil && !n.viewChanging && ph.pp != nil && ph.digest == d {
		n.acceptPrePrepare(sl, ph)
	}
	n.tryExecute()
}

// onPrepare handles a PREPARE (N4); the Checker verified its signature and
// that it is not from the primary. The first PREPARE per sender and (v, s)
// is kept, whatever its digest: a replica that votes twice gets one vote.
// Received PREPAREs are persisted because the prepared certificates a
// replica holds must survive a crash (P1): its VIEW-CHANGE reports them
// (V2), and a replica that forgot one could hide a committed batch from the
// next view. In a buffered view they are counted once the view is entered.
func (n *Node) onPrepare(p *bftpb.Prepare) {
	sl, ph, active := n.admitVote(View(p.View), SeqNum(p.Seq))
	if ph == nil {
		return
	}
	if ph.prepares[p.Replica] != nil {
		n.stats.Dropped[dropDuplicate]++
		return
	}
	ph.prepares[p.Replica] = p
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Prepare{Prepare: p}})
	if active {
		n.checkPrepared(sl, ph)
	}
}

// admitVote applies the stateful checks shared by PREPARE and COMMIT: the
// view is current or buffered (N4), the seq within the watermarks (N4, G2)
// and, in the current view, above the new-view floor, where this view orders
// nothing (V5, G2; see viewChangeState.floor). It returns the slot and phase
// to record the vote in (nil phase: drop it) and whether the view is active.
func (n *Node) admitVote(v View, s SeqNum) (*slot, *phase, bool) {
	active, keep := n.viewState(v)
	if !keep {
		n.stats.Dropped[dropWrongView]++
		return nil, nil, false
	}
	if !n.inWindow(s) || (v == n.view && !n.viewChanging && s <= n.vc.floor) {
		n.stats.Dropped[dropWatermark]++
		return nil, nil, false
	}
	sl := n.slotFor(s)
	return sl, sl.phase(v, n.cfg.N), active
}

// checkPrepared is N4 and N5: with the PRE-PREPARE, its body and 2f
// matching PREPAREs from distinct backups the slot is prepared; the replica
// records the certificate and sends its COMMIT.
//
// 2f PREPAREs from backups plus the primary's PRE-PREPARE are 2f+1 distinct
// replicas, so any two prepared certificates for (v, s) share a correct
// replica, and only one digest prepares per (v, s) (see Checker.prepare for
// why the primary's own PREPARE must not count). The body is required as in
// the paper, whose prepared holds the request itself: a replica that commits
// must be able to execute the batch and serve it to others.
func (n *Node) checkPrepared(sl *slot, ph *phase) {
	if ph.prepared || ph.pp == nil || n.body(sl, ph.digest) == nil {
		return
	}
	primary := n.primaryOf(ph.view)
	var matching []*bftpb.Prepare
	// N4: distinct backups (one entry per sender), never the primary, and
	// only for this digest.
	for id, p := range ph.prepares {
		if p != nil && ReplicaID(id) != primary && string(p.Digest) == string(ph.digest[:]) {
			matching = append(matching, p)
		}
	}
	if len(matching) < n.q.Prepares() {
		return
	}
	ph.prepared = true
	sl.progress = n.now
	// V2: the slot keeps the certificate of the highest view it prepared in,
	// for its VIEW-CHANGEs; one of a lower view never replaces it.
	if sl.prepared == nil || View(sl.prepared.PrePrepare.View) <= ph.view {
		sl.prepared = &bftpb.PreparedCert{PrePrepare: ph.pp, Prepares: matching[:n.q.Prepares()]}
	}
	// N5: one COMMIT per (v, s), persisted before it leaves (P1).
	if ph.commits[n.cfg.ID] == nil {
		c := &bftpb.Commit{View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Replica: uint32(n.cfg.ID)}
		c.Signature = n.sign(n.dom.CommitBytes(c))
		ph.commits[n.cfg.ID] = c
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Commit{Commit: c}})
		n.broadcast(&bftpb.Message{Body: &bftpb.Message_Commit{Commit: c}})
	}
	n.checkCommitted(sl, ph)
}

// onCommit handles a COMMIT (N6). As for PREPAREs, the first per sender and
// (v, s) is kept, and it is persisted: a restarted replica rebuilds its
// commit certificates from the log (restorePhase). In a buffered view it is
// counted once the view is entered.
func (n *Node) onCommit(c *bftpb.Commit) {
	sl, ph, active := n.admitVote(View(c.View), SeqNum(c.Seq))
	if ph == nil {
		return
	}
	if ph.commits[c.Replica] != nil {
		n.stats.Dropped[dropDuplicate]++
		return
	}
	ph.commits[c.Replica] = c
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Commit{Commit: c}})
	if active {
		n.checkCommitted(sl, ph)
	}
}

// checkCommitted is N6: prepared and 2f+1 matching COMMITs from distinct
// replicas (its own included) make the slot committed-local.
//
// 2f+1 COMMITs mean at least f+1 correct replicas prepared (v, s, d), so
// every later NEW-VIEW re-proposes d at s (V4) and the decision survives view
// changes; 2f would not guarantee it (Checker.CommitCert). Locally prepared
// is required too (N6): the replica holds the body and the certificate. The
// 2f+1 COMMITs become the slot's commit certificate, which proves the batch
// to a lagging replica in catch-up (G3), where it is taken without local
// prepared (onCommittedBatch).
func (n *Node) checkCommitted(sl *slot, ph *phase) {
	if !ph.prepared || sl.committed {
		return
	}
	var matching []*bftpb.Commit
	// N6: distinct replicas (one entry per sender), the primary and this
	// replica included, for this digest.
	for _, c := range ph.commits {
		if c != nil && string(c.Digest) == string(ph.digest[:]) {
			matching = append(matching, c)
		}
	}
	if len(matching) < n.q.Quorum() {
		return
	}
	n.markCommitted(sl, ph.view, ph.digest, ph.pp, &bftpb.CommitCert{
		View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Commits: matching[:n.q.Quorum()],
	})
}

// markCommitted records that the slot committed with digest d, proven by
// cert, and executes what it can (N7). The PRE-PREPARE's header is kept
// beside the certificate so the batch can be served in catch-up (onFetch).
func (n *Node) markCommitted(sl *slot, v View, d Digest, pp *bftpb.PrePrepare, cert *bftpb.CommitCert) {
	if sl.committed {
		if sl.commitDigest != d {
			// Two commit certificates for one seq with different digests: more
			// than f replicas are faulty. Stop rather than diverge.
			n.fail(errSafety("two batches committed at seq %d (%s and %s)", sl.seq, sl.commitDigest, d))
		}
		return
	}
	sl.committed, sl.commitDigest, sl.commitView, sl.commitCert, sl.commitPP = true, d, v, cert, header(pp)
	sl.progress = n.now
	n.tryExecute()
}

// tryExecute hands committed batches to the host in sequence order (N7).
//
// Execution is asynchronous. The host runs batches on an executor (a
// goroutine in production, the seeded scheduler in the simulator), commits
// each one's state, client table changes and seq atomically (P2), and
// reports it with Executed, possibly many Ready rounds later. execCursor is
// the last seq handed out and lastExecuted the last reported, so
// lastExecuted <= execCursor and the batches in (lastExecuted, execCursor]
// are executing. Ordering goes on meanwhile; what needs the executed state —
// own checkpoints, adopting a stable checkpoint, the primary's pipeline
// window — waits for the reports.
//
// Nothing is handed out while a state transfer runs: the state the batches
// would run on is about to be replaced. They are handed out again after the
// install (startTransfer, StateInstalled).
func (n *Node) tryExecute() {
	for n.transfer == nil && n.stopped == nil {
		s := n.execCursor + 1
		sl := n.slots[s]
		if sl == nil || !sl.committed || sl.handedOff {
			return
		}
		b := n.body(sl, sl.commitDigest)
		// A batch committed by certificate may lack its body (its PRE-PREPARE
		// came as a header): fetch it and wait, since batches execute
		// strictly in order.
		if b == nil {
			n.fetchBody(s, sl.commitDigest)
			return
		}
		// handedOff keeps a batch from being handed out twice; startTransfer
		// clears it for the batches an install makes void.
		sl.handedOff = true
		n.execCursor = s
		n.rd.Executions = append(n.rd.Executions, n.buildExecution(sl, b))
	}
}
