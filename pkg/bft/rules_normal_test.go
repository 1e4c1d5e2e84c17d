package bft_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Tests of the normal case, pbft.md N1–N7.

// N1: an idle primary proposes a single request at once, without waiting
// for a full batch.
func TestN1_IdlePrimaryProposesSingleRequestAtOnce(t *testing.T) {
	c := newCluster(t, 1)
	r := c.next(0)
	if err := c.propose(0, r); err != nil {
		t.Fatal(err)
	}
	pps := sentPrePrepares(c.reps[0].msgs)
	if len(pps) != 1 {
		t.Fatalf("primary sent %d PRE-PREPAREs after one request, want 1", len(pps))
	}
	pp := pps[0]
	if pp.View != 0 || pp.Seq != 1 || len(pp.Batch.GetRequests()) != 1 || !protoEqual(pp.Batch.Requests[0], r) {
		t.Fatalf("PRE-PREPARE = v%d s%d with %d requests, want v0 s1 with the request", pp.View, pp.Seq, len(pp.Batch.GetRequests()))
	}
	if !bytes.Equal(pp.Digest, c.digest(pp.Batch)) {
		t.Fatalf("PRE-PREPARE digest is not the digest of its batch")
	}
	if err := c.checker.Message(msg(0, pp)); err != nil {
		t.Fatalf("checker rejects the primary's PRE-PREPARE: %v", err)
	}
}

// N1: with the pipeline window full, requests queue; when the window
// opens, everything queued forms one larger batch.
func TestN1_QueuedRequestsFormOneBatchWhenWindowOpens(t *testing.T) {
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.PipelineWindow = 1 })
	if err := c.propose(0, c.next(0)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := c.propose(0, c.next(i)); err != nil {
			t.Fatal(err)
		}
	}
	pps := sentPrePrepares(c.reps[0].msgs)
	if len(pps) != 1 {
		t.Fatalf("primary proposed %d batches with a pipeline window of 1 and nothing executed, want 1", len(pps))
	}
	c.reps[0].reset()
	c.settle() // seq 1 executes everywhere, the window opens
	pps = sentPrePrepares(c.reps[0].msgs)
	if len(pps) != 1 {
		t.Fatalf("after the window opened the primary proposed %d batches, want 1 batch with the 3 queued requests", len(pps))
	}
	if pps[0].Seq != 2 || len(pps[0].Batch.Requests) != 3 {
		t.Fatalf("second batch is seq %d with %d requests, want seq 2 with 3", pps[0].Seq, len(pps[0].Batch.Requests))
	}
	for i, r := range c.reps {
		if r.node.LastExecuted() != 2 {
			t.Errorf("r%d executed up to %d, want 2", i, r.node.LastExecuted())
		}
	}
}

// N1: the primary assigns consecutive sequence numbers and never proposes
// above H = h + L; once the checkpoint moves h it goes on where it stopped.
func TestN1_PrimaryNeverProposesAboveHighWatermark(t *testing.T) {
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.PipelineWindow = 100 })
	for i := 0; i < tL+2; i++ {
		if err := c.propose(0, c.next(i%8)); err != nil {
			t.Fatal(err)
		}
	}
	pps := sentPrePrepares(c.reps[0].msgs)
	if len(pps) != tL {
		t.Fatalf("primary proposed %d batches with h=0, L=%d: want exactly L", len(pps), tL)
	}
	for i, pp := range pps {
		if pp.Seq != uint64(i+1) {
			t.Fatalf("batch %d has seq %d, want %d (consecutive)", i, pp.Seq, i+1)
		}
	}
	c.reps[0].reset()
	c.settle()
	if h := c.node(0).LowWatermark(); h != tL {
		t.Fatalf("h = %d after executing %d batches, want %d", h, tL, tL)
	}
	pps = sentPrePrepares(c.reps[0].msgs)
	if len(pps) != 1 || pps[0].Seq != tL+1 || len(pps[0].Batch.Requests) != 2 {
		t.Fatalf("after h moved the primary proposed %d batches (first %v), want one at seq %d with the 2 held requests", len(pps), pps, tL+1)
	}
}

