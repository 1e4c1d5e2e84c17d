package coord

import (
	"errors"
	"fmt"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// A run is one transaction's life at its groups, from the first call to the
// moment nothing more is owed to any group:
//
//   - as owner (an attempt of a caller's transaction, a map refresh, or a
//     transaction resumed after a restart, W3): send it to every declared
//     group in the owner's envelope (T3); decide on the votes; terminate —
//     nothing more for a single group (E7), the owner's release for a
//     read-only transaction (E8), a certificate for an update (E10) — and
//     prove the termination to every group that voted commit (K3, W2).
//     Only then does the nonce count as finished for the watermark (W1).
//   - as recoverer of another owner's pending transaction (K4): re-send it
//     byte-identical to the group that named it, which answers with its
//     recorded vote, signed (E1); relay it with those votes to the other
//     groups (T3); decide and terminate with a certificate as above. The
//     proof stays the owner's business (W2).
type run struct {
	c       *Core
	owner   bool
	resumed bool // owner: resumed after a restart (W3)
	t       *txn.Txn
	enc     []byte
	id      txn.TxnID
	admin   *txn.AdminSig
	kind    txn.Kind
	nonce   uint64
	call    []byte // the transaction call (owner's delivery, or recoverer's copy)
	parts   []part // one per declared group, in group order
	from    int    // recoverer: the part whose group named the transaction
	// started: the recovery's grace period is over and it is terminating
	// the transaction (recoverers only).
	started bool
	relayed bool // recoverer: the relays are out
	raced   bool // recoverer: a group had terminated or forgotten it already

	decided   bool
	outcome   txn.Decision
	decider   int // the part whose abort votes decided; -1 otherwise
	cert      *txn.Certificate
	rejected  error // a group rejected the transaction (T4)
	decidedAt time.Time
	// onDecide is called once, when the outcome is to be reported (a
	// caller's attempt, a map refresh): see report.
	onDecide func(*run)

	stuck    bool   // no correct group answers this way: see stick
	result   string // recoverer: how it ended, for metrics
	finished bool
	timers   []func()
}

type partState uint8

const (
	partNone     partState = iota
	partVoted              // vote holds the group's vote
	partQueued             // a metadata transaction waits at the group (M4)
	partRejected           // the group rejected the transaction (T4)
)

// part is what one group said and was told.
type part struct {
	g     bft.GroupID
	state partState
	vote  *txn.Result
	sigs  *txn.GroupSigs // f+1 signed votes, when the vote is signed
	polls int
	// rejects counts the rejections of this group's calls so far (see
	// Tuning.RejectRetries).
	rejects int

	termSent, termDone   bool
	acks                 *txn.GroupSigs // f+1 signed acknowledgements (E10, W2)
	proofSent, proofDone bool
}

func newRun(c *Core, t *txn.Txn, enc []byte, id txn.TxnID, admin *txn.AdminSig, owner bool) *run {
	r := &run{c: c, owner: owner, t: t, enc: enc, id: id, admin: admin, kind: t.Kind(), nonce: t.Nonce,
		decider: -1, parts: make([]part, len(t.Groups))}
	for i, gv := range t.Groups {
		r.parts[i].g = gv.Group
	}
	r.call = txn.NewTxnCall(enc, admin)
	return r
}

// signedVotes reports whether this run needs the groups' votes signed: a
// multi-group update always (its certificate, E9, E10); a recoverer of a
// read-only transaction too (it terminates with a certificate, E8). The
// owner of a multi-group read-only transaction releases it without one.
func (r *run) signedVotes() bool {
	return r.t.MultiGroup() && (!r.t.ReadOnly() || !r.owner)
}

// start sends the first calls.
func (r *run) start() {
	if r.finished {
		return
	}
	if !r.owner {
		r.started = true
		r.askVote(r.from)
		return
	}
	if o := r.c.cfg.Observer; o != nil {
		o.Sent(r.id, r.t)
	}
	r.c.cfg.Metrics.attempt(r.kind)
	// Parallel multicast: one call per involved group, all at once.
	for i := range r.parts {
		r.askVote(i)
	}
}

// askVote asks group i for its vote: the transaction itself (the owner's
// delivery; a recoverer's copy to the group that named it, answered from its
// records, T3, E1), or a relay carrying the naming group's signed votes.
func (r *run) askVote(i int) {
	p := &r.parts[i]
	payload := r.call
	if !r.owner && i != r.from {
		fp := &r.parts[r.from]
		payload = txn.NewRelayCall(r.enc, r.admin, txn.Relay{Decision: fp.vote.Decision, Votes: *fp.sigs})
	}
	r.c.env.Invoke(p.g, payload, func(res client.Result) { r.onVote(i, res) })
}

// onVote takes group i's answer to a transaction or relay call.
func (r *run) onVote(i int, res client.Result) {
	p := &r.parts[i]
	if r.finished || p.state == partVoted || p.state == partRejected {
		return // late: a vote is final (E1), the first one counts
	}
	out, err := r.c.decode(p.g, r.id, res)
	if err != nil {
		var rej *client.RejectedError
		switch {
		case errors.As(err, &rej) && r.retryRejected(p, rej):
			r.after(r.rejectDelay(), func() { r.askVote(i) })
			return
		case errors.As(err, &rej):
			p.state = partRejected
			if r.rejected == nil {
				r.rejected = fmt.Errorf("group %d: %w", p.g, err)
			}
		case errors.Is(err, errAnomaly):
			r.pollLater(i)
			return
		default:
			r.abandon(err)
			return
		}
		r.step()
		return
	}
	switch out.Kind {
	case txn.ResultVote:
		if r.signedVotes() {
			if !out.Signed {
				r.c.anomaly("unsigned_vote", "group", p.g, "txn", r.id)
				r.pollLater(i)
				return
			}
			if p.sigs = r.c.groupSigs(p.g, res.Sigs); p.sigs == nil {
				r.c.anomaly("short_signatures", "group", p.g, "txn", r.id, "sigs", len(res.Sigs))
				r.pollLater(i)
				return
			}
		}
		p.state, p.vote = partVoted, out
	case txn.ResultQueued:
		// M4: a metadata transaction waits behind pending data
		// transactions. Recover what it waits for (K4), and ask again: a
		// re-delivery answers "queued" until it drains, then its vote (E1).
		p.state = partQueued
		r.c.recoverNamed(out.Named, p.g)
		r.pollLater(i)
		return
	case txn.ResultRefusal:
		if !r.owner && i == r.from && out.Code == txn.RefuseNoRecord {
			// K4: no record at the group that named it: the blocker is gone
			// (terminated, and forgotten below its owner's watermark).
			r.end("gone")
			return
		}
		r.c.anomaly("refused_delivery", "group", p.g, "txn", r.id, "refusal", out.Message)
		p.state = partRejected
		if r.rejected == nil {
			r.rejected = fmt.Errorf("group %d: %w", p.g, out.Err())
		}
	default:
		r.c.anomaly("unexpected_result", "group", p.g, "txn", r.id, "result", out.String())
		r.pollLater(i)
		return
	}
	r.step()
}

// retryRejected reports whether a rejected call to p's group is sent again
// (Tuning.RejectRetries). A call the application's validation rejected is
// rejected again every time (its own fault, the envelope's other calls went
// through: DESIGN.md §3.2); a rejection of the whole envelope — its
// signature, its size, its encoding — is not the call's doing, and another
// envelope may carry it.
func (r *run) retryRejected(p *part, rej *client.RejectedError) bool {
	if rej.Call || p.rejects >= r.c.cfg.Tuning.RejectRetries {
		return false
	}
	p.rejects++
	return true
}

// rejectDelay is a random delay in [PollInterval, 4·PollInterval] before a
// rejected call is sent again: calls rejected together (one envelope) go
// back at different moments, so the invalid one stops taking the others
// down with it.
func (r *run) rejectDelay() time.Duration {
	p := r.c.cfg.Tuning.PollInterval
	return p + time.Duration(r.c.rng.Int64N(int64(3*p)+1))
}

// pollLater asks group i again after the poll interval, doubling per poll up
// to PollMax (a queued metadata transaction, M4; or an answer no correct
// group gives).
// A recoverer gives up after MaxRecoveryPolls: the transaction is not its
// own, and another client (or its owner) may finish it.
func (r *run) pollLater(i int) {
	p := &r.parts[i]
	tn := r.c.cfg.Tuning
	if !r.owner && p.polls >= tn.MaxRecoveryPolls {
		r.end("failed")
		return
	}
	d := min(tn.PollInterval<<min(p.polls, 16), tn.PollMax)
	p.polls++
	r.after(d, func() { r.askVote(i) })
}

func (r *run) after(d time.Duration, f func()) {
	r.timers = append(r.timers, r.c.env.AfterFunc(d, func() {
		if !r.finished {
			f()
		}
	}))
}

// step moves the run on after an answer.
func (r *run) step() {
	if r.finished {
		return
	}
	if !r.decided {
		r.decide()
	}
	if r.decided && !r.stuck && !r.finished {
		r.terminate()
	}
}

// decide decides the outcome as soon as the votes allow (E10): one group's
// abort decides abort (an ABORT certificate is f+1 signed abort votes of
// one group), commit takes every group's commit vote.
func (r *run) decide() {
	for i := range r.parts {
		if p := &r.parts[i]; p.state == partVoted && p.vote.Decision == txn.Abort {
			r.setOutcome(txn.Abort, i)
			return
		}
	}
	if !r.owner {
		if r.parts[r.from].state == partRejected {
			r.end("failed")
			return
		}
		if fp := &r.parts[r.from]; fp.state == partVoted && !r.relayed {
			// T3, K4: the naming group's commit votes make the relay count
			// as the owner's delivery at the other groups.
			r.relayed = true
			for i := range r.parts {
				if i != r.from {
					r.askVote(i)
				}
			}
		}
	}
	answered, commit := 0, 0
	for i := range r.parts {
		switch r.parts[i].state {
		case partVoted:
			answered++
			commit++
		case partRejected:
			answered++
		}
	}
	switch {
	case commit == len(r.parts):
		r.setOutcome(txn.Commit, -1)
	case r.rejected != nil && !r.owner:
		r.end("failed")
	case r.rejected != nil && answered == len(r.parts):
		// A group rejected the transaction (its validation failed, T4); as
		// validation is the same everywhere, normally every group did.
		r.setOutcome(txn.Abort, -1)
	}
}

// setOutcome records the outcome, builds the certificate (E10) when the run
// terminates with one, and tells whoever waits for the decision.
func (r *run) setOutcome(d txn.Decision, by int) {
	r.decided, r.outcome, r.decider, r.decidedAt = true, d, by, r.c.env.Now()
	if r.signedVotes() {
		switch {
		case d == txn.Commit:
			cert := &txn.Certificate{Decision: txn.Commit, Parts: make([]txn.GroupSigs, len(r.parts))}
			for i := range r.parts {
				cert.Parts[i] = *r.parts[i].sigs
			}
			r.cert = cert
		case by >= 0:
			r.cert = &txn.Certificate{Decision: txn.Abort, Parts: []txn.GroupSigs{*r.parts[by].sigs}}
		}
	}
	if o := r.c.cfg.Observer; o != nil && !r.staleAbort() {
		o.Decided(r.id, d, !r.owner)
	}
	if r.c.cfg.Tuning.ReportAtDecision || !r.t.MultiGroup() {
		r.report()
	}
}

// report tells the caller the outcome (K3). By default a multi-group
// transaction is reported once every group acknowledged its termination:
// the caller's next transaction then never meets the locks of its previous
// one, and a retry never conflicts with the attempt it replaces — at the
// price of one round trip, which Tuning.ReportAtDecision saves. The proofs
// follow in the background either way.
func (r *run) report() {
	if f := r.onDecide; f != nil {
		r.onDecide = nil
		f(r)
	}
}

// staleAbort reports whether a recoverer decided on an abort that E2 gives
// without recording it (stale nonce, second id, beyond the window): the
// group can no longer vote on the transaction, so it must abort wherever it
// is still pending — but it may have terminated long ago, with either
// outcome, where it is not (its owner finished it and the watermark passed
// it). Such a decision terminates, but says nothing about the outcome.
func (r *run) staleAbort() bool {
	if r.owner || r.decider < 0 {
		return false
	}
	switch r.parts[r.decider].vote.Reason {
	case txn.ReasonStaleNonce, txn.ReasonSecondID, txn.ReasonBeyondWindow:
		return true
	}
	return false
}

// abortVote returns the abort that decided an aborted run (nil if a
// rejection decided it).
func (r *run) abortVote() *txn.AbortError {
	if r.decider < 0 {
		return nil
	}
	ae, _ := r.parts[r.decider].vote.Err().(*txn.AbortError)
	return ae
}

// votes returns the groups' votes in group order (for the results).
func (r *run) votes() []*txn.Result {
	out := make([]*txn.Result, 0, len(r.parts))
	for i := range r.parts {
		if r.parts[i].vote != nil {
			out = append(out, r.parts[i].vote)
		}
	}
	return out
}

// terminate sends what ends the transaction at every group, and the proofs,
// and finishes the run when nothing more is owed.
func (r *run) terminate() {
	switch {
	case !r.t.MultiGroup():
		// E7: a single group's vote is the outcome; nothing is pending.
		r.finish()
		return
	case r.owner && r.t.ReadOnly():
		// E8: the owner releases its read-only transaction itself (its
		// envelope signature authenticates the release).
		for i := range r.parts {
			if p := &r.parts[i]; !p.termSent {
				p.termSent = true
				r.c.env.Invoke(p.g, txn.NewReleaseCall(r.enc, r.outcome), func(res client.Result) { r.onTerm(i, res) })
			}
		}
	case r.cert != nil:
		// K3: the outcome with its certificate to every involved group; the
		// group client re-sends until f+1 (signed) acknowledgements match.
		payload := txn.NewOutcomeCall(r.enc, r.admin, *r.cert)
		for i := range r.parts {
			if p := &r.parts[i]; !p.termSent {
				p.termSent = true
				r.c.env.Invoke(p.g, payload, func(res client.Result) { r.onTerm(i, res) })
			}
		}
	default:
		// No certificate: a rejection decided. Groups that rejected the
		// transaction recorded nothing; one that voted commit holds it
		// pending, and no certificate can terminate it.
		r.report()
		for i := range r.parts {
			if r.parts[i].state == partVoted {
				r.stick("rejected_after_commit_vote", i)
				return
			}
		}
		r.finish()
		return
	}
	for i := range r.parts {
		if !r.parts[i].termDone {
			return
		}
	}
	r.report()
	if !r.owner || r.t.ReadOnly() {
		r.finish()
		return
	}
	r.prove()
}

// prove sends the termination proof (W2, K3): to every group that voted
// commit, the f+1 signed acknowledgements of every other involved group, so
// it may forget its commit vote once the watermark passes it. It waits for
// every vote: a group that never answered may still have voted commit (the
// outcome reached it later than the transaction).
func (r *run) prove() {
	for i := range r.parts {
		if s := r.parts[i].state; s != partVoted && s != partRejected {
			return
		}
	}
	done := true
	for i := range r.parts {
		p := &r.parts[i]
		if p.state != partVoted || p.vote.Decision != txn.Commit {
			continue
		}
		if !p.proofSent {
			acks := make([]txn.GroupSigs, 0, len(r.parts)-1)
			for j := range r.parts {
				if j == i {
					continue
				}
				if r.parts[j].acks == nil {
					r.stick("proof_without_acks", j)
					return
				}
				acks = append(acks, *r.parts[j].acks)
			}
			p.proofSent = true
			r.c.env.Invoke(p.g, txn.NewProofCall(r.enc, r.admin, r.outcome, acks), func(res client.Result) { r.onProof(i, res) })
		}
		done = done && p.proofDone
	}
	if done {
		r.finish()
	}
}

// onTerm takes group i's answer to a release or an outcome.
func (r *run) onTerm(i int, res client.Result) {
	p := &r.parts[i]
	if r.finished || p.termDone {
		return
	}
	out, err := r.c.decode(p.g, r.id, res)
	if err != nil {
		var rej *client.RejectedError
		switch {
		case errors.As(err, &rej) && p.state == partRejected:
			// The group rejected the transaction itself: it holds nothing.
			p.termDone = true
			r.step()
		case errors.As(err, &rej) && r.retryRejected(p, rej):
			r.after(r.rejectDelay(), func() { p.termSent = false; r.step() })
		case errors.As(err, &rej):
			r.stick("termination_rejected", i)
		case errors.Is(err, errAnomaly):
			r.after(r.c.cfg.Tuning.PollInterval, func() { p.termSent = false; r.step() })
		default:
			r.abandon(err)
		}
		return
	}
	if !r.owner && (out.Kind == txn.ResultAck && out.Decision != r.outcome ||
		out.Kind == txn.ResultRefusal && out.Code == txn.RefuseVoteMismatch) {
		// A recoverer races the owner and other recoverers: the group
		// terminated the transaction otherwise, or forgot it (its record
		// went once the owner proved it and its watermark passed it, W2) and
		// so denies the vote the certificate claims. Either way it holds
		// nothing: nothing more to do there.
		p.termDone = true
		r.raced = true
		r.step()
		return
	}
	switch {
	case out.Kind == txn.ResultAck && out.Decision == r.outcome:
		if r.cert != nil {
			if p.acks = r.c.groupSigs(p.g, res.Sigs); p.acks == nil || !out.Signed {
				r.c.anomaly("unsigned_ack", "group", p.g, "txn", r.id)
				r.after(r.c.cfg.Tuning.PollInterval, func() { p.termSent = false; r.step() })
				return
			}
		}
		p.termDone = true
		r.step()
	case out.Kind == txn.ResultAck:
		// The group says the transaction terminated with the other outcome:
		// more than f of its replicas are faulty, or a certificate of the
		// other outcome exists — either breaks the protocol's assumptions.
		r.stick("ack_of_other_outcome", i)
	default:
		r.c.anomaly("termination_refused", "group", p.g, "txn", r.id, "result", out.String())
		r.stick("termination_refused", i)
	}
}

// onProof takes group i's answer to the termination proof.
func (r *run) onProof(i int, res client.Result) {
	p := &r.parts[i]
	if r.finished || p.proofDone {
		return
	}
	out, err := r.c.decode(p.g, r.id, res)
	var rej *client.RejectedError
	switch {
	case err == nil && out.Kind == txn.ResultProofAck:
		p.proofDone = true
		r.step()
	case err == nil && out.Kind == txn.ResultRefusal && out.Code == txn.RefusePending:
		// The outcome was acknowledged first, so this cannot be; ask again.
		r.c.anomaly("proof_while_pending", "group", p.g, "txn", r.id)
		r.after(r.c.cfg.Tuning.PollInterval, func() { p.proofSent = false; r.step() })
	case errors.As(err, &rej) && r.retryRejected(p, rej):
		r.after(r.rejectDelay(), func() { p.proofSent = false; r.step() })
	case err != nil && !errors.Is(err, errAnomaly) && !errors.As(err, new(*client.RejectedError)):
		r.abandon(err)
	default:
		r.stick("proof_refused", i)
	}
}

// stick marks a run that no correct group lets finish: it stays unfinished
// (its nonce holds the watermark, as it must: a group may hold it pending),
// and the anomaly is counted and logged.
func (r *run) stick(why string, i int) {
	r.stuck = true
	r.report()
	r.c.anomaly(why, "group", r.parts[i].g, "txn", r.id, "nonce", r.nonce, "owner", r.owner)
	if !r.owner {
		r.end("failed")
	}
}

// abandon stops a run whose host went away (the group client is closed).
func (r *run) abandon(err error) {
	if r.finished {
		return
	}
	r.c.cfg.Logger.Debug("coord: run abandoned", "txn", r.id, "err", err)
	if !r.owner {
		r.end("failed")
		return
	}
	r.stuck = true
	if !r.decided {
		r.rejected = err
	}
	r.report()
}

// end finishes a recoverer's run with a result.
func (r *run) end(result string) {
	r.result = result
	r.finish()
}

// finish: nothing more is owed to any group.
func (r *run) finish() {
	if r.finished {
		return
	}
	r.finished = true
	r.report()
	for _, cancel := range r.timers {
		cancel()
	}
	r.timers = nil
	if !r.owner {
		switch {
		case r.result != "":
		case r.raced || r.staleAbort():
			r.result = "raced"
		case r.outcome == txn.Abort:
			r.result = "aborted"
		default:
			r.result = "committed"
		}
		r.c.recoveryFinished(r)
		return
	}
	if r.decided {
		r.c.cfg.Metrics.terminated(r.kind, r.c.env.Now().Sub(r.decidedAt).Seconds())
	}
	r.c.nonceFinished(r)
}
