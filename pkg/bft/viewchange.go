package bft

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// viewChangeState holds what the view-change protocol (V1–V7) needs.
type viewChangeState struct {
	n int
	// byView holds valid VIEW-CHANGEs, indexed by sender, for views above
	// the last view entered and at most MaxFutureViews above the current one.
	byView map[View][]*bftpb.ViewChange
	// far is each replica's VIEW-CHANGE of the highest view beyond that
	// window, kept so that V7 still sees replicas that ran far ahead.
	far []*bftpb.ViewChange
	// own are this replica's VIEW-CHANGEs since the last view it entered. It
	// retransmits all of them: a replica that timed out to v+2 while its
	// VIEW-CHANGE for v+1 was lost must still let the others complete v+1.
	own []*bftpb.ViewChange
	// timer is T of V6; timerView the view it was started for, so that T
	// starts once per view, when 2f+1 VIEW-CHANGEs for it are held, and
	// further VIEW-CHANGEs do not restart it.
	timer     timer
	timerView View
	// attempts counts view changes since the last execution (back-off, V6).
	// It is not persisted: a restarted replica starts from the base
	// timeouts.
	attempts int
	// newView is the NEW-VIEW that started the current view (nil for view 0).
	// It is sent again to replicas that missed it (onViewChange, onStatus),
	// and persisted, so that a restarted replica recomputes floor and
	// deferred from it (restore).
	newView *bftpb.NewView
	// floor is min-s of newView (V4): in the current view nothing at or
	// below it may be pre-prepared, prepared or committed. While execution
	// has not yet reached min-s (the checkpoint waits as pending, execution
	// being asynchronous) h stays below min-s, so the watermarks alone would
	// admit a faulty new primary's PRE-PREPARE(v, s <= min-s) for a seq that
	// committed with another batch in an earlier view, and a correct backup
	// would sign a PREPARE contradicting it (V5, G2; issue 12). Once h
	// reaches min-s the watermarks say as much, and floor changes nothing.
	// This departs from the paper, where a backup that accepts NEW-VIEW is
	// at min-s at once (it adopts the checkpoint or fetches the state); here
	// it adopts the checkpoint only once execution reaches it (stabilize).
	floor SeqNum
	// deferred are PRE-PREPAREs of the NEW-VIEW above the high watermark,
	// installed once the watermark moves. O reaches at most L above min-s
	// (V3 bounds each certificate by its sender's s_c + L), so only a
	// replica whose h is still below min-s has entries to defer. They are
	// kept, not dropped, so that the backup PREPAREs them as soon as its
	// watermark admits them (V5); a slot above H would break the log's
	// bound.
	deferred []*bftpb.PrePrepare
}

// maxOwnViewChanges bounds the VIEW-CHANGEs a replica keeps retransmitting.
const maxOwnViewChanges = 8

func newViewChangeState(n int) viewChangeState {
	return viewChangeState{n: n, byView: make(map[View][]*bftpb.ViewChange), far: make([]*bftpb.ViewChange, n)}
}

// store keeps vc and reports whether it was new. Within the window the
// first VIEW-CHANGE per (view, sender) is kept: a correct replica signs one
// per view (persisted, P1), so a second, different one comes from a faulty
// sender and adds nothing. Beyond the window only each replica's highest is
// kept, which bounds memory whatever views a faulty replica asks for.
func (s *viewChangeState) store(vc *bftpb.ViewChange, window View) bool {
	v, r := View(vc.View), vc.Replica
	if v > window {
		if cur := s.far[r]; cur != nil && View(cur.View) >= v {
			return false
		}
		s.far[r] = vc
		return true
	}
	row := s.byView[v]
	if row == nil {
		row = make([]*bftpb.ViewChange, s.n)
		s.byView[v] = row
	}
	if row[r] != nil {
		return false
	}
	row[r] = vc
	return true
}

// forView returns the VIEW-CHANGEs for view v, indexed by sender.
func (s *viewChangeState) forView(v View) []*bftpb.ViewChange { return s.byView[v] }

// pruneUpTo forgets VIEW-CHANGEs for views at or below v, when v is
// entered: V7 counts only views above the current one, and v's NEW-VIEW is
// already accepted.
func (s *viewChangeState) pruneUpTo(v View) {
	for x := range s.byView {
		if x <= v {
			delete(s.byView, x)
		}
	}
	for i, vc := range s.far {
		if vc != nil && View(vc.View) <= v {
			s.far[i] = nil
		}
	}
}

