package coord

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// request is a caller's transaction: a sequence of attempts, each a new
// transaction with a new nonce, until one commits, one aborts for a reason a
// retry cannot change, or the retry budgets run out (K1, K5).
type request struct {
	c       *Core
	h       Handle
	ops     []txn.Op
	opts    Options
	done    func(*Result, error)
	started time.Time
	kind    txn.Kind
	// refreshOf is set on the internal request that reads group g's
	// metadata version and partition map (K1): it goes to g alone, at the
	// version held for g.
	refreshOf *bft.GroupID

	attempts, conflicts, refreshes int
	// blocker is the pending transaction the last conflict abort named
	// (hasBlocker: there was one).
	blocker      txn.TxnID
	hasBlocker   bool
	cur          *run
	last         *run
	waitingNonce bool
	cancelTimer  func()
	completed    bool
}

// check refuses, before any nonce is spent, what no group would accept.
func (r *request) check() error {
	if len(r.ops) == 0 {
		return fmt.Errorf("%w: no operations", ErrInvalid)
	}
	if writesMetadata(r.ops) && r.c.cfg.Admin == nil {
		return ErrNoAdminKey
	}
	gvs, err := r.c.route(r.ops, &r.opts, r.refreshOf)
	if err != nil {
		return err
	}
	t := &txn.Txn{Ops: r.ops, Groups: gvs, Owner: r.c.cfg.Owner}
	if err := r.c.cfg.Limits.Check(t); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.kind = t.Kind()
	return nil
}

// launch sends the next attempt, or queues it until a nonce is free.
func (r *request) launch() {
	r.cancelTimer = nil
	if r.completed {
		return
	}
	c := r.c
	if !c.canLaunch() {
		c.wait(r)
		return
	}
	gvs, err := c.route(r.ops, &r.opts, r.refreshOf)
	if err != nil {
		r.complete(nil, err)
		return
	}
	t := &txn.Txn{Ops: r.ops, Groups: gvs, Owner: c.cfg.Owner, Nonce: c.nextNonce, Watermark: c.watermark}
	if err := c.cfg.Limits.Check(t); err != nil {
		r.complete(nil, fmt.Errorf("%w: %w", ErrInvalid, err))
		return
	}
	enc := t.Encode()
	if len(enc) > c.cfg.Limits.MaxTxnBytes {
		r.complete(nil, fmt.Errorf("%w: transaction of %d bytes, at most %d", ErrInvalid, len(enc), c.cfg.Limits.MaxTxnBytes))
		return
	}
	id := c.dom.ID(enc)
	var admin *txn.AdminSig
	if t.WritesMetadata() {
		// M5: the admin signs the metadata transaction's id.
		admin = txn.SignAdmin(c.dom, id, c.cfg.Admin)
	}
	a := newRun(c, t, enc, id, admin, true)
	c.takeNonce(a)
	a.onDecide = r.decided
	r.cur, r.last = a, a
	r.kind = a.kind
	r.attempts++
	a.start()
}

// decided takes the outcome of the current attempt. The attempt goes on
// terminating by itself; the request completes or retries.
func (r *request) decided(a *run) {
	r.cur = nil
	if r.completed {
		return // cancelled: no retry
	}
	c := r.c
	if a.decided && a.outcome == txn.Commit {
		if a.t.WritesMetadata() {
			c.metadataCommitted(a)
		}
		r.complete(r.result(a, true), nil)
		return
	}
	ae := a.abortVote()
	if ae == nil {
		err := a.rejected
		if err == nil {
			err = errors.New("no vote")
		}
		r.complete(nil, fmt.Errorf("coord: transaction %s: %w", a.id, err))
		return
	}
	if r.retry(a, ae) {
		return
	}
	res := r.result(a, false)
	r.complete(res, &AbortedError{ID: a.id, Attempts: r.attempts, Cause: ae})
}

