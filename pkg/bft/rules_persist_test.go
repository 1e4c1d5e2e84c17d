package bft_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

// Tests of persistence, pbft.md P1–P3.

// P1: across a run with batching, checkpoints, retransmissions, a view
// change and a replica that comes back, every PRE-PREPARE, PREPARE,
// COMMIT, CHECKPOINT, VIEW-CHANGE and NEW-VIEW a replica signed leaves only
// in a Ready whose records (or an earlier one's) hold it, and a
// VIEW-CHANGE only with the new view in the hard state.
func TestP1_SignedMessagesArePersistedBeforeTheyLeave(t *testing.T) {
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.StatusInterval = 3 })
	for i := 0; i < 6; i++ {
		if err := c.propose(0, c.next(i)); err != nil {
			t.Fatal(err)
		}
		c.settle()
	}
	// The primary goes silent; a client sends to every backup.
	isolated := func(e envelope) bool { return e.from == 0 || e.to == 0 }
	r := c.next(6)
	for _, i := range []int{1, 2, 3} {
		if err := c.propose(i, r); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < 20*tReqTO && c.node(1).LastExecuted() < 7; k++ {
		c.drop(isolated)
		c.settle()
		for _, i := range []int{1, 2, 3} {
			c.tick(i, 1)
		}
	}
	if v, _ := c.node(1).View(); v == 0 || c.node(1).LastExecuted() != 7 {
		t.Fatalf("no progress after the primary went silent: view %d, executed %d", v, c.node(1).LastExecuted())
	}
	// r0 comes back.
	for k := 0; k < 50; k++ {
		c.settle()
		for i := range c.reps {
			c.tick(i, 1)
		}
	}
	kinds := map[string]int{}
	for _, rp := range c.reps {
		for _, o := range rp.msgs {
			if _, signer, ok := ownRecord(o.Msg); ok && signer == uint32(rp.id) {
				kinds[typeName(o.Msg)]++
			}
		}
		for _, v := range rp.p1 {
			t.Errorf("r%d: %s", rp.id, v)
		}
	}
	for _, k := range []string{"pre-prepare", "prepare", "commit", "checkpoint", "view-change", "new-view"} {
		if kinds[k] == 0 {
			t.Errorf("the run sent no %s: the check did not cover it", k)
		}
	}
}