// N2: the checker rejects a PRE-PREPARE that is not from the primary of its view.
func TestN2_CheckerRejectsPrePrepareNotFromPrimary(t *testing.T) {
	c := newCluster(t, 1)
	b := c.batch(c.next(0))
	// Signed by backup 1 as itself.
	if err := c.checker.Message(msg(1, c.prePrepare(0, 1, b, 1))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("PRE-PREPARE(v0) from replica 1: err = %v, want ErrWrongSigner", err)
	}
	// The primary's PRE-PREPARE relayed by another replica.
	if err := c.checker.Message(msg(1, c.prePrepare(0, 1, b, 0))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("PRE-PREPARE of replica 0 sent by 1: err = %v, want ErrWrongSigner", err)
	}
	// Claims to be the primary, signed by another key.
	pp := c.prePrepare(0, 1, b, 0)
	pp.Signature = c.sign(1, c.dom.PrePrepareBytes(pp))
	if err := c.checker.Message(msg(0, pp)); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("PRE-PREPARE with replica 1's signature as 0: err = %v, want ErrBadSignature", err)
	}
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, b, 0))); err != nil {
		t.Errorf("valid PRE-PREPARE rejected: %v", err)
	}
	if err := c.checker.Message(msg(1, c.prePrepare(1, 1, b, 1))); err != nil {
		t.Errorf("valid PRE-PREPARE of view 1 rejected: %v", err)
	}
}

// N2: the checker rejects a PRE-PREPARE whose digest is not its batch's.
func TestN2_CheckerRejectsPrePrepareDigestNotMatchingBatch(t *testing.T) {
	c := newCluster(t, 1)
	b1, b2 := c.batch(c.next(0)), c.batch(c.next(1))
	pp := c.ppHeader(0, 1, c.digest(b1), 0)
	pp.Batch = b2
	if err := c.checker.Message(msg(0, pp)); !errors.Is(err, bft.ErrBadDigest) {
		t.Fatalf("PRE-PREPARE with digest(b1) and body b2: err = %v, want ErrBadDigest", err)
	}
	pp.Batch = b1
	if err := c.checker.Message(msg(0, pp)); err != nil {
		t.Fatalf("matching body rejected: %v", err)
	}
}

// N2: every request in the batch must be valid: client signature, size
// limits and the application's stateless validation.
func TestN2_CheckerRejectsPrePrepareWithInvalidRequest(t *testing.T) {
	c := newCluster(t, 1)
	good := c.next(0)
	forged := c.next(1)
	forged.Payload = append(forged.Payload, 'x') // signature no longer covers it
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, c.batch(good, forged), 0))); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("batch with a forged client signature: err = %v, want ErrBadSignature", err)
	}
	big := c.request(2, 1, 0, string(make([]byte, 2000)))
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, c.batch(good, big), 0))); !errors.Is(err, bft.ErrTooLarge) {
		t.Errorf("batch with an oversized request: err = %v, want ErrTooLarge", err)
	}
	c.validate = func(p []byte) error {
		if bytes.Contains(p, []byte("evil")) {
			return errors.New("evil")
		}
		return nil
	}
	evil := c.request(3, 1, 0, "evil")
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, c.batch(good, evil), 0))); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("batch with a request the application rejects: err = %v, want ErrInvalidRequest", err)
	}
	var many []*bftpb.Request
	for i := 0; i < 17; i++ {
		many = append(many, c.request(i%8, uint64(i/8+1), 0, "m"))
	}
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, c.batch(many...), 0))); !errors.Is(err, bft.ErrTooLarge) {
		t.Errorf("batch above MaxBatchRequests: err = %v, want ErrTooLarge", err)
	}
	if err := c.checker.Message(msg(0, c.prePrepare(0, 1, c.batch(good), 0))); err != nil {
		t.Errorf("valid batch rejected: %v", err)
	}
}

