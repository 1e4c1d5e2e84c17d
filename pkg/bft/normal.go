package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// onRequest handles a client request, from the client (Propose) or
// forwarded by another replica (C3, C4, V1).
func (n *Node) onRequest(r *bftpb.Request, forwarded bool) error {
	key := reqKey{ClientID(r.Client), r.Timestamp}
	cs := n.clients.m[key.client]
	switch disp, low := n.clients.classify(cs, r); disp {
	case dispDuplicate:
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
	if n.reqs.len() >= n.cfg.MaxPendingRequests {
		n.stats.Dropped[dropRequest]++
		return ErrBusy
	}
	p := n.reqs.add(key, r, n.dom.RequestDigest(r))
	if n.viewChanging {
		return nil // forwarded or queued when the new view starts
	}
	if n.IsPrimary() {
		n.reqs.enqueue(p)
		return nil
	}
	p.lastForward = n.now
	n.send(n.Primary(), &bftpb.Message{Body: &bftpb.Message_Request{Request: r}})
	if !n.reqTimer.active {
		n.reqTimer.start(n.now, n.backoff(n.cfg.RequestTimeout)) // V1
	}
	return nil
}

func (n *Node) reply(key reqKey, status bftpb.ReplyStatus, result []byte, low uint64) {
	n.rd.Replies = append(n.rd.Replies, &bftpb.Reply{
		View: uint64(n.view), Client: []byte(key.client), Timestamp: key.ts,
		Replica: uint32(n.cfg.ID), Status: status, Result: result, Low: low,
	})
}

// inflight is the number of batches pre-prepared and not yet executed.
func (n *Node) inflight() int {
	if n.nextSeq <= n.lastExecuted+1 {
		return 0
	}
	return int(n.nextSeq - 1 - n.lastExecuted)
}

// canPropose reports whether the primary may cut a batch now (N1): it is
// the primary of an active view, has queued requests, the pipeline window
// has room and the next seq is within the high watermark.
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
		if len(batch.Requests) == 0 {
			return
		}
		n.proposeBatch(batch, digests)
	}
}

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
		if len(batch.Requests) == n.cfg.MaxBatchRequests || (len(batch.Requests) > 0 && bytes+p.size > n.cfg.MaxBatchBytes) {
			break
		}
		batch.Requests = append(batch.Requests, p.req)
		digests = append(digests, p.digest)
		bytes += p.size
		n.reqs.inflight[p.key] = n.nextSeq
	}
	n.reqs.queue = q[i:]
	return batch, digests
}

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

// onPrePrepare handles a PRE-PREPARE (N2).
func (n *Node) onPrePrepare(pp *bftpb.PrePrepare) {
	v, s := View(pp.View), SeqNum(pp.Seq)
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
		// G2; V5: at or below min-s of the view's NEW-VIEW there is nothing
		// to pre-prepare (see viewChangeState.floor).
		n.stats.Dropped[dropWatermark]++
		return
	}
	d, _ := digestFrom(pp.Digest)
	sl := n.slotFor(s)
	ph := sl.phase(v, n.cfg.N)
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
// and checks whether the slot is now prepared.
func (n *Node) acceptPrePrepare(sl *slot, ph *phase) {
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
	if n.body(sl, ph.digest) == nil {
		n.fetchBody(sl.seq, ph.digest)
		return
	}
	if n.cfg.ID != n.primaryOf(ph.view) && ph.prepares[n.cfg.ID] == nil {
		p := &bftpb.Prepare{View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Replica: uint32(n.cfg.ID)}
		p.Signature = n.sign(n.dom.PrepareBytes(p))
		ph.prepares[n.cfg.ID] = p
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Prepare{Prepare: p}})
		n.broadcast(&bftpb.Message{Body: &bftpb.Message_Prepare{Prepare: p}})
	}
	n.checkPrepared(sl, ph)
}

// onNewBody is called when the body of digest d arrives for a slot.
func (n *Node) onNewBody(sl *slot, d Digest, b *bftpb.Batch) {
	delete(n.bodyFetch, sl.seq)
	for _, ph := range sl.phases {
		if ph.pp != nil && ph.digest == d && !sl.bodyPersisted[d] {
			sl.bodyPersisted[d] = true
			n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: withBody(ph.pp, b)}})
		}
	}
	if sl.committed && sl.commitDigest == d && !sl.bodyPersisted[d] && sl.commitPP != nil {
		sl.bodyPersisted[d] = true
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: withBody(sl.commitPP, b)}})
	}
	if ph := sl.phases[n.view]; ph != nil && !n.viewChanging && ph.pp != nil && ph.digest == d {
		n.acceptPrePrepare(sl, ph)
	}
	n.tryExecute()
}

// onPrepare handles a PREPARE (N4).
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
// view is current or buffered (N4) and the seq within the watermarks. It
// returns the slot and phase to record the vote in (nil phase: drop it) and
// whether the view is active.
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
func (n *Node) checkPrepared(sl *slot, ph *phase) {
	if ph.prepared || ph.pp == nil || n.body(sl, ph.digest) == nil {
		return
	}
	primary := n.primaryOf(ph.view)
	var matching []*bftpb.Prepare
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
	if sl.prepared == nil || View(sl.prepared.PrePrepare.View) <= ph.view {
		sl.prepared = &bftpb.PreparedCert{PrePrepare: ph.pp, Prepares: matching[:n.q.Prepares()]}
	}
	if ph.commits[n.cfg.ID] == nil {
		c := &bftpb.Commit{View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Replica: uint32(n.cfg.ID)}
		c.Signature = n.sign(n.dom.CommitBytes(c))
		ph.commits[n.cfg.ID] = c
		n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Commit{Commit: c}})
		n.broadcast(&bftpb.Message{Body: &bftpb.Message_Commit{Commit: c}})
	}
	n.checkCommitted(sl, ph)
}

// onCommit handles a COMMIT (N6).
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
func (n *Node) checkCommitted(sl *slot, ph *phase) {
	if !ph.prepared || sl.committed {
		return
	}
	var matching []*bftpb.Commit
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
// cert, and executes what it can (N7).
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
func (n *Node) tryExecute() {
	for n.transfer == nil && n.stopped == nil {
		s := n.execCursor + 1
		sl := n.slots[s]
		if sl == nil || !sl.committed || sl.handedOff {
			return
		}
		b := n.body(sl, sl.commitDigest)
		if b == nil {
			n.fetchBody(s, sl.commitDigest)
			return
		}
		sl.handedOff = true
		n.execCursor = s
		n.rd.Executions = append(n.rd.Executions, n.buildExecution(sl, b))
	}
}