// P1: the Ready that carries a VIEW-CHANGE carries the hard state with the
// new view and the view change in progress; the one that carries NEW-VIEW
// the view entered.
func TestP1_ViewChangeLeavesWithViewInHardState(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if err := c.propose(1, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(1, tReqTO)
	c.step(1, msg(2, c.viewChange(1, 2, nil)))
	c.step(1, msg(3, c.viewChange(1, 3, nil)))
	var sawVC, sawNV bool
	for _, rd := range c.reps[1].readies {
		for _, o := range rd.Messages {
			if vc := o.Msg.GetViewChange(); vc != nil && !sawVC {
				sawVC = true
				if rd.HardState == nil || rd.HardState.View != 1 || !rd.HardState.ViewChanging {
					t.Errorf("VIEW-CHANGE(1) left with hard state %v", rd.HardState)
				}
			}
			if nv := o.Msg.GetNewView(); nv != nil && !sawNV {
				sawNV = true
				if rd.HardState == nil || rd.HardState.View != 1 || rd.HardState.ViewChanging {
					t.Errorf("NEW-VIEW(1) left with hard state %v", rd.HardState)
				}
			}
		}
	}
	if !sawVC || !sawNV {
		t.Fatalf("saw VIEW-CHANGE %v, NEW-VIEW %v", sawVC, sawNV)
	}
}

// P2: the stable checkpoint certificate is persisted (in the hard state)
// in the Ready in which it forms.
func TestP2_StableCheckpointCertificatePersistedWhenItForms(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	executeUpTo(c, 1, 0, tK)
	d := c.reps[1].app.Digest()
	c.step(1, msg(0, c.checkpoint(tK, d, 0)))
	c.reps[1].reset()
	c.step(1, msg(2, c.checkpoint(tK, d, 2)))
	rds := c.reps[1].readies
	if len(rds) == 0 || rds[0].HardState == nil || rds[0].HardState.Stable == nil {
		t.Fatalf("the Ready in which the checkpoint became stable has no hard state with it")
	}
	st := rds[0].HardState.Stable
	if st.Seq != tK || !bytes.Equal(st.StateDigest, d) {
		t.Fatalf("persisted stable checkpoint %d, want %d", st.Seq, tK)
	}
	if err := c.checker.CheckpointCert(st); err != nil {
		t.Fatalf("persisted certificate invalid: %v", err)
	}
	if len(rds[0].Deletes) == 0 {
		t.Fatalf("log not pruned in the same Ready")
	}
}

// P2: each Execution carries the client-table changes the host commits
// atomically with the results; restarted from that table, the replica
// answers an executed request from it instead of executing it again.
func TestP2_ExecutionCarriesClientTableForAtomicCommit(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	a1, b1, a2 := c.request(0, 1, 0, "a1"), c.request(1, 1, 0, "b1"), c.request(0, 2, 0, "a2")
	c.commitAt(1, 0, 1, c.batch(a1, b1, a2))
	ex := c.reps[1].execs[0]
	byClient := map[string]bft.ClientUpdate{}
	for _, u := range ex.Clients {
		byClient[string(u.Client)] = u
	}
	ua, ub := byClient[string(a1.Client)], byClient[string(b1.Client)]
	if len(ex.Clients) != 2 || len(ua.Put) != 2 || len(ub.Put) != 1 {
		t.Fatalf("client updates %+v, want 2 puts for client 0 and 1 for client 1", ex.Clients)
	}
	if ua.Put[0] != (bft.PutReply{Timestamp: 1, Result: 0}) || ua.Put[1] != (bft.PutReply{Timestamp: 2, Result: 2}) || ub.Put[0] != (bft.PutReply{Timestamp: 1, Result: 1}) {
		t.Fatalf("puts %+v %+v do not map timestamps to their results", ua.Put, ub.Put)
	}
	want := repliesFor(c.reps[1].replies, a2)
	c.restart(1)
	c.reps[1].reset()
	if err := c.propose(1, a2); err != nil {
		t.Fatal(err)
	}
	got := repliesFor(c.reps[1].replies, a2)
	if len(got) != 1 || len(want) != 1 || !bytes.Equal(got[0].Result, want[0].Result) {
		t.Fatalf("after restart: replies %v, want the cached result", got)
	}
	if len(c.reps[1].msgs) != 0 || len(c.reps[1].execs) != 0 {
		t.Fatalf("restarted replica ordered or executed an executed request again")
	}
}

// P3: a backup restarted after it PREPAREd (v, s, d) never PREPAREs or
// COMMITs another digest for (v, s), and still completes d.
func TestP3_RestartedBackupNeverSignsConflictingPrepareOrCommit(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	bA, bB := c.batch(c.next(0)), c.batch(c.next(1))
	dA, dB := c.digest(bA), c.digest(bB)
	c.step(1, msg(0, c.prePrepare(0, 1, bA, 0)))
	if ps := sentPrepares(c.reps[1].msgs); len(ps) != 1 {
		t.Fatal("no PREPARE before the crash")
	}
	c.restart(1)
	c.reps[1].reset()
	// The equivocating primary tries B after the restart, and replica 3
	// votes for it: without its restored PREPARE, r1 would PREPARE B and,
	// with 3's PREPARE, COMMIT it.
	c.step(1, msg(0, c.prePrepare(0, 1, bB, 0)))
	c.step(1, msg(3, c.prepare(0, 1, dB, 3)))
	c.step(1, msg(3, c.commit(0, 1, dB, 3)))
	for _, p := range sentPrepares(c.reps[1].msgs) {
		if !bytes.Equal(p.Digest, dA) {
			t.Fatalf("restarted replica PREPAREd another digest for (v0, s1)")
		}
	}
	if cs := sentCommits(c.reps[1].msgs); len(cs) != 0 || len(c.reps[1].execs) != 0 {
		t.Fatalf("restarted replica committed or executed the other digest")
	}
	// A still completes: the restored PREPARE counts.
	c.step(1, msg(2, c.prepare(0, 1, dA, 2)))
	cs := sentCommits(c.reps[1].msgs)
	if len(cs) != 1 || !bytes.Equal(cs[0].Digest, dA) {
		t.Fatalf("after the restart, r1 did not commit A with its restored PREPARE and one more")
	}
	c.restart(1)
	c.reps[1].reset()
	c.step(1, msg(2, c.commit(0, 1, dA, 2)))
	c.step(1, msg(0, c.commit(0, 1, dA, 0)))
	for _, m := range sentCommits(c.reps[1].msgs) {
		if !bytes.Equal(m.Digest, dA) {
			t.Fatal("second restart: COMMIT for another digest")
		}
	}
	if got := executedSeqs(c.reps[1].execs); len(got) != 1 || !bytes.Equal(c.reps[1].execs[0].Digest[:], dA) {
		t.Fatalf("after a second restart r1 executed %v, want A at seq 1", got)
	}
}

// P3: a crash between persisting and sending loses nothing: the restarted
// replica retransmits exactly the PREPARE it had persisted.
func TestP3_CrashBetweenPersistAndSendResendsSameMessage(t *testing.T) {
	const interval = 3
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.StatusInterval = interval })
	c.net = false
	c.step(1, msg(0, c.prePrepare(0, 1, c.batch(c.next(0)), 0)))
	before := sentPrepares(c.reps[1].msgs)[0] // persisted, never delivered
	c.restart(1)
	c.reps[1].reset()
	c.tick(1, interval)
	ps := sentPrepares(c.reps[1].msgs)
	if len(ps) == 0 {
		t.Fatal("restarted replica did not retransmit its PREPARE")
	}
	for _, p := range ps {
		if !proto.Equal(p, before) {
			t.Fatalf("retransmitted PREPARE differs from the one signed before the crash")
		}
	}
}