// N2: a backup in view 0 does not accept (PREPARE) a PRE-PREPARE of a
// later view, and drops one beyond the bounded buffer of future views.
func TestN2_BackupDoesNotAcceptPrePrepareOfAnotherView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	c.step(2, msg(1, c.prePrepare(1, 1, b, 1)))
	if p := sentPrepares(c.reps[2].msgs); len(p) != 0 {
		t.Fatalf("backup in view 0 prepared a PRE-PREPARE of view 1: %v", p)
	}
	before := dropped(c.node(2), "wrong_view")
	far := uint64(tMaxFut + 1)
	c.step(2, msg(int(far%4), c.prePrepare(far, 1, b, int(far%4))))
	if dropped(c.node(2), "wrong_view") != before+1 {
		t.Fatalf("PRE-PREPARE of view %d (beyond MaxFutureViews) was not dropped", far)
	}
	c.step(2, msg(0, c.prePrepare(0, 1, b, 0)))
	if p := sentPrepares(c.reps[2].msgs); len(p) != 1 || p[0].View != 0 {
		t.Fatalf("backup did not prepare the PRE-PREPARE of its view: %v", p)
	}
}

// N2: a backup in a view change accepts no PRE-PREPARE: not of the old
// view, and not of the new view before its NEW-VIEW.
func TestN2_BackupInViewChangeAcceptsNoPrePrepare(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	if v, changing := c.node(2).View(); v != 1 || !changing {
		t.Fatalf("r2 is in view %d (changing %v), want a view change to 1", v, changing)
	}
	c.reps[2].reset()
	b := c.batch(c.next(1))
	c.step(2, msg(0, c.prePrepare(0, 1, b, 0)))
	c.step(2, msg(1, c.prePrepare(1, 1, b, 1)))
	if p := sentPrepares(c.reps[2].msgs); len(p) != 0 {
		t.Fatalf("backup in a view change sent PREPAREs: %v", p)
	}
}

// N2: a backup accepts a PRE-PREPARE only for h < s <= H.
func TestN2_BackupDropsPrePrepareOutsideWatermarks(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	before := dropped(c.node(1), "watermark")
	c.step(1, msg(0, c.prePrepare(0, tL+1, c.batch(c.next(0)), 0)))
	if p := sentPrepares(c.reps[1].msgs); len(p) != 0 {
		t.Fatalf("backup prepared seq %d above H=%d", tL+1, tL)
	}
	if dropped(c.node(1), "watermark") != before+1 {
		t.Fatalf("PRE-PREPARE above H not counted as a watermark drop")
	}
	c.step(1, msg(0, c.prePrepare(0, tL, c.batch(c.next(1)), 0)))
	if p := sentPrepares(c.reps[1].msgs); len(p) != 1 || p[0].Seq != tL {
		t.Fatalf("backup did not prepare seq H=%d: %v", tL, p)
	}
}

// N2: a backup accepts one PRE-PREPARE per (v, s): a second one with
// another digest gets no PREPARE, counts as an equivocation, and cannot
// commit even with a full set of PREPAREs and COMMITs for it.
func TestN2_SecondPrePrepareForSameViewSeqIsRefused(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	bA, bB := c.batch(c.next(0)), c.batch(c.next(1))
	c.step(1, msg(0, c.prePrepare(0, 1, bA, 0)))
	c.step(1, msg(0, c.prePrepare(0, 1, bB, 0)))
	ps := sentPrepares(c.reps[1].msgs)
	if len(ps) != 1 || !bytes.Equal(ps[0].Digest, c.digest(bA)) {
		t.Fatalf("PREPAREs after two PRE-PREPAREs for (v0, s1): %d, want one for the first digest", len(ps))
	}
	if eq := c.node(1).Stats().Equivocations; eq != 1 {
		t.Fatalf("Equivocations = %d, want 1", eq)
	}
	dB := c.digest(bB)
	for _, j := range []int{2, 3} {
		c.step(1, msg(j, c.prepare(0, 1, dB, j)))
	}
	for _, j := range []int{0, 2, 3} {
		c.step(1, msg(j, c.commit(0, 1, dB, j)))
	}
	if len(c.reps[1].execs) != 0 || len(sentCommits(c.reps[1].msgs)) != 0 {
		t.Fatalf("the second digest for (v0, s1) committed or executed at r1")
	}
}

