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
	// timer is T of V6; timerView the view it was started for.
	timer     timer
	timerView View
	// attempts counts view changes since the last execution (back-off, V6).
	attempts int
	// newView is the NEW-VIEW that started the current view (nil for view 0).
	newView *bftpb.NewView
	// floor is min-s of newView (V4): in the current view nothing at or
	// below it may be pre-prepared, prepared or committed. While execution
	// has not yet reached min-s (the checkpoint waits as pending, execution
	// being asynchronous) h stays below min-s, so the watermarks alone would
	// admit a faulty new primary's PRE-PREPARE(v, s <= min-s) for a seq that
	// committed with another batch in an earlier view, and a correct backup
	// would sign a PREPARE contradicting it (V5, G2; issue 12).
	floor SeqNum
	// deferred are PRE-PREPAREs of the NEW-VIEW above the high watermark,
	// installed once the watermark moves.
	deferred []*bftpb.PrePrepare
}

// maxOwnViewChanges bounds the VIEW-CHANGEs a replica keeps retransmitting.
const maxOwnViewChanges = 8

func newViewChangeState(n int) viewChangeState {
	return viewChangeState{n: n, byView: make(map[View][]*bftpb.ViewChange), far: make([]*bftpb.ViewChange, n)}
}

// store keeps vc and reports whether it was new.
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

// pruneUpTo forgets VIEW-CHANGEs for views at or below v.
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
// for, if any.
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
func (n *Node) startViewChange(target View) {
	if target <= n.view {
		return
	}
	n.view, n.viewChanging, n.hsDirty = target, true, true
	n.vc.attempts++
	n.stats.ViewChanges++
	n.reqTimer.stop()
	n.vc.timer.stop()
	n.reqs.clearQueue()
	vc := &bftpb.ViewChange{View: uint64(target), Replica: uint32(n.cfg.ID)}
	if n.stable != nil {
		vc.StableSeq, vc.StableDigest, vc.CheckpointCert = n.stable.Seq, n.stable.StateDigest, n.stable.Checkpoints
	}
	for s := n.h + 1; s <= n.highWatermark(); s++ {
		if sl := n.slots[s]; sl != nil && sl.prepared != nil {
			vc.Prepared = append(vc.Prepared, sl.prepared)
		}
	}
	vc.Signature = n.sign(n.dom.ViewChangeBytes(vc))
	n.vc.own = append(n.vc.own, vc)
	if len(n.vc.own) > maxOwnViewChanges {
		n.vc.own = n.vc.own[len(n.vc.own)-maxOwnViewChanges:]
	}
	n.vc.store(vc, n.view+n.cfg.MaxFutureViews)
	n.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_ViewChange{ViewChange: vc}})
	n.broadcast(&bftpb.Message{Body: &bftpb.Message_ViewChange{ViewChange: vc}})
	n.log.Debugf("r%d: view change to %d (stable %d, %d prepared)", n.cfg.ID, target, vc.StableSeq, len(vc.Prepared))
	n.checkViewChange()
}

// onViewChange handles a valid VIEW-CHANGE (V3 was checked by the Checker).
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
func (n *Node) checkViewChange() {
	var above []View
	for id := 0; id < n.cfg.N; id++ {
		if v, ok := n.vc.smallestAbove(id, n.view); ok && ReplicaID(id) != n.cfg.ID {
			above = append(above, v)
		}
	}
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
	if !n.viewChanging {
		return
	}
	count := 0
	for _, vc := range n.vc.forView(n.view) {
		if vc != nil {
			count++
		}
	}
	if count < n.q.Quorum() {
		return
	}
	if n.vc.timerView != n.view {
		n.vc.timerView = n.view
		n.vc.timer.start(n.now, n.backoff(n.cfg.ViewChangeTimeout))
	}
	if n.IsPrimary() && n.vc.forView(n.view)[n.cfg.ID] != nil {
		n.sendNewView()
	}
}

// sendNewView is V4 at the primary of the new view.
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

// onNewView handles a NEW-VIEW the Checker found valid (V5).
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
func (n *Node) enterView(nv *bftpb.NewView, plan nvPlan) {
	v := View(nv.View)
	n.view, n.viewChanging, n.hsDirty = v, false, true
	n.stats.NewViews++
	if plan.minS > n.lastExecuted {
		n.stats.NewViewsAboveExecuted++
	}
	n.vc.timer.stop()
	n.vc.own = nil
	n.vc.newView = nv
	n.vc.floor = plan.minS
	n.vc.pruneUpTo(v)
	n.rd.Deletes = append(n.rd.Deletes, viewRecordsBelow(v))
	if plan.minS > n.h && plan.stable != nil {
		n.stabilize(&bftpb.CheckpointCert{Seq: plan.stable.StableSeq, StateDigest: plan.stable.StableDigest, Checkpoints: plan.stable.CheckpointCert})
	}
	// Old views' phases are done with; their prepared certificates and
	// commit certificates stay in the slots.
	for _, sl := range n.slots {
		for pv := range sl.phases {
			if pv < v {
				delete(sl.phases, pv)
			}
		}
	}
	n.vc.deferred = nil
	for _, pp := range nv.PrePrepares {
		n.installNewViewPrePrepare(pp)
	}
	// Messages of this view that arrived before the NEW-VIEW, above min-s
	// (V5: below it, O decided by the checkpoint; nothing is re-proposed).
	for s := max(n.h, n.vc.floor) + 1; s <= n.highWatermark(); s++ {
		if sl := n.slots[s]; sl != nil {
			if ph := sl.phases[v]; ph != nil && ph.pp != nil {
				n.acceptPrePrepare(sl, ph)
			}
		}
	}
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
		n.forwardPending()
	}
	n.log.Debugf("r%d: entered view %d (h %d, executed %d, O %d)", n.cfg.ID, v, n.h, n.lastExecuted, len(nv.PrePrepares))
	n.tryExecute()
}

// installNewViewPrePrepare takes one PRE-PREPARE of O; those above the high
// watermark wait until it moves.
func (n *Node) installNewViewPrePrepare(pp *bftpb.PrePrepare) {
	s, v := SeqNum(pp.Seq), View(pp.View)
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
// now admits.
func (n *Node) installDeferred() {
	if len(n.vc.deferred) == 0 || n.viewChanging {
		return
	}
	rest := n.vc.deferred
	n.vc.deferred = nil
	for _, pp := range rest {
		n.installNewViewPrePrepare(pp)
		if s := SeqNum(pp.Seq); s > n.h && s <= n.highWatermark() {
			sl := n.slots[s]
			if ph := sl.phases[n.view]; ph != nil && ph.pp != nil {
				n.acceptPrePrepare(sl, ph)
			}
		}
	}
}

// forwardPending sends the requests a backup holds to the new primary and
// restarts the request timer (V1) if any wait.
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