// retry decides whether an abort is retried, and arranges it.
func (r *request) retry(a *run, ae *txn.AbortError) bool {
	c := r.c
	switch ae.Reason {
	case txn.ReasonConflict, txn.ReasonTerminatedEarly:
		// K4: the conflicting transaction named is pending at the group;
		// if its owner does not finish it within the grace period, this
		// client does.
		c.recoverNamed(ae.Named, ae.Group)
		if r.conflicts >= r.maxRetries() {
			return false
		}
		// K5: bounded retries with jittered exponential back-off.
		r.conflicts++
		c.cfg.Metrics.retry(ae.Reason.String())
		if id, again := r.blockedAgain(ae); again && c.recovering(id) {
			// The same pending transaction blocked the retry too, and this
			// client is terminating it now (K4): until that recovery ends,
			// a retry could only meet it again and cost the groups another
			// ordered call. Retry once it ends, or after the longest
			// back-off if it takes longer.
			r.retryWhenRecovered(id)
			return true
		}
		r.retryAfter(c.backoff(r.conflicts))
		return true
	case txn.ReasonStaleMetadata:
		if r.opts.PinVersion && r.refreshOf == nil && ae.Version != r.opts.MetadataVersion {
			// K1 with a pinned version (Options.PinVersion): the caller
			// built these operations from metadata the group has moved
			// past; re-sending them could apply them to a schema they were
			// not built for. Learn the group's version (and map), then
			// report the abort: the caller reloads and rebuilds.
			res := r.result(a, false)
			err := &AbortedError{ID: a.id, Attempts: r.attempts, Cause: ae}
			c.learnVersion(ae.Group, ae.Version, func() { r.complete(res, err) })
			return true
		}
		if r.refreshes >= c.cfg.Tuning.MaxRefreshes {
			return false
		}
		r.refreshes++
		c.cfg.Metrics.retry(ae.Reason.String())
		if r.refreshOf != nil {
			// This is the refresh itself: read again at the version the
			// group showed.
			c.held[ae.Group] = ae.Version
			r.retryAfter(0)
			return true
		}
		if ae.Version != c.held[ae.Group] {
			// K1: the group's metadata changed: refresh, then retry.
			c.learnVersion(ae.Group, ae.Version, func() { r.retryAfter(0) })
			return true
		}
		// The version is right but a metadata transaction is queued at
		// the group (M4): recover what it waits for (K4), back off, retry;
		// once it commits the version moves and the retry refreshes.
		c.recoverNamed(ae.Named, ae.Group)
		r.retryAfter(c.backoff(r.refreshes))
		return true
	case txn.ReasonWrongGroups:
		// T5: the group's partition map routes the operations elsewhere:
		// ours is stale (K1). Read the group's map, then retry.
		if r.refreshOf != nil || r.refreshes >= c.cfg.Tuning.MaxRefreshes {
			return false
		}
		r.refreshes++
		c.cfg.Metrics.retry(ae.Reason.String())
		c.refreshMap(ae.Group, func() { r.retryAfter(c.backoff(r.refreshes)) })
		return true
	case txn.ReasonStaleNonce, txn.ReasonSecondID, txn.ReasonBeyondWindow:
		// W3 keeps a correct client from meeting these; another process
		// using this client's key would. A fresh nonce may go through.
		c.anomaly("window_abort", "group", ae.Group, "txn", a.id, "reason", ae.Reason.String(), "nonce", a.nonce)
		if r.refreshes >= c.cfg.Tuning.MaxRefreshes {
			return false
		}
		r.refreshes++
		c.cfg.Metrics.retry(ae.Reason.String())
		r.retryAfter(c.backoff(r.refreshes))
		return true
	}
	return false
}

func (r *request) maxRetries() int {
	switch m := r.opts.MaxRetries; {
	case m < 0:
		return 0
	case m > 0:
		return m
	}
	return r.c.cfg.Tuning.MaxRetries
}

func (r *request) retryAfter(d time.Duration) {
	if r.completed {
		return
	}
	r.cancelTimer = r.c.env.AfterFunc(d, r.launch)
}