// N2: a batch with an invalid request is rejected (the checker) and the
// backup's request timer runs on, into a view change.
func TestN2_InvalidBatchLetsRequestTimerRun(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	if err := c.propose(1, r); err != nil {
		t.Fatal(err)
	}
	bad := c.next(1)
	bad.Signature[0] ^= 1
	pp := c.prePrepare(0, 1, c.batch(r, bad), 0)
	if err := c.checker.Message(msg(0, pp)); err == nil {
		t.Fatalf("checker accepted a batch with a forged request")
	}
	// The others vote for it; r1 never held its PRE-PREPARE.
	for _, j := range []int{2, 3} {
		c.step(1, msg(j, c.prepare(0, 1, pp.Digest, j)))
	}
	for _, j := range []int{0, 2, 3} {
		c.step(1, msg(j, c.commit(0, 1, pp.Digest, j)))
	}
	c.tick(1, tReqTO)
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("r1 executed a batch it never accepted")
	}
	if vcs := sentViewChanges(c.reps[1].msgs); len(vcs) != 1 || vcs[0].View != 1 {
		t.Fatalf("request timer did not expire into VIEW-CHANGE(1): %v", vcs)
	}
}

// N3: on accepting a PRE-PREPARE a backup sends PREPARE(v, s, d, i) to all.
func TestN3_BackupSendsPrepareOnAccepting(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	c.step(2, msg(0, c.prePrepare(0, 1, b, 0)))
	var found bool
	for _, o := range c.reps[2].msgs {
		p := o.Msg.GetPrepare()
		if p == nil {
			continue
		}
		found = true
		if !o.Broadcast {
			t.Errorf("PREPARE not sent to all")
		}
		if p.View != 0 || p.Seq != 1 || !bytes.Equal(p.Digest, c.digest(b)) || p.Replica != 2 {
			t.Errorf("PREPARE = (v%d, s%d, %x, r%d), want (0, 1, d, 2)", p.View, p.Seq, p.Digest[:4], p.Replica)
		}
		if err := c.checker.Message(o.Msg); err != nil {
			t.Errorf("checker rejects the backup's PREPARE: %v", err)
		}
	}
	if !found {
		t.Fatal("backup sent no PREPARE")
	}
}

// N3: the primary sends no PREPARE: its PRE-PREPARE stands for it.
func TestN3_PrimarySendsNoPrepare(t *testing.T) {
	c := newCluster(t, 1)
	for i := 0; i < 3; i++ {
		if err := c.propose(0, c.next(i)); err != nil {
			t.Fatal(err)
		}
		c.settle()
	}
	if c.node(0).LastExecuted() != 3 {
		t.Fatalf("primary executed %d, want 3", c.node(0).LastExecuted())
	}
	if p := sentPrepares(c.reps[0].msgs); len(p) != 0 {
		t.Fatalf("primary sent %d PREPAREs", len(p))
	}
	if p := sentPrepares(c.reps[1].msgs); len(p) != 3 {
		t.Fatalf("backup sent %d PREPAREs, want 3", len(p))
	}
}

// N3: a new primary that re-proposes O in its NEW-VIEW sends no PREPARE
// for those PRE-PREPAREs either.
func TestN3_NewPrimarySendsNoPrepareForO(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := fakeDigest(3, "C")
	c.step(1, msg(2, c.viewChange(1, 2, nil, c.preparedCert(0, 3, d, 2, 3))))
	c.step(1, msg(3, c.viewChange(1, 3, nil)))
	nvs := sentNewViews(c.reps[1].msgs)
	if len(nvs) != 1 || len(nvs[0].PrePrepares) != 3 {
		t.Fatalf("setup: no NEW-VIEW with 3 PRE-PREPAREs")
	}
	if p := sentPrepares(c.reps[1].msgs); len(p) != 0 {
		t.Fatalf("new primary sent %d PREPAREs for its own O", len(p))
	}
	// Backups' PREPAREs for the null batches make it prepared: it COMMITs.
	null := c.nullDigest()
	c.step(1, msg(2, c.prepare(1, 1, null, 2)))
	c.step(1, msg(3, c.prepare(1, 1, null, 3)))
	if p := sentPrepares(c.reps[1].msgs); len(p) != 0 {
		t.Fatalf("new primary sent PREPAREs")
	}
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 1 || cs[0].View != 1 || cs[0].Seq != 1 {
		t.Fatalf("new primary did not commit the null batch at seq 1")
	}
}