// smallestAbove returns, for replica r, the smallest view above v it asked
// for, if any (V7).
func (s *viewChangeState) smallestAbove(r int, v View) (View, bool) {
	best, ok := View(0), false
	for x, row := range s.byView {
		if x > v && row[r] != nil && (!ok || x < best) {
			best, ok = x, true
		}
	}
	if vc := s.far[r]; vc != nil && View(vc.View) > v && (!ok || View(vc.View) < best) {
		best, ok = View(vc.View), true
	}
	return best, ok
}

// startViewChange moves to view target (V2): stop taking part in the old
// view and send a VIEW-CHANGE with the stable checkpoint's certificate and a
// prepared certificate for every seq above it that prepared.
//
// Setting view = target with viewChanging makes every PRE-PREPARE, PREPARE
// and COMMIT of the old view stale at once (viewState). The VIEW-CHANGE
// reports what this replica prepared; if it prepared more in the old view
// afterwards, a batch could commit there that the NEW-VIEW, computed from
// the reports, does not carry. The view and the flag go into the hard state
// of the Ready that carries the VIEW-CHANGE (P1), so a restarted replica
// resumes the view change instead of rejoining the old view (P3).
func (n *Node) startViewChange(target View) {
	// Views only grow: a replica never signs a VIEW-CHANGE for a view at or
	// below its own, which it has entered or asked for already (P3).
	if target <= n.view {
		return
	}
	n.view, n.viewChanging, n.hsDirty = target, true, true
	// V6: one more view change without an execution in between doubles the
	// timeouts (backoff). The request timer belongs to the old view, and T
	// starts only once 2f+1 replicas ask for target (checkViewChange).
	// Nothing is proposed during a view change: queued requests stay pending
	// and go to the new primary (enterView).
	n.vc.attempts++
	n.stats.ViewChanges++
	n.reqTimer.stop()
	n.vc.timer.stop()
	n.reqs.clearQueue()
	vc := &bftpb.ViewChange{View: uint64(target), Replica: uint32(n.cfg.ID)}
	// V2: s_c with its certificate C (2f+1 CHECKPOINTs), so that every
	// receiver can check it (V3); none for the genesis checkpoint.
	if n.stable != nil {
		vc.StableSeq, vc.StableDigest, vc.CheckpointCert = n.stable.Seq, n.stable.StateDigest, n.stable.Checkpoints
	}
	// V2: for every seq in (h, H] where this replica prepared, the
	// certificate of the highest view it prepared in (slot.prepared). The
	// phases of older views may be gone; their certificates stay in the
	// slots.
	for s := n.h + 1; s <= n.highWatermark(); s++ {
		if sl := n.slots[s]; sl != nil && sl.prepared != nil {
			vc.Prepared = append(vc.Prepared, sl.prepared)
		}
	}
	vc.Signature = n.sign(n.dom.ViewChangeBytes(vc))
	// Retransmitted while the view change lasts (periodic), bounded.
	n.vc.own = append(n.vc.own, vc)
	if len(n.vc.own) > maxOwnViewChanges {
		n.vc.own = n.vc.own[len(n.vc.own)-maxOwnViewChanges:]
	}
	n.vc.store(vc, n.view+n.cfg.MaxFutureViews)
	// Its own VIEW-CHANGE counts toward the 2f+1 of V6 and V4 (stored above).
	// P1: persisted before it leaves; after a crash the replica re-sends this
	// VIEW-CHANGE, never a different one for the view.
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_ViewChange{ViewChange: vc}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_ViewChange{ViewChange: vc}})
	n.log.Debugf("r%d: view change to %d (stable %d, %d prepared)", n.cfg.ID, target, vc.StableSeq, len(vc.Prepared))
	n.checkViewChange()
}