// blockedAgain records the pending transaction a conflict abort names (E3
// names one) and reports whether the previous conflict of this request
// named the same one.
func (r *request) blockedAgain(ae *txn.AbortError) (txn.TxnID, bool) {
	if len(ae.Named) == 0 {
		r.hasBlocker = false
		return txn.TxnID{}, false
	}
	id := r.c.dom.ID(ae.Named[0].Txn)
	again := r.hasBlocker && r.blocker == id
	r.blocker, r.hasBlocker = id, true
	return id, again
}

// retryWhenRecovered retries after this client's recovery of id finishes
// (after a back-off of the first step, so the retries that waited spread
// out), or, if the recovery takes longer, after the longer of the back-off
// ceiling and the recovery grace (a recovery takes a few round trips, as an
// owner finishing its own transaction does).
func (r *request) retryWhenRecovered(id txn.TxnID) {
	c := r.c
	fired := false
	fire := func() {
		if fired {
			return
		}
		fired = true
		if r.cancelTimer != nil {
			r.cancelTimer()
		}
		r.retryAfter(c.backoff(1))
	}
	c.waiters[id] = append(c.waiters[id], fire)
	r.cancelTimer = c.env.AfterFunc(max(c.cfg.Tuning.BackoffMax, c.cfg.Tuning.RecoveryGrace), fire)
}

// result builds the caller's result from the last attempt.
func (r *request) result(a *run, committed bool) *Result {
	res := &Result{
		ID: a.id, Nonce: a.nonce, Kind: a.kind, Groups: a.t.GroupIDs(), Committed: committed,
		Attempts: r.attempts, Latency: r.c.env.Now().Sub(r.started),
	}
	if committed {
		res.Ops = assemble(a.t, a.votes())
		return res
	}
	res.Abort = a.abortVote()
	if res.Abort != nil && res.Abort.Reason == txn.ReasonConflict && len(res.Abort.Named) > 0 {
		id := r.c.dom.ID(res.Abort.Named[0].Txn)
		res.Blocker = &id
	}
	return res
}

// cancel: the caller is gone (Core.Cancel).
func (r *request) cancel() {
	if r.completed {
		return
	}
	if r.cancelTimer != nil {
		r.cancelTimer()
		r.cancelTimer = nil
	}
	r.c.unwait(r)
	r.complete(nil, ErrCanceled)
}

// complete reports to the caller, once.
func (r *request) complete(res *Result, err error) {
	if r.completed {
		return
	}
	r.completed = true
	if r.cancelTimer != nil {
		r.cancelTimer()
		r.cancelTimer = nil
	}
	r.c.unwait(r)
	delete(r.c.requests, r.h)
	if r.refreshOf == nil {
		r.c.cfg.Metrics.transaction(r.kind, outcomeLabel(res, err), r.c.env.Now().Sub(r.started).Seconds())
	}
	r.done(res, err)
}

func outcomeLabel(res *Result, err error) string {
	var ae *AbortedError
	switch {
	case err == nil:
		return "committed"
	case errors.As(err, &ae):
		return ae.Cause.Reason.String()
	case errors.Is(err, ErrCanceled):
		return "canceled"
	case res == nil:
		return "rejected"
	}
	return "error"
}

// metadataCommitted updates the metadata view after one of this client's
// metadata transactions committed: every group's version went up by one
// (M2), and a partition-map write replaced the map (M3).
func (c *Core) metadataCommitted(a *run) {
	for _, gv := range a.t.Groups {
		if c.held[gv.Group] == gv.Version {
			c.held[gv.Group] = gv.Version + 1
		}
	}
	v := a.t.Groups[0].Version + 1
	for i := range a.t.Ops {
		op := &a.t.Ops[i]
		if op.Meta && op.Kind == txn.OpWrite && bytes.Equal(op.Key, txn.MetaPartitionsKey) {
			if m, err := oracle.Decode(op.Value); err == nil && v > c.pmapVersion {
				c.pmap, c.pmapVersion = m, v
			}
			return
		}
	}
	if c.pmapVersion+1 == v {
		c.pmapVersion = v
	}
}