// N3, N4: the checker rejects a PREPARE from the primary of its view.
func TestN3_CheckerRejectsPrepareFromPrimary(t *testing.T) {
	c := newCluster(t, 1)
	d := c.digest(c.batch(c.next(0)))
	if err := c.checker.Message(msg(0, c.prepare(0, 1, d, 0))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("PREPARE(v0) from primary 0: err = %v, want ErrWrongSigner", err)
	}
	if err := c.checker.Message(msg(1, c.prepare(1, 1, d, 1))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("PREPARE(v1) from primary 1: err = %v, want ErrWrongSigner", err)
	}
	if err := c.checker.Message(msg(0, c.prepare(1, 1, d, 0))); err != nil {
		t.Errorf("PREPARE(v1) from backup 0 rejected: %v", err)
	}
}

// N4: at a backup, prepared needs 2f PREPAREs from distinct backups, its
// own included: 2f-1 do not prepare (no COMMIT), 2f do.
func TestN4_BackupPreparedNeedsTwoFPrepares(t *testing.T) {
	c := newCluster(t, 2) // n=7, 2f=4
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0))) // own PREPARE: 1
	for _, j := range []int{2, 3} {             // 3
		c.step(1, msg(j, c.prepare(0, 1, d, j)))
	}
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 0 {
		t.Fatalf("backup committed with 2f-1 = 3 PREPAREs")
	}
	c.step(1, msg(4, c.prepare(0, 1, d, 4))) // 4 = 2f
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 1 {
		t.Fatalf("backup did not commit with 2f = 4 PREPAREs")
	}
}

// N4: at the primary, 2f PREPAREs from backups are needed (it has none of
// its own).
func TestN4_PrimaryPreparedNeedsTwoFPreparesFromBackups(t *testing.T) {
	c := newCluster(t, 2)
	c.net = false
	if err := c.propose(0, c.next(0)); err != nil {
		t.Fatal(err)
	}
	d := sentPrePrepares(c.reps[0].msgs)[0].Digest
	for _, j := range []int{1, 2, 3} {
		c.step(0, msg(j, c.prepare(0, 1, d, j)))
	}
	if cs := sentCommits(c.reps[0].msgs); len(cs) != 0 {
		t.Fatalf("primary committed with 2f-1 PREPAREs")
	}
	c.step(0, msg(4, c.prepare(0, 1, d, 4)))
	if cs := sentCommits(c.reps[0].msgs); len(cs) != 1 {
		t.Fatalf("primary did not commit with 2f PREPAREs")
	}
}

// N4: PREPAREs count per distinct replica: a repeated PREPARE counts once.
func TestN4_DuplicatePreparesCountOnce(t *testing.T) {
	c := newCluster(t, 2)
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	for k := 0; k < 5; k++ {
		c.step(1, msg(2, c.prepare(0, 1, d, 2)))
		c.step(1, msg(3, c.prepare(0, 1, d, 3)))
	}
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 0 {
		t.Fatalf("backup committed on repeated PREPAREs of 2 replicas (3 distinct with its own)")
	}
}

// N4: the primary's own PREPARE never counts.
func TestN4_PrimaryPrepareNeverCounts(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	c.stepRaw(1, msg(0, c.prepare(0, 1, d, 0))) // the checker would reject it
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 0 {
		t.Fatalf("backup counted the primary's PREPARE towards prepared")
	}
	c.step(1, msg(2, c.prepare(0, 1, d, 2)))
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 1 {
		t.Fatalf("backup did not commit with 2f PREPAREs from backups")
	}
}

// N4: PREPAREs for another digest do not count towards prepared(v, s, d).
func TestN4_PrepareWithOtherDigestDoesNotCount(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	other := c.digest(c.batch(c.next(1)))
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	c.step(1, msg(2, c.prepare(0, 1, other, 2)))
	c.step(1, msg(3, c.prepare(0, 1, other, 3)))
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 0 {
		t.Fatalf("backup prepared on PREPAREs for another digest")
	}
}