// P3: a primary restarted after proposing never proposes a different batch
// for a seq it used: it continues after its last PRE-PREPARE.
func TestP3_RestartedPrimaryDoesNotReuseSequenceNumbers(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r1, r2 := c.next(0), c.next(1)
	if err := c.propose(0, r1); err != nil {
		t.Fatal(err)
	}
	if err := c.propose(0, r2); err != nil {
		t.Fatal(err)
	}
	if n := len(sentPrePrepares(c.reps[0].msgs)); n != 2 {
		t.Fatalf("%d PRE-PREPAREs before the crash", n)
	}
	c.restart(0)
	c.reps[0].reset()
	if err := c.propose(0, c.next(2)); err != nil {
		t.Fatal(err)
	}
	if err := c.propose(0, r1); err != nil { // a client retransmission
		t.Fatal(err)
	}
	pps := sentPrePrepares(c.reps[0].msgs)
	if len(pps) == 0 {
		t.Fatal("restarted primary proposed nothing")
	}
	for _, pp := range pps {
		if pp.Seq <= 2 {
			t.Fatalf("restarted primary signed a new PRE-PREPARE for seq %d", pp.Seq)
		}
	}
	if pps[0].Seq != 3 {
		t.Fatalf("restarted primary continued at seq %d, want 3", pps[0].Seq)
	}
}

// P3: a replica restarted during a view change resumes it: still changing
// to the same view, taking no part in the old one, re-sending the same
// VIEW-CHANGE, and entering the view on its NEW-VIEW.
func TestP3_RestartedReplicaResumesViewChange(t *testing.T) {
	const interval = 3
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.StatusInterval = interval })
	c.net = false
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	before := lastViewChange(c, 2)
	if before == nil {
		t.Fatal("no view change")
	}
	c.restart(2)
	c.reps[2].reset()
	if v, changing := c.node(2).View(); v != 1 || !changing {
		t.Fatalf("restarted in view %d (changing %v), want the view change to 1", v, changing)
	}
	c.step(2, msg(0, c.prePrepare(0, 1, c.batch(c.next(1)), 0)))
	if len(sentPrepares(c.reps[2].msgs)) != 0 {
		t.Fatal("restarted replica took part in view 0")
	}
	c.tick(2, interval)
	vcs := sentViewChanges(c.reps[2].msgs)
	if len(vcs) == 0 {
		t.Fatal("restarted replica does not re-send its VIEW-CHANGE")
	}
	for _, vc := range vcs {
		if !proto.Equal(vc, before) {
			t.Fatalf("restarted replica sent a different VIEW-CHANGE for view %d", vc.View)
		}
	}
	vcsV := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), before}
	c.step(2, msg(1, c.newView(1, vcsV, nil, 1)))
	if v, changing := c.node(2).View(); v != 1 || changing {
		t.Fatalf("after NEW-VIEW: view %d (changing %v)", v, changing)
	}
}