// onViewChange handles a valid VIEW-CHANGE (V3 was checked by the Checker).
// One for a view this replica has left or entered is stale; if it is for
// the current view, its sender missed the NEW-VIEW, and the primary sends it
// again (it proves itself, V5). Others are stored, bounded, and may trigger V7, V6 or V4.
func (n *Node) onViewChange(vc *bftpb.ViewChange) {
	v := View(vc.View)
	if v < n.view || (v == n.view && !n.viewChanging) {
		// The sender is behind or missed the NEW-VIEW: the primary helps it.
		if v == n.view && n.IsPrimary() && n.vc.newView != nil {
			n.send(ReplicaID(vc.Replica), &bftpb.Message{Body: &bftpb.Message_NewView{NewView: n.vc.newView}})
		}
		n.stats.Dropped[dropStale]++
		return
	}
	if !n.vc.store(vc, n.view+n.cfg.MaxFutureViews) {
		n.stats.Dropped[dropDuplicate]++
		return
	}
	n.checkViewChange()
}

// checkViewChange applies V7 (join the smallest view that f+1 replicas ask
// for), V6 (start T once 2f+1 ask for the target) and V4 (the new primary
// sends NEW-VIEW).
//
// V7: f+1 distinct replicas asking for views above this one include a
// correct replica whose timer expired, so the current primary failed at
// least for it. Joining at once, without waiting for its own timer, keeps a
// replica from lagging in a view the others are leaving, and joining the
// smallest such view skips no view needlessly. The f faulty replicas alone
// can never move a correct one: this replica's own VIEW-CHANGEs do not count
// here, so f+1 others are needed.
func (n *Node) checkViewChange() {
	var above []View
	for id := 0; id < n.cfg.N; id++ {
		if v, ok := n.vc.smallestAbove(id, n.view); ok && ReplicaID(id) != n.cfg.ID {
			above = append(above, v)
		}
	}
	// V7: f+1 other replicas; join the smallest view they ask for.
	if len(above) >= n.q.Weak() {
		least := above[0]
		for _, v := range above {
			if v < least {
				least = v
			}
		}
		n.log.Debugf("r%d: %d replicas ask for views above %d: joining %d (V7)", n.cfg.ID, len(above), n.view, least)
		n.startViewChange(least)
		return
	}
	// The rest concerns a replica changing to n.view.
	if !n.viewChanging {
		return
	}
	count := 0
	for _, vc := range n.vc.forView(n.view) {
		if vc != nil {
			count++
		}
	}
	// V6: T starts only once 2f+1 replicas, this one included, ask for the
	// view. Before that no NEW-VIEW can form, and a timer started with the
	// replica's own VIEW-CHANGE would move it on before the others could
	// join: the paper's guard against starting the next view change too soon.
	if count < n.q.Quorum() {
		return
	}
	if n.vc.timerView != n.view {
		n.vc.timerView = n.view
		// V6: T for the first NEW-VIEW of a run of view changes, 2T after
		// moving on, and so on. startViewChange already counted this view
		// change in attempts, so the doubling starts one attempt later.
		n.vc.timer.start(n.now, n.backoffFrom(n.cfg.ViewChangeTimeout, n.vc.attempts-1))
	}
	// V4: the primary of the view sends NEW-VIEW once it holds 2f+1
	// VIEW-CHANGEs, its own among them.
	if n.IsPrimary() && n.vc.forView(n.view)[n.cfg.ID] != nil {
		n.sendNewView()
	}
}

// sendNewView is V4 at the primary of the new view. V is its own
// VIEW-CHANGE and the first 2f others in replica order: any 2f+1 valid ones
// are safe (Checker.newView), so the choice is free, and V4 has the primary
// include its own. The NEW-VIEW is persisted before it leaves (P1): after a
// crash the primary must not send a different one for the view, nor propose
// at the seqs O used (restore keeps nextSeq above max-s). Then the primary
// enters the view as a backup that accepted it would.
func (n *Node) sendNewView() {
	row := n.vc.forView(n.view)
	vcs := []*bftpb.ViewChange{row[n.cfg.ID]}
	for id, vc := range row {
		if len(vcs) == n.q.Quorum() {
			break
		}
		if vc != nil && ReplicaID(id) != n.cfg.ID {
			vcs = append(vcs, vc)
		}
	}
	nv, plan := buildNewView(&n.dom, n.cfg.Signer, n.view, n.cfg.ID, vcs, n.null)
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_NewView{NewView: nv}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_NewView{NewView: nv}})
	n.log.Debugf("r%d: NEW-VIEW %d: min-s %d max-s %d", n.cfg.ID, n.view, plan.minS, plan.maxS)
	n.enterView(nv, plan)
}