// N4: PREPAREs and COMMITs of the current view count only within the
// watermarks: above H they are dropped.
func TestN4_PrepareAndCommitOutsideWatermarksDropped(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := c.digest(c.batch(c.next(0)))
	before := dropped(c.node(1), "watermark")
	c.step(1, msg(2, c.prepare(0, tL+1, d, 2)))
	c.step(1, msg(2, c.commit(0, tL+1, d, 2)))
	if got := dropped(c.node(1), "watermark") - before; got != 2 {
		t.Fatalf("%d of a PREPARE and a COMMIT above H were dropped, want 2", got)
	}
	c.step(1, msg(2, c.prepare(0, tL, d, 2)))
	c.step(1, msg(2, c.commit(0, tL, d, 2)))
	if got := dropped(c.node(1), "watermark") - before; got != 2 {
		t.Fatalf("a PREPARE or COMMIT at H was dropped")
	}
}

// N4: messages for a future view are buffered (and used once the replica
// enters that view), but only a bounded distance ahead.
func TestN4_FutureViewMessagesBufferedAndBounded(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	// r2 holds batch A at seq 1 from view 0.
	bA := c.batch(c.next(0))
	dA := c.digest(bA)
	c.step(2, msg(0, c.prePrepare(0, 1, bA, 0)))
	// Votes of view 1 arrive before the NEW-VIEW.
	c.step(2, msg(0, c.prepare(1, 1, dA, 0)))
	c.step(2, msg(3, c.prepare(1, 1, dA, 3)))
	for _, j := range []int{0, 1, 3} {
		c.step(2, msg(j, c.commit(1, 1, dA, j)))
	}
	// Beyond the bound: dropped.
	before := dropped(c.node(2), "wrong_view")
	c.step(2, msg(0, c.prepare(1+tMaxFut, 1, dA, 0)))
	if dropped(c.node(2), "wrong_view") != before+1 {
		t.Fatalf("PREPARE of view %d (beyond MaxFutureViews) not dropped", 1+tMaxFut)
	}
	// NEW-VIEW(1) re-proposes A at seq 1.
	pc := c.preparedCert(0, 1, dA, 2, 3)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil, pc), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil, pc)}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if v, changing := c.node(2).View(); v != 1 || changing {
		t.Fatalf("r2 in view %d (changing %v) after NEW-VIEW(1)", v, changing)
	}
	if got := executedSeqs(c.reps[2].execs); len(got) != 1 || got[0] != 1 {
		t.Fatalf("r2 executed %v, want seq 1 committed by the buffered view-1 votes", got)
	}
}

// N5: a replica sends COMMIT only once prepared, whatever COMMITs it holds.
func TestN5_CommitOnlyAfterPrepared(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	for _, j := range []int{0, 2, 3} {
		c.step(1, msg(j, c.commit(0, 1, d, j)))
	}
	if len(sentCommits(c.reps[1].msgs)) != 0 || len(c.reps[1].execs) != 0 {
		t.Fatalf("backup committed or executed without being prepared")
	}
	c.step(1, msg(2, c.prepare(0, 1, d, 2)))
	cs := sentCommits(c.reps[1].msgs)
	if len(cs) != 1 {
		t.Fatalf("backup sent %d COMMITs once prepared, want 1", len(cs))
	}
	if cs[0].View != 0 || cs[0].Seq != 1 || !bytes.Equal(cs[0].Digest, d) || cs[0].Replica != 1 {
		t.Fatalf("COMMIT = (v%d, s%d, r%d), want (0, 1, d, 1)", cs[0].View, cs[0].Seq, cs[0].Replica)
	}
	if err := c.checker.Message(msg(1, cs[0])); err != nil {
		t.Fatalf("checker rejects the COMMIT: %v", err)
	}
	if got := executedSeqs(c.reps[1].execs); len(got) != 1 {
		t.Fatalf("backup executed %v once prepared with 2f+1 COMMITs, want [1]", got)
	}
}

// N6: committed-local needs 2f+1 matching COMMITs from distinct replicas,
// its own included: 2f do not execute, 2f+1 do.
func TestN6_ExecutionNeedsQuorumOfCommits(t *testing.T) {
	c := newCluster(t, 2) // 2f+1 = 5
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	for _, j := range []int{2, 3, 4} {
		c.step(1, msg(j, c.prepare(0, 1, d, j)))
	} // prepared; own COMMIT sent
	for _, j := range []int{2, 3, 4} { // 4 COMMITs with its own
		c.step(1, msg(j, c.commit(0, 1, d, j)))
	}
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("executed with 2f = 4 COMMITs")
	}
	c.step(1, msg(5, c.commit(0, 1, d, 5)))
	if got := executedSeqs(c.reps[1].execs); len(got) != 1 || got[0] != 1 {
		t.Fatalf("executed %v with 2f+1 COMMITs, want [1]", got)
	}
}