// P3: a replica restarted in a view it entered through NEW-VIEW resumes in
// that view.
func TestP3_RestartedReplicaResumesInPersistedView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil)}
	c.step(2, msg(1, c.newView(1, vcs, nil, 1)))
	c.restart(2)
	c.reps[2].reset()
	if v, changing := c.node(2).View(); v != 1 || changing {
		t.Fatalf("restarted in view %d (changing %v), want 1", v, changing)
	}
	c.step(2, msg(0, c.prePrepare(0, 1, c.batch(c.next(0)), 0)))
	if len(sentPrepares(c.reps[2].msgs)) != 0 {
		t.Fatal("restarted replica accepted a PRE-PREPARE of view 0")
	}
	c.step(2, msg(1, c.prePrepare(1, 1, c.batch(c.next(1)), 1)))
	if ps := sentPrepares(c.reps[2].msgs); len(ps) != 1 || ps[0].View != 1 {
		t.Fatal("restarted replica did not accept a PRE-PREPARE of view 1")
	}
}

// P3: a restarted replica re-executes nothing it executed, and executes
// what commits afterwards.
func TestP3_RestartedReplicaDoesNotReexecute(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	executeUpTo(c, 1, 0, 2)
	b3 := c.batch(c.next(3))
	d3 := c.digest(b3)
	c.step(1, msg(0, c.prePrepare(0, 3, b3, 0)))
	c.step(1, msg(2, c.prepare(0, 3, d3, 2)))
	c.step(1, msg(2, c.commit(0, 3, d3, 2)))
	stateBefore := c.reps[1].app.Digest()
	c.reps[1].reset()
	c.restart(1)
	if len(c.reps[1].execs) != 0 || !bytes.Equal(c.reps[1].app.Digest(), stateBefore) {
		t.Fatalf("restarted replica re-executed %v", executedSeqs(c.reps[1].execs))
	}
	c.step(1, msg(3, c.commit(0, 3, d3, 3)))
	if got := executedSeqs(c.reps[1].execs); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after restart executed %v, want [3]", got)
	}
	if n := c.node(1).LastExecuted(); n != 3 {
		t.Fatalf("LastExecuted = %d", n)
	}
}

// P3: a replica restarted after a stable checkpoint resumes with its
// watermarks and certificate.
func TestP3_RestartedReplicaKeepsStableCheckpoint(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	executeUpTo(c, 1, 0, tK)
	d := c.reps[1].app.Digest()
	c.step(1, msg(0, c.checkpoint(tK, d, 0)))
	c.step(1, msg(2, c.checkpoint(tK, d, 2)))
	cert := c.node(1).StableCheckpoint()
	c.restart(1)
	if h := c.node(1).LowWatermark(); h != tK || !proto.Equal(c.node(1).StableCheckpoint(), cert) {
		t.Fatalf("restarted with h = %d", h)
	}
	if len(c.reps[1].targets) != 0 {
		t.Fatal("restarted replica asks for a state transfer it does not need")
	}
	c.reps[1].reset()
	c.step(1, msg(0, c.prePrepare(0, tK+tL, c.batch(c.next(0)), 0)))
	if len(sentPrepares(c.reps[1].msgs)) != 1 {
		t.Fatal("restarted replica's high watermark is not h+L")
	}
}