// onNewView handles a NEW-VIEW the Checker found valid (V5): signed by the
// primary of its view, 2f+1 valid VIEW-CHANGEs, O recomputed from them. It
// is taken for a view above the current one or for the view this replica is
// changing to; a replica active in a lower view joins directly (it missed
// the view change). It is persisted before anything is sent for it (P1):
// PREPAREs for O follow, and a restarted replica recomputes floor and the
// deferred entries from it.
func (n *Node) onNewView(nv *bftpb.NewView) {
	v := View(nv.View)
	if v < n.view || (v == n.view && !n.viewChanging) {
		n.stats.Dropped[dropStale]++
		return
	}
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_NewView{NewView: nv}})
	n.enterView(nv, computeNewView(nv.ViewChanges, n.null))
}

// enterView starts view nv.View (V4 at the primary, V5 at a backup): adopt
// the checkpoint min-s if this replica is behind it, take the PRE-PREPAREs
// of O (a backup PREPAREs each), act on messages of the view buffered
// before, and hand the pending requests to the new primary.
//
// Entering a view with min-s above what this replica executed is the case
// issue 12 found: its low watermark may stay below min-s (the checkpoint
// waits as pending), so floor, not h, keeps it from ordering anything at or
// below min-s in this view.
func (n *Node) enterView(nv *bftpb.NewView, plan nvPlan) {
	v := View(nv.View)
	// The new view goes into the hard state of this Ready, before the
	// PREPAREs for O leave (P1).
	n.view, n.viewChanging, n.hsDirty = v, false, true
	n.stats.NewViews++
	// Counted for the simulator's coverage: the window of the floor.
	if plan.minS > n.lastExecuted {
		n.stats.NewViewsAboveExecuted++
	}
	n.vc.timer.stop()
	// Own VIEW-CHANGEs of lower views are over: no longer retransmitted.
	n.vc.own = nil
	n.vc.newView = nv
	n.vc.floor = plan.minS
	// VIEW-CHANGEs and NEW-VIEWs of lower views are no longer needed, in
	// memory or on disk; this NEW-VIEW and the own VIEW-CHANGE for v, if
	// any, stay on disk.
	n.vc.pruneUpTo(v)
	n.rd.Deletes = append(n.rd.Deletes, viewRecordsBelow(v))
	// V5, G3: move to min-s if behind it. stabilize adopts the checkpoint if
	// this replica executed up to it, leaves it pending while execution
	// catches up if the log reaches it (h stays below min-s: hence floor),
	// and otherwise starts a state transfer.
	if plan.minS > n.h && plan.stable != nil {
		n.stabilize(&bftpb.CheckpointCert{Seq: plan.stable.StableSeq, StateDigest: plan.stable.StableDigest, Checkpoints: plan.stable.CheckpointCert})
	}
	// Old views' phases are done with; their prepared certificates and
	// commit certificates stay in the slots: later VIEW-CHANGEs carry the
	// highest view's prepared certificate per seq (V2), and commit
	// certificates prove batches in catch-up (G3).
	for _, sl := range n.slots {
		for pv := range sl.phases {
			if pv < v {
				delete(sl.phases, pv)
			}
		}
	}
	n.vc.deferred = nil
	// V5: O's PRE-PREPAREs become the view's; those above H wait.
	for _, pp := range nv.PrePrepares {
		n.installNewViewPrePrepare(pp)
	}
	// Messages of this view that arrived before the NEW-VIEW, above min-s
	// (V5: below it, O decided by the checkpoint; nothing is re-proposed).
	// This also PREPAREs O's entries, installed above as the view's
	// PRE-PREPAREs (V5).
	for s := max(n.h, n.vc.floor) + 1; s <= n.highWatermark(); s++ {
		if sl := n.slots[s]; sl != nil {
			if ph := sl.phases[v]; ph != nil && ph.pp != nil {
				n.acceptPrePrepare(sl, ph)
			}
		}
	}
	// N1 in the new view: the primary continues after max-s, since O used
	// every seq up to it (and never at or below h). Requests in O's batches
	// that have not executed yet are marked in flight, so that they are not
	// proposed a second time, and every pending request is queued again in
	// arrival order.
	if n.IsPrimary() {
		n.nextSeq = plan.maxS + 1
		if n.nextSeq <= n.h {
			n.nextSeq = n.h + 1
		}
		n.reqs.inflight = make(map[reqKey]SeqNum)
		for s := n.lastExecuted + 1; s <= plan.maxS; s++ {
			if sl := n.slots[s]; sl != nil {
				if ph := sl.phases[v]; ph != nil {
					for _, r := range n.body(sl, ph.digest).GetRequests() {
						n.reqs.inflight[reqKey{ClientID(r.Client), r.Timestamp}] = s
					}
				}
			}
		}
		n.reqs.resetQueue()
	} else {
		// The backup's pending requests go to the new primary (V1).
		n.forwardPending()
	}
	n.log.Debugf("r%d: entered view %d (h %d, executed %d, O %d)", n.cfg.ID, v, n.h, n.lastExecuted, len(nv.PrePrepares))
	// O, or a checkpoint adopted above, may let execution go on.
	n.tryExecute()
}