// N6: COMMITs for another digest, and repeated COMMITs of one replica,
// do not count.
func TestN6_MismatchedAndDuplicateCommitsDoNotCount(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	other := c.digest(c.batch(c.next(1)))
	c.step(1, msg(0, c.prePrepare(0, 1, b, 0)))
	c.step(1, msg(2, c.prepare(0, 1, d, 2)))
	c.step(1, msg(0, c.commit(0, 1, other, 0)))
	c.step(1, msg(3, c.commit(0, 1, other, 3)))
	for k := 0; k < 3; k++ {
		c.step(1, msg(2, c.commit(0, 1, d, 2)))
	}
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("executed with own + one distinct matching COMMIT")
	}
	c.step(1, msg(3, c.commit(1, 1, d, 3))) // another view: does not count either
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("a COMMIT of another view counted")
	}
}

// N7: batch s executes only when every batch below s executed: seq 2
// committed before seq 1 waits for it.
func TestN7_LaterSeqWaitsForEarlier(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b1, b2 := c.batch(c.next(0)), c.batch(c.next(1))
	c.commitAt(1, 0, 2, b2)
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("seq 2 executed before seq 1")
	}
	c.commitAt(1, 0, 1, b1)
	if got := executedSeqs(c.reps[1].execs); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("executions %v, want [1 2]", got)
	}
	if c.node(1).LastExecuted() != 2 {
		t.Fatalf("LastExecuted = %d", c.node(1).LastExecuted())
	}
}

// N7, C2: a request already executed that a later batch carries again is
// skipped, and its cached reply is sent again.
func TestN7_AlreadyExecutedRequestInLaterBatchIsSkipped(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	c.commitAt(1, 0, 1, c.batch(r))
	first := c.reps[1].replies
	if len(first) != 1 {
		t.Fatalf("%d replies after executing one request", len(first))
	}
	c.reps[1].reset()
	r2 := c.next(1)
	c.commitAt(1, 0, 2, c.batch(r, r2))
	ex := c.reps[1].execs
	if len(ex) != 1 || len(ex[0].Execute) != 1 || !protoEqual(ex[0].Execute[0], r2) {
		t.Fatalf("seq 2 = [r, r2] should execute only r2: %v", ex)
	}
	var again bool
	for _, rp := range c.reps[1].replies {
		if rp.Timestamp == r.Timestamp && bytes.Equal(rp.Client, r.Client) {
			again = true
			if !bytes.Equal(rp.Result, first[0].Result) || rp.Status != bftpb.ReplyStatus_REPLY_STATUS_OK {
				t.Fatalf("re-sent reply differs from the cached one")
			}
		}
	}
	if !again {
		t.Fatalf("the cached reply of the skipped request was not sent again")
	}
}

// N7: execution is deterministic: every replica of a group that executes
// the same batches reaches the same state.
func TestN7_ReplicasExecuteTheSameBatchesInTheSameOrder(t *testing.T) {
	c := newCluster(t, 1)
	for k := 0; k < 3; k++ {
		for i := 0; i < 4; i++ {
			if err := c.propose(0, c.next(i)); err != nil {
				t.Fatal(err)
			}
		}
		c.deliver(isType("pre-prepare").and(toR(1, 2)))
		c.settle()
	}
	want := c.reps[0].app.Digest()
	for i, r := range c.reps {
		if !bytes.Equal(r.app.Digest(), want) {
			t.Errorf("r%d state differs", i)
		}
		if len(r.execs) != len(c.reps[0].execs) {
			t.Errorf("r%d executed %d batches, r0 %d", i, len(r.execs), len(c.reps[0].execs))
		}
		for k := range r.execs {
			if r.execs[k].Digest != c.reps[0].execs[k].Digest {
				t.Errorf("r%d: batch %d differs", i, k)
			}
		}
	}
}