// P1, P3: the prepared certificates a replica holds survive a restart: the
// PREPAREs of others are persisted, so its VIEW-CHANGE after the restart
// still carries the certificate.
func TestP3_RestartedReplicaKeepsPreparedCertificates(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	b := c.batch(c.next(0))
	d := c.digest(b)
	c.step(2, msg(0, c.prePrepare(0, 1, b, 0)))
	c.step(2, msg(3, c.prepare(0, 1, d, 3)))
	if len(sentCommits(c.reps[2].msgs)) != 1 {
		t.Fatal("setup: not prepared")
	}
	c.restart(2)
	c.step(2, msg(0, c.viewChange(1, 0, nil)))
	c.step(2, msg(3, c.viewChange(1, 3, nil)))
	vc := lastViewChange(c, 2)
	if vc == nil || vc.View != 1 {
		t.Fatal("no VIEW-CHANGE(1) after the restart")
	}
	if len(vc.Prepared) != 1 || vc.Prepared[0].PrePrepare.Seq != 1 || !bytes.Equal(vc.Prepared[0].PrePrepare.Digest, d) {
		t.Fatalf("VIEW-CHANGE after the restart carries %d prepared certificates, want the one for seq 1", len(vc.Prepared))
	}
	if err := c.checker.Message(msg(2, vc)); err != nil {
		t.Fatalf("checker rejects it: %v", err)
	}
}

// P3, G3: a replica restarted during a state transfer (stable checkpoint
// adopted, state not installed) asks for the state again.
func TestP3_RestartedDuringStateTransferFetchesStateAgain(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := fakeDigest(2*tK, "state")
	for _, j := range []int{0, 2, 3} {
		c.step(1, msg(j, c.checkpoint(2*tK, d, j)))
	}
	if len(c.reps[1].targets) != 1 {
		t.Fatal("setup: no state target")
	}
	c.reps[1].reset()
	c.restart(1)
	if ts := c.reps[1].targets; len(ts) != 1 || ts[0].Seq != 2*tK || !bytes.Equal(ts[0].Digest[:], d) {
		t.Fatalf("after the restart: state targets %v, want seq %d again", ts, 2*tK)
	}
}

// P3: a new primary restarted after its NEW-VIEW goes on after max-s: it
// never signs a new PRE-PREPARE for a seq of O.
func TestP3_RestartedNewPrimaryContinuesAfterO(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := fakeDigest(3, "C")
	c.step(1, msg(2, c.viewChange(1, 2, nil, c.preparedCert(0, 3, d, 2, 3))))
	c.step(1, msg(3, c.viewChange(1, 3, nil)))
	if len(sentNewViews(c.reps[1].msgs)) != 1 {
		t.Fatal("setup: no NEW-VIEW")
	}
	c.restart(1)
	c.reps[1].reset()
	if v, changing := c.node(1).View(); v != 1 || changing {
		t.Fatalf("restarted in view %d (changing %v)", v, changing)
	}
	if err := c.propose(1, c.next(0)); err != nil {
		t.Fatal(err)
	}
	pps := sentPrePrepares(c.reps[1].msgs)
	if len(pps) != 1 || pps[0].View != 1 || pps[0].Seq != 4 {
		t.Fatalf("restarted new primary proposed %v, want seq 4 of view 1", pps)
	}
}

// P3, V5: a backup restarted after a NEW-VIEW whose O reaches above its
// high watermark still PREPAREs those entries once the watermark moves, as
// it would have without the restart.
func TestP3_RestartedBackupKeepsNewViewEntriesAboveHighWatermark(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[2]
	r.manualExec = true
	executeUpTo(c, 2, 0, tK) // committed, not yet executed
	twin := bfttest.NewApp()
	for _, ex := range r.pendingExec {
		twin.Execute(&ex)
	}
	cert := c.checkpointCert(tK, twin.Digest(), 0, 1, 3)
	vcs := []*bftpb.ViewChange{
		c.viewChange(1, 0, cert, c.preparedCert(0, tK+tL, fakeDigest(tK+tL, "X"), 1, 3)),
		c.viewChange(1, 1, cert),
		c.viewChange(1, 3, nil),
	}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	c.restart(2)
	r.reset()
	r.runPending() // the restarted node hands out seqs 1..K again
	for _, j := range []int{0, 1, 3} {
		c.step(2, msg(j, c.checkpoint(tK, twin.Digest(), j)))
	}
	if h := c.node(2).LowWatermark(); h != tK {
		t.Fatalf("h = %d, want %d", h, tK)
	}
	seen := map[uint64]bool{}
	for _, p := range sentPrepares(r.msgs) {
		if p.View == 1 {
			seen[p.Seq] = true
		}
	}
	for s := uint64(tL + 1); s < tK+tL; s++ {
		if !seen[s] {
			t.Fatalf("restarted backup never PREPAREs O's null batch at seq %d", s)
		}
	}
}