// installNewViewPrePrepare takes one PRE-PREPARE of O as the view's
// PRE-PREPARE for its seq; those above the high watermark wait until it
// moves (vc.deferred). It does not PREPARE: the callers do, once the view is
// entered (enterView, installDeferred).
func (n *Node) installNewViewPrePrepare(pp *bftpb.PrePrepare) {
	s, v := SeqNum(pp.Seq), View(pp.View)
	// At or below h the stable checkpoint decided. An entry of another view
	// cannot be in a NEW-VIEW the Checker passed: defensive.
	if s <= n.h || v != n.view {
		return
	}
	if s > n.highWatermark() {
		n.vc.deferred = append(n.vc.deferred, pp)
		return
	}
	d, _ := digestFrom(pp.Digest)
	sl := n.slotFor(s)
	ph := sl.phase(v, n.cfg.N)
	if ph.pp != nil {
		if ph.digest == d {
			return
		}
		// A PRE-PREPARE of this view buffered before the NEW-VIEW (it could
		// not be acted on) conflicts with O: O decides (V5). Nothing was
		// sent for the buffered one, since the view was not active.
		n.stats.Equivocations++
		n.stats.Dropped[dropConflict]++
	}
	// The O entry is persisted below under the same record key as a buffered
	// PRE-PREPARE, so it replaces that one on disk too. P1: persisted before
	// this replica PREPAREs it; after a restart it is this view's PRE-PREPARE
	// for s and no other is accepted (P3).
	ph.pp, ph.digest = pp, d
	rec := pp
	if b := sl.bodies[d]; b != nil {
		rec = withBody(pp, b)
		sl.bodyPersisted[d] = true
	}
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_PrePrepare{PrePrepare: rec}})
	sl.progress = n.now
}

// installDeferred installs NEW-VIEW PRE-PREPAREs that the moved watermark
// now admits, and PREPAREs them (V5). adopt calls it whenever h moves; an
// entry still above H is deferred again.
func (n *Node) installDeferred() {
	if len(n.vc.deferred) == 0 || n.viewChanging {
		return
	}
	rest := n.vc.deferred
	n.vc.deferred = nil
	for _, pp := range rest {
		n.installNewViewPrePrepare(pp)
		// Now within the watermarks (it was not deferred again): PREPARE it.
		if s := SeqNum(pp.Seq); s > n.h && s <= n.highWatermark() {
			sl := n.slots[s]
			if ph := sl.phases[n.view]; ph != nil && ph.pp != nil {
				n.acceptPrePrepare(sl, ph)
			}
		}
	}
}

// forwardPending sends the requests a backup holds to the new primary and
// restarts the request timer (V1) if any wait: if the new primary does not
// execute them either, the view changes again, with a doubled timeout (V6).
// At most 4 × MaxBatchRequests go at once, oldest first, which bounds the
// burst; the rest reach the primary when their clients retransmit (C4).
func (n *Node) forwardPending() {
	limit := 4 * n.cfg.MaxBatchRequests
	for _, p := range n.reqs.ordered() {
		if limit == 0 {
			break
		}
		limit--
		p.lastForward = n.now
		n.send(n.Primary(), &bftpb.Message{Body: &bftpb.Message_Request{Request: p.req}})
	}
	n.reqTimer.stop()
	if n.reqs.len() > 0 {
		n.reqTimer.start(n.now, n.backoff(n.cfg.RequestTimeout))
	}
}
