package bft_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

// Tests of the view change, pbft.md V1–V7.

// ticksUntilViewChange ticks replica i one tick at a time until it sends a
// VIEW-CHANGE, and returns the number of ticks (or max+1 if none came).
func ticksUntilViewChange(c *cluster, i, max int) int {
	before := len(sentViewChanges(c.reps[i].msgs))
	for k := 1; k <= max; k++ {
		c.tick(i, 1)
		if len(sentViewChanges(c.reps[i].msgs)) > before {
			return k
		}
	}
	return max + 1
}

func lastViewChange(c *cluster, i int) *bftpb.ViewChange {
	vcs := sentViewChanges(c.reps[i].msgs)
	if len(vcs) == 0 {
		return nil
	}
	return vcs[len(vcs)-1]
}

// V1: the request timer runs only at a backup holding a valid request it
// has not executed; on expiry in view v the backup starts a view change to
// v+1.
func TestV1_RequestTimerStartsOnlyWhenBackupHoldsUnexecutedRequest(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k <= 5*tReqTO {
		t.Fatalf("idle backup started a view change after %d ticks", k)
	}
	// The primary holds a request that does not get ordered: no timer.
	if err := c.propose(0, c.next(1)); err != nil {
		t.Fatal(err)
	}
	if k := ticksUntilViewChange(c, 0, 5*tReqTO); k <= 5*tReqTO {
		t.Fatalf("primary started a view change after %d ticks", k)
	}
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k != tReqTO {
		t.Fatalf("backup holding a request sent VIEW-CHANGE after %d ticks, want %d", k, tReqTO)
	}
	vc := lastViewChange(c, 2)
	if vc.View != 1 || vc.Replica != 2 {
		t.Fatalf("VIEW-CHANGE(v%d, r%d), want (1, 2)", vc.View, vc.Replica)
	}
	if err := c.checker.Message(msg(2, vc)); err != nil {
		t.Fatalf("checker rejects the VIEW-CHANGE: %v", err)
	}
	if v, changing := c.node(2).View(); v != 1 || !changing {
		t.Fatalf("View() = %d, %v; want 1, true", v, changing)
	}
	if c.node(2).Stats().RequestTimeouts != 1 {
		t.Fatalf("RequestTimeouts = %d", c.node(2).Stats().RequestTimeouts)
	}
}

// V1: the timer stops when the backup has no unexecuted request left.
func TestV1_RequestTimerStopsWhenRequestExecutes(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO/2)
	c.commitAt(2, 0, 1, c.batch(r))
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k <= 5*tReqTO {
		t.Fatalf("view change %d ticks after the only request executed", k)
	}
}

// V1: when the backup executes a request and still waits for another, the
// timer restarts (it neither keeps the old deadline nor stops).
func TestV1_RequestTimerRestartsWhenAnotherRequestWaits(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r1, r2 := c.next(0), c.next(1)
	if err := c.propose(2, r1); err != nil {
		t.Fatal(err)
	}
	c.tick(2, 5)
	if err := c.propose(2, r2); err != nil {
		t.Fatal(err)
	}
	c.tick(2, 3) // now = 8
	c.commitAt(2, 0, 1, c.batch(r1))
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k != tReqTO {
		t.Fatalf("view change %d ticks after r1 executed with r2 waiting, want %d (timer restarted)", k, tReqTO)
	}
}

// V1: a state transfer that shows the backup's only pending request
// executed leaves it with no such request, so the timer stops.
func TestV1_RequestTimerStopsWhenStateTransferCoversRequest(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	d := fakeDigest(2*tK, "state")
	for _, j := range []int{0, 1, 3} {
		c.step(2, msg(j, c.checkpoint(2*tK, d, j)))
	}
	if len(c.reps[2].targets) != 1 {
		t.Fatal("no state target")
	}
	clients := []*bftpb.ClientRecord{{Client: r.Client, Replies: []*bftpb.CachedReply{{Timestamp: r.Timestamp, Result: []byte("done")}}}}
	if err := c.node(2).StateInstalled(2*tK, clients); err != nil {
		t.Fatal(err)
	}
	c.reps[2].drain()
	// The request is executed in the installed state: answered from the cache.
	c.reps[2].reset()
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	if got := repliesFor(c.reps[2].replies, r); len(got) != 1 || string(got[0].Result) != "done" {
		t.Fatalf("request not executed in the installed state: %v", got)
	}
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k <= 5*tReqTO {
		t.Fatalf("view change %d ticks after the state transfer executed the only pending request", k)
	}
}

// V2: once in a view change, a replica takes no further part in the old
// view: no COMMIT, no execution, no PREPARE for view v.
func TestV2_ViewChangeStopsNormalCaseOfOldView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	b := c.batch(r)
	d := c.digest(b)
	c.step(2, msg(0, c.prePrepare(0, 1, b, 0)))
	c.tick(2, tReqTO)
	if v, changing := c.node(2).View(); v != 1 || !changing {
		t.Fatalf("not in a view change")
	}
	c.reps[2].reset()
	c.step(2, msg(3, c.prepare(0, 1, d, 3)))
	for _, j := range []int{0, 1, 3} {
		c.step(2, msg(j, c.commit(0, 1, d, j)))
	}
	c.step(2, msg(0, c.prePrepare(0, 2, c.batch(c.next(1)), 0)))
	if len(sentCommits(c.reps[2].msgs)) != 0 || len(sentPrepares(c.reps[2].msgs)) != 0 || len(c.reps[2].execs) != 0 {
		t.Fatalf("replica in a view change took part in view 0: %d PREPAREs, %d COMMITs, %d executions",
			len(sentPrepares(c.reps[2].msgs)), len(sentCommits(c.reps[2].msgs)), len(c.reps[2].execs))
	}
}

// V2: the VIEW-CHANGE carries the last stable checkpoint with its
// certificate and a prepared certificate for every seq above it that
// prepared, and nothing for seqs that only pre-prepared.
func TestV2_ViewChangeCarriesCheckpointAndPreparedCertificates(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	executeUpTo(c, 2, 0, tK)
	d := c.reps[2].app.Digest()
	for _, j := range []int{0, 1} {
		c.step(2, msg(j, c.checkpoint(tK, d, j)))
	}
	if c.node(2).LowWatermark() != tK {
		t.Fatal("checkpoint not stable")
	}
	b5, b6, b7 := c.batch(c.next(0)), c.batch(c.next(1)), c.batch(c.next(2))
	c.step(2, msg(0, c.prePrepare(0, tK+1, b5, 0)))
	c.step(2, msg(3, c.prepare(0, tK+1, c.digest(b5), 3)))
	c.step(2, msg(0, c.prePrepare(0, tK+2, b6, 0))) // only pre-prepared
	c.step(2, msg(0, c.prePrepare(0, tK+3, b7, 0)))
	c.step(2, msg(1, c.prepare(0, tK+3, c.digest(b7), 1)))
	if err := c.propose(2, c.next(3)); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	vc := lastViewChange(c, 2)
	if vc == nil || vc.View != 1 {
		t.Fatalf("no VIEW-CHANGE(1)")
	}
	if vc.StableSeq != tK || !bytes.Equal(vc.StableDigest, d) || len(vc.CheckpointCert) < 3 {
		t.Fatalf("VIEW-CHANGE names checkpoint %d with %d checkpoints, want %d with a certificate", vc.StableSeq, len(vc.CheckpointCert), tK)
	}
	want := map[uint64][]byte{tK + 1: c.digest(b5), tK + 3: c.digest(b7)}
	if len(vc.Prepared) != len(want) {
		t.Fatalf("VIEW-CHANGE has %d prepared certificates, want %d", len(vc.Prepared), len(want))
	}
	for _, pc := range vc.Prepared {
		w, ok := want[pc.PrePrepare.Seq]
		if !ok || !bytes.Equal(pc.PrePrepare.Digest, w) || len(pc.Prepares) != 2 {
			t.Fatalf("unexpected certificate at seq %d", pc.PrePrepare.Seq)
		}
	}
	if err := c.checker.Message(msg(2, vc)); err != nil {
		t.Fatalf("checker rejects the VIEW-CHANGE: %v", err)
	}
}

// V2: for a seq prepared in two views, P holds the certificate of the
// highest view in which the replica prepared.
func TestV2_ViewChangeCarriesCertificateOfHighestView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	bA := c.batch(c.next(0))
	dA := c.digest(bA)
	// View 0: A prepares at seq 1 at r2.
	c.step(2, msg(0, c.prePrepare(0, 1, bA, 0)))
	c.step(2, msg(3, c.prepare(0, 1, dA, 3)))
	// View 1 (r2's VIEW-CHANGE not in V): seq 1 gets the null batch.
	bB := c.batch(c.next(1))
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil, c.preparedCert(0, 2, c.digest(bB), 1, 3))}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	null := c.nullDigest()
	c.step(2, msg(0, c.prepare(1, 1, null, 0)))
	if v, _ := c.node(2).View(); v != 1 {
		t.Fatalf("r2 in view %d", v)
	}
	// f+1 replicas move to view 2.
	c.step(2, msg(0, c.viewChange(2, 0, nil)))
	c.step(2, msg(3, c.viewChange(2, 3, nil)))
	var vc *bftpb.ViewChange
	for _, x := range sentViewChanges(c.reps[2].msgs) {
		if x.View == 2 {
			vc = x
		}
	}
	if vc == nil {
		t.Fatal("no VIEW-CHANGE(2)")
	}
	for _, pc := range vc.Prepared {
		if pc.PrePrepare.Seq == 1 {
			if pc.PrePrepare.View != 1 || !bytes.Equal(pc.PrePrepare.Digest, null) {
				t.Fatalf("certificate for seq 1 is of view %d, want the null batch of view 1", pc.PrePrepare.View)
			}
			return
		}
	}
	t.Fatal("no certificate for seq 1")
}

// V3: a well-formed VIEW-CHANGE passes the checker (the control for the
// rejections below).
func TestV3_CheckerAcceptsValidViewChange(t *testing.T) {
	c := newCluster(t, 1)
	d := fakeDigest(tK, "s")
	vc := c.viewChange(2, 3, c.checkpointCert(tK, d, 0, 1, 2), c.preparedCert(1, tK+1, fakeDigest(5, "b"), 0, 2), c.preparedCert(0, tK+tL, fakeDigest(12, "b"), 1, 2))
	if err := c.checker.Message(msg(3, vc)); err != nil {
		t.Fatal(err)
	}
}

// V3: the checker rejects VIEW-CHANGEs whose prepared certificates are
// forged or incomplete.
func TestV3_CheckerRejectsForgedPreparedCertificate(t *testing.T) {
	c := newCluster(t, 1)
	d := fakeDigest(1, "b")
	cases := map[string]*bftpb.PreparedCert{
		"forged prepare":     c.preparedCert(0, 1, d, 1, 2),
		"forged pre-prepare": c.preparedCert(0, 1, d, 1, 2),
		"2f-1 prepares":      c.preparedCert(0, 1, d, 1),
		"duplicate prepares": c.preparedCert(0, 1, d, 1, 1),
		"prepare of primary": c.preparedCert(0, 1, d, 0, 1),
		"other digest":       c.preparedCert(0, 1, d, 1, 2),
		"pre-prepare of a backup": {
			PrePrepare: c.ppHeader(0, 1, d, 1), Prepares: []*bftpb.Prepare{c.prepare(0, 1, d, 2), c.prepare(0, 1, d, 3)},
		},
		"pre-prepare with body": c.preparedCert(0, 1, d, 1, 2),
	}
	cases["forged prepare"].Prepares[1].Signature = c.sign(3, c.dom.PrepareBytes(cases["forged prepare"].Prepares[1]))
	cases["forged pre-prepare"].PrePrepare.Signature[0] ^= 1
	cases["other digest"].Prepares[1] = c.prepare(0, 1, fakeDigest(1, "x"), 2)
	cases["pre-prepare with body"].PrePrepare.Batch = &bftpb.Batch{}
	for name, pc := range cases {
		vc := c.viewChange(1, 3, nil, pc)
		if err := c.checker.Message(msg(3, vc)); !errors.Is(err, bft.ErrBadCertificate) {
			t.Errorf("%s: err = %v, want ErrBadCertificate", name, err)
		}
	}
}

// V3: every prepared certificate is for a view below the new one and a seq
// in (s_c, s_c + L], one per seq.
func TestV3_CheckerRejectsPreparedCertificateOutsideViewOrWindow(t *testing.T) {
	c := newCluster(t, 1)
	d := fakeDigest(1, "b")
	stable := c.checkpointCert(tK, fakeDigest(tK, "s"), 0, 1, 2)
	cases := map[string]*bftpb.ViewChange{
		"view = new view":  c.viewChange(1, 3, nil, c.preparedCert(1, 1, d, 0, 2)),
		"view > new view":  c.viewChange(1, 3, nil, c.preparedCert(2, 1, d, 0, 1)),
		"seq = s_c":        c.viewChange(1, 3, stable, c.preparedCert(0, tK, d, 1, 2)),
		"seq <= s_c":       c.viewChange(1, 3, stable, c.preparedCert(0, 1, d, 1, 2)),
		"seq > s_c + L":    c.viewChange(1, 3, stable, c.preparedCert(0, tK+tL+1, d, 1, 2)),
		"genesis, seq > L": c.viewChange(1, 3, nil, c.preparedCert(0, tL+1, d, 1, 2)),
		"two for one seq":  c.viewChange(1, 3, nil, c.preparedCert(0, 2, d, 1, 2), c.preparedCert(0, 2, fakeDigest(2, "o"), 1, 2)),
	}
	for name, vc := range cases {
		if err := c.checker.Message(msg(3, vc)); !errors.Is(err, bft.ErrBadCertificate) {
			t.Errorf("%s: err = %v, want ErrBadCertificate", name, err)
		}
	}
	if err := c.checker.Message(msg(3, c.viewChange(1, 3, stable, c.preparedCert(0, tK+tL, d, 1, 2)))); err != nil {
		t.Errorf("certificate at s_c + L rejected: %v", err)
	}
}

// V3: C must prove s_c: forged, short, mismatching or stale checkpoint
// certificates are rejected, as is a certificate for the genesis checkpoint.
func TestV3_CheckerRejectsForgedOrStaleCheckpointCertificate(t *testing.T) {
	c := newCluster(t, 1)
	d := fakeDigest(2*tK, "s")
	mk := func(mut func(vc *bftpb.ViewChange)) *bftpb.ViewChange {
		vc := &bftpb.ViewChange{View: 1, Replica: 3}
		cert := c.checkpointCert(2*tK, d, 0, 1, 2)
		vc.StableSeq, vc.StableDigest, vc.CheckpointCert = cert.Seq, cert.StateDigest, cert.Checkpoints
		mut(vc)
		vc.Signature = c.sign(3, c.dom.ViewChangeBytes(vc))
		return vc
	}
	cases := map[string]*bftpb.ViewChange{
		"forged checkpoint": mk(func(vc *bftpb.ViewChange) {
			vc.CheckpointCert[2].Signature = c.sign(3, c.dom.CheckpointBytes(vc.CheckpointCert[2]))
		}),
		"2f checkpoints":   mk(func(vc *bftpb.ViewChange) { vc.CheckpointCert = vc.CheckpointCert[:2] }),
		"duplicate sender": mk(func(vc *bftpb.ViewChange) { vc.CheckpointCert[2] = vc.CheckpointCert[1] }),
		"other digest":     mk(func(vc *bftpb.ViewChange) { vc.StableDigest = fakeDigest(2*tK, "t") }),
		// A certificate of an older checkpoint presented as proof of a newer one.
		"stale certificate": mk(func(vc *bftpb.ViewChange) { vc.CheckpointCert = c.checkpointCert(tK, d, 0, 1, 2).Checkpoints }),
		"claims newer seq":  mk(func(vc *bftpb.ViewChange) { vc.StableSeq = 3 * tK }),
		"off the K grid":    mk(func(vc *bftpb.ViewChange) { vc.StableSeq = 2*tK + 1 }),
		"missing":           mk(func(vc *bftpb.ViewChange) { vc.CheckpointCert = nil }),
		"genesis with cert": mk(func(vc *bftpb.ViewChange) { vc.StableSeq = 0 }),
	}
	for name, vc := range cases {
		if err := c.checker.Message(msg(3, vc)); !errors.Is(err, bft.ErrBadCertificate) {
			t.Errorf("%s: err = %v, want ErrBadCertificate", name, err)
		}
	}
	if err := c.checker.Message(msg(3, mk(func(*bftpb.ViewChange) {}))); err != nil {
		t.Errorf("valid checkpoint certificate rejected: %v", err)
	}
}

// V3: a VIEW-CHANGE's signature covers its view, checkpoint and the
// certificates' (seq, view, digest): one signed for view 1 cannot be
// replayed for view 2, nor with certificates swapped.
func TestV3_CheckerRejectsReplayedOrAlteredViewChange(t *testing.T) {
	c := newCluster(t, 1)
	vc := c.viewChange(1, 3, nil, c.preparedCert(0, 1, fakeDigest(1, "a"), 1, 2))
	replay := cloneVC(vc)
	replay.View = 2
	if err := c.checker.Message(msg(3, replay)); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("replayed for view 2: %v", err)
	}
	swapped := cloneVC(vc)
	swapped.Prepared = []*bftpb.PreparedCert{c.preparedCert(0, 1, fakeDigest(1, "b"), 1, 2)}
	if err := c.checker.Message(msg(3, swapped)); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("certificate swapped: %v", err)
	}
	if err := c.checker.Message(msg(2, vc)); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("relayed by another replica: %v", err)
	}
	zero := c.viewChange(0, 3, nil)
	if err := c.checker.Message(msg(3, zero)); !errors.Is(err, bft.ErrMalformed) {
		t.Errorf("view change to view 0: %v", err)
	}
}

// V4: the primary of v+1 with 2f+1 VIEW-CHANGEs (its own included) sends
// NEW-VIEW whose O re-proposes every prepared digest and fills gaps with
// null batches, and enters v+1.
func TestV4_NewPrimaryReproposesPreparedDigestsAndNullsGaps(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	dA, dC := fakeDigest(1, "A"), fakeDigest(3, "C")
	c.step(1, msg(2, c.viewChange(1, 2, nil, c.preparedCert(0, 1, dA, 1, 2), c.preparedCert(0, 3, dC, 2, 3))))
	if len(sentNewViews(c.reps[1].msgs)) != 0 {
		t.Fatal("NEW-VIEW on one VIEW-CHANGE")
	}
	c.step(1, msg(3, c.viewChange(1, 3, nil, c.preparedCert(0, 1, dA, 2, 3))))
	nvs := sentNewViews(c.reps[1].msgs)
	if len(nvs) != 1 {
		t.Fatalf("%d NEW-VIEWs with 2f+1 VIEW-CHANGEs, want 1", len(nvs))
	}
	nv := nvs[0]
	if nv.View != 1 || nv.Replica != 1 || len(nv.ViewChanges) != 3 {
		t.Fatalf("NEW-VIEW(v%d, r%d) with %d view-changes", nv.View, nv.Replica, len(nv.ViewChanges))
	}
	senders := map[uint32]bool{}
	for _, vc := range nv.ViewChanges {
		senders[vc.Replica] = true
	}
	if len(senders) != 3 || !senders[1] {
		t.Fatalf("V senders %v: want 3 distinct with the primary's own", senders)
	}
	want := []oEntry{{1, dA}, {2, c.nullDigest()}, {3, dC}}
	if len(nv.PrePrepares) != len(want) {
		t.Fatalf("O has %d PRE-PREPAREs, want %d", len(nv.PrePrepares), len(want))
	}
	for i, pp := range nv.PrePrepares {
		if pp.View != 1 || pp.Seq != want[i].seq || !bytes.Equal(pp.Digest, want[i].digest) || pp.Replica != 1 || pp.Batch != nil {
			t.Fatalf("O[%d] = (v%d, s%d, %x), want (1, %d, %x)", i, pp.View, pp.Seq, pp.Digest[:4], want[i].seq, want[i].digest[:4])
		}
	}
	if err := c.checker.Message(msg(1, nv)); err != nil {
		t.Fatalf("checker rejects the NEW-VIEW: %v", err)
	}
	if v, changing := c.node(1).View(); v != 1 || changing {
		t.Fatalf("new primary in view %d (changing %v)", v, changing)
	}
	// It goes on after max-s.
	c.reps[1].reset()
	if err := c.propose(1, c.next(0)); err != nil {
		t.Fatal(err)
	}
	if pps := sentPrePrepares(c.reps[1].msgs); len(pps) != 1 || pps[0].View != 1 || pps[0].Seq != 4 {
		t.Fatalf("first new proposal in view 1: %v, want seq 4", pps)
	}
}

// V4: the primary waits for 2f+1 VIEW-CHANGEs for v+1, its own included.
func TestV4_NewPrimaryWaitsForQuorumOfViewChanges(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if err := c.propose(1, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(1, tReqTO)
	if vc := lastViewChange(c, 1); vc == nil || vc.View != 1 {
		t.Fatal("r1 did not start the view change")
	}
	c.step(1, msg(2, c.viewChange(1, 2, nil)))
	if len(sentNewViews(c.reps[1].msgs)) != 0 {
		t.Fatal("NEW-VIEW with 2f VIEW-CHANGEs")
	}
	c.step(1, msg(3, c.viewChange(1, 3, nil)))
	if len(sentNewViews(c.reps[1].msgs)) != 1 {
		t.Fatal("no NEW-VIEW with 2f+1 VIEW-CHANGEs")
	}
}

// V4: min-s is the highest stable checkpoint in V: O starts above it
// (certificates at or below it are ignored) and a primary behind it
// fetches the state.
func TestV4_NewViewStartsAboveHighestStableCheckpoint(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d4 := fakeDigest(tK, "state")
	dA, dB, dE := fakeDigest(5, "A"), fakeDigest(2, "B"), fakeDigest(6, "E")
	c.step(1, msg(3, c.viewChange(1, 3, nil, c.preparedCert(0, 2, dB, 2, 3), c.preparedCert(0, tK+2, dE, 2, 3))))
	c.step(1, msg(2, c.viewChange(1, 2, c.checkpointCert(tK, d4, 0, 2, 3), c.preparedCert(0, tK+1, dA, 2, 3))))
	nvs := sentNewViews(c.reps[1].msgs)
	if len(nvs) != 1 {
		t.Fatal("no NEW-VIEW")
	}
	want := []oEntry{{tK + 1, dA}, {tK + 2, dE}}
	got := nvs[0].PrePrepares
	if len(got) != len(want) {
		t.Fatalf("O has %d entries, want %d (from min-s = %d)", len(got), len(want), tK)
	}
	for i := range want {
		if got[i].Seq != want[i].seq || !bytes.Equal(got[i].Digest, want[i].digest) {
			t.Fatalf("O[%d] = s%d, want s%d", i, got[i].Seq, want[i].seq)
		}
	}
	if ts := c.reps[1].targets; len(ts) != 1 || ts[0].Seq != tK || !bytes.Equal(ts[0].Digest[:], d4) {
		t.Fatalf("primary behind min-s: state targets %v, want seq %d", ts, tK)
	}
}

// V4: when certificates of two views compete for one seq, O takes the one
// of the highest view (whatever the order in V or the digests).
func TestV4_CertificateOfHighestViewWins(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	dA, dB := fakeDigest(1, "A"), fakeDigest(1, "B")
	if bytes.Compare(dB, dA) < 0 {
		dA, dB = dB, dA // B, the later one, has the larger digest
	}
	c.step(2, msg(0, c.viewChange(2, 0, nil, c.preparedCert(0, 1, dA, 1, 2))))
	c.step(2, msg(3, c.viewChange(2, 3, nil, c.preparedCert(1, 1, dB, 0, 2))))
	nvs := sentNewViews(c.reps[2].msgs)
	if len(nvs) != 1 {
		t.Fatal("no NEW-VIEW(2)")
	}
	o := nvs[0].PrePrepares
	if len(o) != 1 || !bytes.Equal(o[0].Digest, dB) {
		t.Fatalf("O = %v, want seq 1 with the view-1 digest", o)
	}
}

// V5: the checker rejects a NEW-VIEW not signed by the primary of its view.
func TestV5_CheckerRejectsNewViewNotFromPrimary(t *testing.T) {
	c := newCluster(t, 1)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 2, nil), c.viewChange(1, 3, nil)}
	if err := c.checker.Message(msg(2, c.newView(1, vcs, nil, 2))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("NEW-VIEW(1) from 2: %v", err)
	}
	forged := c.newView(1, vcs, nil, 1)
	forged.Signature = c.sign(2, c.dom.NewViewBytes(forged))
	if err := c.checker.Message(msg(1, forged)); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("NEW-VIEW(1) signed by 2 as 1: %v", err)
	}
	if err := c.checker.Message(msg(1, c.newView(1, vcs, nil, 1))); err != nil {
		t.Errorf("valid NEW-VIEW rejected: %v", err)
	}
}

// V5: V must hold 2f+1 valid VIEW-CHANGEs for the view from distinct replicas.
func TestV5_CheckerRejectsNewViewWithoutQuorumOfDistinctViewChanges(t *testing.T) {
	c := newCluster(t, 1)
	vc := func(v uint64, i int) *bftpb.ViewChange { return c.viewChange(v, i, nil) }
	forged := vc(1, 3)
	forged.Signature[0] ^= 1
	badCert := c.viewChange(1, 3, nil, c.preparedCert(0, 1, fakeDigest(1, "a"), 1))
	cases := map[string][]*bftpb.ViewChange{
		"2f view-changes":  {vc(1, 0), vc(1, 2)},
		"duplicate sender": {vc(1, 0), vc(1, 2), vc(1, 2)},
		"other view":       {vc(1, 0), vc(1, 2), vc(2, 3)},
		"forged":           {vc(1, 0), vc(1, 2), forged},
		"invalid cert":     {vc(1, 0), vc(1, 2), badCert},
		"non-member":       {vc(1, 0), vc(1, 2), {View: 1, Replica: 9, Signature: []byte{1}}},
	}
	for name, vcs := range cases {
		if err := c.checker.Message(msg(1, c.newView(1, vcs, nil, 1))); err == nil {
			t.Errorf("%s: NEW-VIEW accepted", name)
		}
	}
	if err := c.checker.Message(msg(1, c.newView(1, []*bftpb.ViewChange{vc(1, 0), vc(1, 2), vc(1, 3), vc(1, 1)}, nil, 1))); err != nil {
		t.Errorf("NEW-VIEW with all 3f+1 view-changes rejected: %v", err)
	}
}

// V5: O must be exactly what V4 computes from V.
func TestV5_CheckerRejectsNewViewWhoseODoesNotFollowFromV(t *testing.T) {
	c := newCluster(t, 1)
	dA, dC := fakeDigest(1, "A"), fakeDigest(3, "C")
	null := c.nullDigest()
	vcs := []*bftpb.ViewChange{
		c.viewChange(1, 0, nil),
		c.viewChange(1, 2, nil, c.preparedCert(0, 1, dA, 1, 2), c.preparedCert(0, 3, dC, 2, 3)),
		c.viewChange(1, 3, nil),
	}
	good := []oEntry{{1, dA}, {2, null}, {3, dC}}
	if err := c.checker.Message(msg(1, c.newView(1, vcs, good, 1))); err != nil {
		t.Fatalf("valid NEW-VIEW rejected: %v", err)
	}
	cases := map[string][]oEntry{
		"empty":                {},
		"null for prepared":    {{1, null}, {2, null}, {3, dC}},
		"gap not filled":       {{1, dA}, {3, dC}},
		"extra entry":          {{1, dA}, {2, null}, {3, dC}, {4, null}},
		"digests swapped":      {{1, dC}, {2, null}, {3, dA}},
		"other batch for null": {{1, dA}, {2, dA}, {3, dC}},
		"shifted":              {{2, dA}, {3, null}, {4, dC}},
	}
	for name, o := range cases {
		if err := c.checker.Message(msg(1, c.newView(1, vcs, o, 1))); !errors.Is(err, bft.ErrBadNewView) {
			t.Errorf("%s: err = %v, want ErrBadNewView", name, err)
		}
	}
	// PRE-PREPAREs of O for another view, or signed by someone else.
	nv := c.newView(1, vcs, good, 1)
	nv.PrePrepares[0] = c.ppHeader(0, 1, dA, 0)
	nv.Signature = c.sign(1, c.dom.NewViewBytes(nv))
	if err := c.checker.Message(msg(1, nv)); !errors.Is(err, bft.ErrBadNewView) {
		t.Errorf("O entry of view 0: %v", err)
	}
	nv = c.newView(1, vcs, good, 1)
	nv.PrePrepares[1].Signature = c.sign(2, c.dom.PrePrepareBytes(nv.PrePrepares[1]))
	if err := c.checker.Message(msg(1, nv)); err == nil {
		t.Errorf("O entry with a forged signature accepted")
	}
}

// V5: a backup that accepts NEW-VIEW enters v+1 and sends a PREPARE for
// every element of O, fetching the bodies it lacks by digest first.
func TestV5_BackupPreparesEveryElementOfO(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	bA, bC := c.batch(c.next(0)), c.batch(c.next(1))
	dA, dC := c.digest(bA), c.digest(bC)
	c.step(2, msg(0, c.prePrepare(0, 1, bA, 0))) // r2 has A's body
	vcs := []*bftpb.ViewChange{
		c.viewChange(1, 0, nil),
		c.viewChange(1, 1, nil, c.preparedCert(0, 1, dA, 1, 3), c.preparedCert(0, 3, dC, 1, 3)),
		c.viewChange(1, 3, nil),
	}
	c.reps[2].reset()
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if v, changing := c.node(2).View(); v != 1 || changing {
		t.Fatalf("r2 in view %d (changing %v) after NEW-VIEW(1)", v, changing)
	}
	got := map[uint64][]byte{}
	for _, p := range sentPrepares(c.reps[2].msgs) {
		if p.View != 1 {
			t.Fatalf("PREPARE of view %d", p.View)
		}
		got[p.Seq] = p.Digest
	}
	if len(got) != 2 || !bytes.Equal(got[1], dA) || !bytes.Equal(got[2], c.nullDigest()) {
		t.Fatalf("PREPAREs for seqs %v, want 1 (A) and 2 (null) before C's body arrives", got)
	}
	var fetched bool
	for _, f := range sentFetches(c.reps[2].msgs) {
		if f.Kind == bftpb.Fetch_KIND_BATCH && f.FromSeq == 3 && bytes.Equal(f.Digest, dC) {
			fetched = true
		}
	}
	if !fetched {
		t.Fatal("r2 did not fetch the body of C")
	}
	c.step(2, msg(3, &bftpb.BatchBody{Seq: 3, Digest: dC, Batch: bC}))
	ps := sentPrepares(c.reps[2].msgs)
	if last := ps[len(ps)-1]; last.Seq != 3 || last.View != 1 || !bytes.Equal(last.Digest, dC) {
		t.Fatalf("no PREPARE(v1, s3, C) after the body arrived")
	}
}

// V5: a backup behind min-s moves its state to min-s (G3).
func TestV5_BackupBehindMinSFetchesState(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := fakeDigest(tK, "state")
	cert := c.checkpointCert(tK, d, 0, 1, 3)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, cert), c.viewChange(1, 1, cert), c.viewChange(1, 3, nil)}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if ts := c.reps[2].targets; len(ts) != 1 || ts[0].Seq != tK || !bytes.Equal(ts[0].Digest[:], d) {
		t.Fatalf("state targets %v, want seq %d", ts, tK)
	}
	if h := c.node(2).LowWatermark(); h != tK {
		t.Fatalf("h = %d, want %d", h, tK)
	}
}

// V5: O is authoritative: a PRE-PREPARE of the new view that arrived
// before the NEW-VIEW and contradicts O for a seq is not prepared; the
// backup prepares O's digest.
func TestV5_NewViewOverridesConflictingEarlierPrePrepare(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	bA, bX := c.batch(c.next(0)), c.batch(c.next(1))
	dA, dX := c.digest(bA), c.digest(bX)
	c.step(2, msg(0, c.prePrepare(0, 1, bA, 0)))
	// The new primary's PRE-PREPARE for (v1, s1) with X overtakes its NEW-VIEW.
	c.step(2, msg(1, c.prePrepare(1, 1, bX, 1)))
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil, c.preparedCert(0, 1, dA, 2, 3)), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil, c.preparedCert(0, 1, dA, 2, 3))}
	c.reps[2].reset()
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	var forA, forX bool
	for _, p := range sentPrepares(c.reps[2].msgs) {
		if p.View == 1 && p.Seq == 1 {
			forA = forA || bytes.Equal(p.Digest, dA)
			forX = forX || bytes.Equal(p.Digest, dX)
		}
	}
	if forX || !forA {
		t.Fatalf("PREPARE(v1, s1): for O's digest %v, for the earlier conflicting one %v", forA, forX)
	}
}

// V5, C2, N7: requests executed before the view change are not executed
// again, neither when O re-proposes their batch nor when a new batch
// carries them.
func TestV5_RequestsExecutedBeforeViewChangeAreNotExecutedAgain(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	bA := c.batch(r)
	dA := c.digest(bA)
	c.commitAt(2, 0, 1, bA)
	if c.node(2).Stats().RequestsExecuted != 1 {
		t.Fatal("setup: r not executed")
	}
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil, c.preparedCert(0, 1, dA, 2, 3)), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil)}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	c.step(2, msg(0, c.prepare(1, 1, dA, 0)))
	for _, j := range []int{0, 1, 3} {
		c.step(2, msg(j, c.commit(1, 1, dA, j)))
	}
	c.commitAt(2, 1, 2, c.batch(r, c.next(1)))
	if n := c.node(2).Stats().RequestsExecuted; n != 2 {
		t.Fatalf("RequestsExecuted = %d after the view change, want 2 (r once, the new request once)", n)
	}
	if got := executedSeqs(c.reps[2].execs); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("executions %v, want [1 2]", got)
	}
}

// V6: a replica in a view change starts the timer T only once it holds
// 2f+1 VIEW-CHANGEs for the new view; on expiry it moves to v+2.
func TestV6_ViewChangeTimerStartsOnlyWithQuorum(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	if k := ticksUntilViewChange(c, 2, 20*tVCTO); k <= 20*tVCTO {
		t.Fatalf("moved on from view 1 after %d ticks with only its own VIEW-CHANGE", k)
	}
	c.step(2, msg(0, c.viewChange(1, 0, nil)))
	if k := ticksUntilViewChange(c, 2, 20*tVCTO); k <= 20*tVCTO {
		t.Fatalf("moved on from view 1 after %d ticks with 2f VIEW-CHANGEs", k)
	}
	c.step(2, msg(3, c.viewChange(1, 3, nil)))
	k := ticksUntilViewChange(c, 2, 20*tVCTO)
	if k > 20*tVCTO || k < tVCTO {
		t.Fatalf("with 2f+1 VIEW-CHANGEs and no NEW-VIEW: moved on after %d ticks, want between T=%d and 20T", k, tVCTO)
	}
	if vc := lastViewChange(c, 2); vc.View != 2 {
		t.Fatalf("moved to view %d, want 2", vc.View)
	}
}

// V6: each further view change without progress doubles the timeout.
func TestV6_ViewChangeTimeoutDoublesOnConsecutiveViewChanges(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	// r0 is the primary of none of the views 1, 2, 3.
	c.step(0, msg(2, c.viewChange(1, 2, nil)))
	c.step(0, msg(3, c.viewChange(1, 3, nil)))
	if v, _ := c.node(0).View(); v != 1 {
		t.Fatal("r0 did not join view 1")
	}
	var ts []int
	for v := uint64(2); v <= 4; v++ {
		k := ticksUntilViewChange(c, 0, 1000*tVCTO)
		if got := lastViewChange(c, 0).View; got != v {
			t.Fatalf("moved to view %d, want %d", got, v)
		}
		ts = append(ts, k)
		c.step(0, msg(2, c.viewChange(v, 2, nil)))
		c.step(0, msg(1, c.viewChange(v, 1, nil)))
	}
	if ts[0] != tVCTO || ts[1] != 2*ts[0] || ts[2] != 2*ts[1] {
		t.Fatalf("view-change timeouts %v: want T = %d, then 2T, 4T", ts, tVCTO)
	}
}

// V6: after a NEW-VIEW, if no request executes in v+1 the replica moves to
// v+2, with the timeout doubled.
func TestV6_NoExecutionInNewViewMovesOnWithDoubledTimeout(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil)}
	c.step(2, msg(1, c.newView(1, vcs, nil, 1)))
	if v, changing := c.node(2).View(); v != 1 || changing {
		t.Fatal("not in view 1")
	}
	k := ticksUntilViewChange(c, 2, 10*tReqTO)
	if k > 10*tReqTO || lastViewChange(c, 2).View != 2 {
		t.Fatalf("no move to view 2 without execution in view 1")
	}
	if k < 2*tReqTO {
		t.Fatalf("moved to view 2 after %d ticks: the timeout was not doubled (base %d)", k, tReqTO)
	}
}

// V6: once a request executes in the new view the back-off ends: the next
// request timer runs for the base timeout again.
func TestV6_BackoffEndsWhenRequestExecutesInNewView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	c.tick(2, tReqTO)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil)}
	c.step(2, msg(1, c.newView(1, vcs, nil, 1)))
	c.commitAt(2, 1, 1, c.batch(r))
	if c.node(2).LastExecuted() != 1 {
		t.Fatal("r not executed in view 1")
	}
	if err := c.propose(2, c.next(1)); err != nil {
		t.Fatal(err)
	}
	if k := ticksUntilViewChange(c, 2, 10*tReqTO); k != tReqTO {
		t.Fatalf("request timer after progress in view 1 ran %d ticks, want the base %d", k, tReqTO)
	}
}

// V7: VIEW-CHANGEs for higher views from f replicas do not move a replica;
// from f+1 it joins the smallest of those views at once.
func TestV7_FPlusOneViewChangesMoveReplicaToSmallestView(t *testing.T) {
	c := newCluster(t, 2) // f = 2
	c.net = false
	c.step(3, msg(1, c.viewChange(4, 1, nil)))
	c.step(3, msg(2, c.viewChange(2, 2, nil)))
	if v, changing := c.node(3).View(); v != 0 || changing || len(sentViewChanges(c.reps[3].msgs)) != 0 {
		t.Fatalf("f VIEW-CHANGEs moved r3 to view %d (changing %v)", v, changing)
	}
	c.step(3, msg(4, c.viewChange(3, 4, nil)))
	v, changing := c.node(3).View()
	vc := lastViewChange(c, 3)
	if v != 2 || !changing || vc == nil || vc.View != 2 {
		t.Fatalf("f+1 VIEW-CHANGEs for views {4, 2, 3}: r3 in view %d (changing %v), want to join view 2", v, changing)
	}
}

// V7: f faulty replicas cannot force a view change, however many views
// they ask for.
func TestV7_OneReplicaCannotForceViewChange(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	for v := uint64(1); v <= 6; v++ {
		c.step(2, msg(3, c.viewChange(v, 3, nil)))
		c.tick(2, 3*tVCTO)
	}
	if v, changing := c.node(2).View(); v != 0 || changing {
		t.Fatalf("one replica moved r2 to view %d (changing %v)", v, changing)
	}
	if n := c.node(2).Stats().ViewChanges; n != 0 {
		t.Fatalf("ViewChanges = %d", n)
	}
}

// V4, V5 (safety): with one faulty replica — the primary of view 1 — two
// correct replicas must not execute different batches at one seq. Batch A
// commits at r3 in view 0; the faulty primary sends r0 and r2 a
// PRE-PREPARE for another batch X at that seq just before its (valid)
// NEW-VIEW, whose O must carry A.
func TestV5_FaultyNewPrimaryCannotReplaceCommittedBatch(t *testing.T) {
	c := newCluster(t, 1)
	honest := func(e envelope) bool { return e.from != 1 && e.to != 1 }
	a := c.next(0)
	if err := c.propose(0, a); err != nil {
		t.Fatal(err)
	}
	c.drop(func(e envelope) bool { return !honest(e) })
	c.deliver(isType("pre-prepare", "prepare").and(honest))
	c.drop(isType("commit").and(toR(0, 2)))
	c.deliver(isType("commit").and(honest))
	if got := executedSeqs(c.reps[3].execs); len(got) != 1 {
		t.Fatalf("setup: r3 executed %v", got)
	}
	dA := c.reps[3].execs[0].Digest
	// Backups 2 and 3 time out on another request; r0 joins (V7).
	r2 := c.next(1)
	for _, i := range []int{2, 3} {
		if err := c.propose(i, r2); err != nil {
			t.Fatal(err)
		}
	}
	c.drop(func(e envelope) bool { return true })
	c.tick(2, tReqTO)
	c.tick(3, tReqTO)
	c.deliver(isType("view-change").and(honest))
	c.drop(func(e envelope) bool { return true })
	var vcs []*bftpb.ViewChange
	for _, i := range []int{0, 2, 3} {
		vc := lastViewChange(c, i)
		if vc == nil || vc.View != 1 {
			t.Fatalf("setup: r%d did not ask for view 1", i)
		}
		vcs = append(vcs, vc)
	}
	o := c.expectedO(vcs)
	if len(o) != 1 || !bytes.Equal(o[0].digest, dA[:]) {
		t.Fatalf("setup: O = %v, want A at seq 1", o)
	}
	// The faulty primary of view 1.
	x := c.batch(c.next(2))
	for _, i := range []int{0, 2} {
		c.step(i, msg(1, c.prePrepare(1, 1, x, 1)))
		c.step(i, msg(1, c.newView(1, vcs, o, 1)))
	}
	c.deliver(isType("prepare", "commit").and(fromR(0, 2)).and(toR(0, 2)))
	for _, i := range []int{0, 2} {
		c.step(i, msg(1, c.commit(1, 1, c.digest(x), 1)))
	}
	c.deliver(isType("prepare", "commit").and(fromR(0, 2)).and(toR(0, 2)))
	for _, i := range []int{0, 2} {
		for _, ex := range c.reps[i].execs {
			if ex.Seq == 1 && ex.Digest != dA {
				t.Fatalf("r%d executed %s at seq 1, r3 executed %s", i, ex.Digest, dA)
			}
		}
	}
}

// V5, G2: PRE-PREPAREs of O above the backup's high watermark (its log
// still reaches min-s, so it executes up to it rather than fetching state)
// are prepared once the checkpoint at min-s is stable and H moves.
func TestV5_NewViewEntriesAboveHighWatermarkPreparedWhenItMoves(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[2]
	r.manualExec = true
	executeUpTo(c, 2, 0, tK) // committed and handed out, not executed yet
	twin := bfttest.NewApp()
	for _, ex := range r.pendingExec {
		twin.Execute(&ex)
	}
	cert := c.checkpointCert(tK, twin.Digest(), 0, 1, 3)
	dX := fakeDigest(tK+tL, "X")
	vcs := []*bftpb.ViewChange{
		c.viewChange(1, 0, cert, c.preparedCert(0, tK+tL, dX, 1, 3)),
		c.viewChange(1, 1, cert),
		c.viewChange(1, 3, nil),
	}
	r.reset()
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if len(r.targets) != 0 {
		t.Fatalf("state transfer although the log reaches min-s")
	}
	for _, p := range sentPrepares(r.msgs) {
		if p.Seq > tL {
			t.Fatalf("PREPARE for seq %d above H = %d", p.Seq, tL)
		}
	}
	r.runPending()
	if h := c.node(2).LowWatermark(); h != tK {
		t.Fatalf("h = %d after executing up to min-s, want %d", h, tK)
	}
	seen := map[uint64]bool{}
	for _, p := range sentPrepares(r.msgs) {
		if p.View == 1 {
			seen[p.Seq] = true
		}
	}
	for s := uint64(tK + 1); s < tK+tL; s++ {
		if !seen[s] {
			t.Errorf("no PREPARE(v1, s%d) for O's null batch", s)
		}
	}
	var fetched bool
	for _, f := range sentFetches(r.msgs) {
		fetched = fetched || (f.FromSeq == tK+tL && bytes.Equal(f.Digest, dX))
	}
	if !fetched {
		t.Errorf("no fetch of O's batch at seq %d", tK+tL)
	}
}

// newViewAboveExecuted puts backup r2 in the window issue 12 found: it has
// committed batches 1..K but its executor has not reported them, and a valid
// NEW-VIEW(1) from r1 has min-s = K (2f+1 VIEW-CHANGEs carry the checkpoint
// certificate of K). Its low watermark is still 0.
func newViewAboveExecuted(t *testing.T, early *bftpb.PrePrepare) (*cluster, *rep) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[2]
	r.manualExec = true
	executeUpTo(c, 2, 0, tK)
	twin := bfttest.NewApp()
	for _, ex := range r.pendingExec {
		twin.Execute(&ex)
	}
	cert := c.checkpointCert(tK, twin.Digest(), 0, 1, 3)
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, cert), c.viewChange(1, 1, cert), c.viewChange(1, 3, cert)}
	r.reset()
	if early != nil {
		c.step(2, msg(1, early))
	}
	c.step(2, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if h := c.node(2).LowWatermark(); h != 0 {
		t.Fatalf("setup: h = %d, want 0 (execution has not caught up)", h)
	}
	return c, r
}

// V5, G2: after a NEW-VIEW whose min-s is above what the backup executed, a
// faulty new primary's PRE-PREPARE(v+1, s <= min-s) must not be PREPAREd:
// seq s committed with another batch in the old view, and a correct replica
// never signs a PREPARE that contradicts it (the deviation of issue 12,
// possible in production because execution is asynchronous).
func TestV5_NoPrepareAtOrBelowMinSAfterNewView(t *testing.T) {
	c, r := newViewAboveExecuted(t, nil)
	for s := uint64(1); s <= tK; s++ {
		c.step(2, msg(1, c.prePrepare(1, s, c.batch(c.next(3)), 1)))
	}
	for _, p := range sentPrepares(r.msgs) {
		if p.View == 1 && p.Seq <= tK {
			t.Fatalf("PREPARE(v1, s%d) for a sequence number at or below min-s = %d", p.Seq, tK)
		}
	}
}

// V5, G2: the same for a PRE-PREPARE of the new view that arrived before the
// NEW-VIEW (buffered): entering the view must not PREPARE it.
func TestV5_NoPrepareOfEarlyPrePrepareAtOrBelowMinS(t *testing.T) {
	c0 := newCluster(t, 1)
	early := c0.prePrepare(1, tK, c0.batch(c0.next(3)), 1)
	_, r := newViewAboveExecuted(t, early)
	for _, p := range sentPrepares(r.msgs) {
		if p.View == 1 && p.Seq <= tK {
			t.Fatalf("PREPARE(v1, s%d) for an early PRE-PREPARE at or below min-s = %d", p.Seq, tK)
		}
	}
}

// V6, V7 (found by the old simulator's seed 642): a replica that moved on
// from view 1 (to 3, here) after its VIEW-CHANGE(1) was lost keeps
// retransmitting its VIEW-CHANGE(1) too, not only the latest, so replicas
// still collecting 2f+1 VIEW-CHANGEs for view 1 can complete it.
func TestV6_ReplicaRetransmitsEveryOwnViewChangeSinceItsLastView(t *testing.T) {
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.StatusInterval = 5 })
	c.net = false
	r := c.reps[2]
	if err := c.propose(2, c.next(0)); err != nil {
		t.Fatal(err)
	}
	if k := ticksUntilViewChange(c, 2, 5*tReqTO); k != tReqTO {
		t.Fatalf("setup: no view change after the request timeout (%d ticks)", k)
	}
	// VIEW-CHANGE(1) was lost (nothing is delivered); r0 and r1 ask for
	// view 3, so r2 joins it (V7) and waits for its primary, r3.
	for _, i := range []int{0, 1} {
		c.step(2, msg(i, c.viewChange(3, i, nil)))
	}
	if v, changing := c.node(2).View(); v != 3 || !changing {
		t.Fatalf("setup: r2 in view %d (changing %v), want a view change to 3", v, changing)
	}
	r.reset()
	c.tick(2, 5)
	views := map[uint64]bool{}
	for _, vc := range sentViewChanges(r.msgs) {
		if vc.Replica == 2 {
			views[vc.View] = true
		}
	}
	if !views[1] || !views[3] {
		t.Fatalf("retransmitted own VIEW-CHANGEs for views %v, want 1 and 3", views)
	}
}

// V2, V7 and issue 13: a replica that restarts in the middle of a view
// change it started alone (its VIEW-CHANGE(1) reached nobody) stays out of
// view 0's voting — it promised in VIEW-CHANGE(1) not to prepare anything
// more in view 0, and that signed promise may still be used in a NEW-VIEW(1)
// — but it keeps serving: it executes view 0's batches from commit
// certificates (G3) and answers clients. And when a further fault strikes
// (the primary goes silent), its VIEW-CHANGE(1) counts, so f more askers
// complete view 1 with the replicas left.
func TestV7_ReplicaStuckInViewChangeAloneServesAndHelpsTheNextViewChange(t *testing.T) {
	// No checkpoint within the test: r3 learns batch by batch (G3's
	// commit certificates), which is what it does between checkpoints.
	c := newCluster(t, 1, func(cfg *bft.Config) {
		cfg.StatusInterval, cfg.CheckpointInterval, cfg.LogWindow = 3, 16, 32
	})
	r3 := c.reps[3]
	// r3 alone holds a request; its VIEW-CHANGE(1) is lost; it restarts.
	if err := c.propose(3, c.next(7)); err != nil {
		t.Fatal(err)
	}
	c.drop(all)
	c.tick(3, tReqTO)
	c.drop(all)
	c.restart(3)
	if v, changing := c.node(3).View(); v != 1 || !changing {
		t.Fatalf("setup: r3 restarted in view %d (changing %v), want the view change to 1", v, changing)
	}
	// The others serve view 0; r3's messages go out but move nobody.
	for k := 0; k < 6; k++ {
		if err := c.propose(0, c.next(k%3)); err != nil {
			t.Fatal(err)
		}
		c.settle()
	}
	for round := 0; round < 10; round++ {
		for i := 0; i < c.n; i++ {
			c.tick(i, 3)
		}
		c.settle()
	}
	for i := 0; i < 3; i++ {
		if v, changing := c.node(i).View(); v != 0 || changing {
			t.Fatalf("r%d moved to view %d on one replica's VIEW-CHANGE (V7)", i, v)
		}
	}
	if got, want := c.node(3).LastExecuted(), c.node(0).LastExecuted(); got != want || want == 0 {
		t.Fatalf("r3 executed %d, the others %d: it did not learn view 0's commits", got, want)
	}
	for _, m := range r3.msgs {
		if p := m.Msg.GetPrepare(); p != nil && p.View == 0 {
			t.Fatalf("r3 PREPAREd seq %d in view 0 after its VIEW-CHANGE(1)", p.Seq)
		}
		if cm := m.Msg.GetCommit(); cm != nil && cm.View == 0 {
			t.Fatalf("r3 COMMITted seq %d in view 0 after its VIEW-CHANGE(1)", cm.Seq)
		}
	}
	if len(r3.replies) == 0 {
		t.Fatal("r3 sent no replies for the batches it executed")
	}
	// A further fault: the primary r0 goes silent. r1 and r2 time out on a
	// request, and with r3's VIEW-CHANGE(1) view 1 forms without r0.
	before := c.node(1).LastExecuted()
	req := c.next(4)
	for _, i := range []int{1, 2, 3} {
		if err := c.propose(i, req); err != nil {
			t.Fatal(err)
		}
	}
	notR0 := func(e envelope) bool { return e.from != 0 && e.to != 0 }
	for round := 0; round < 20; round++ {
		for _, i := range []int{1, 2, 3} {
			c.tick(i, 3)
		}
		c.deliver(notR0)
		c.drop(all)
	}
	for _, i := range []int{1, 2, 3} {
		if v, changing := c.node(i).View(); v != 1 || changing {
			t.Fatalf("r%d in view %d (changing %v) after the primary went silent, want view 1", i, v, changing)
		}
	}
	if c.node(1).LastExecuted() <= before {
		t.Fatalf("no progress in view 1")
	}
}

// V5: a NEW-VIEW proves itself (the primary's signature, 2f+1 VIEW-CHANGEs,
// O recomputed), so a backup may relay it to a peer behind in views: the
// Checker accepts it from any member, and the peer enters the view.
func TestV5_NewViewRelayedByABackupBringsAPeerIntoTheView(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 2, nil)}
	nv := msg(2, c.newView(1, vcs, c.expectedO(vcs), 1)) // signed by r1, sent by r2
	if err := c.checker.Message(nv); err != nil {
		t.Fatalf("the Checker rejects a NEW-VIEW relayed by a backup: %v", err)
	}
	c.step(3, nv)
	if v, changing := c.node(3).View(); v != 1 || changing {
		t.Fatalf("r3 in view %d (changing %v), want view 1", v, changing)
	}
	// Relaying does not let a non-primary sign one.
	forged := msg(2, c.newView(1, vcs, c.expectedO(vcs), 2))
	if err := c.checker.Message(forged); err == nil {
		t.Fatal("the Checker accepted a NEW-VIEW signed by a replica that is not the view's primary")
	}
}

// N4, P3, V3, N5: messages of a view a replica has not entered are only
// buffered. After a restart they must not make a slot prepared in that view:
// its VIEW-CHANGE for the view would carry a certificate of the view itself
// (which every Checker rejects), and once it entered the view it would never
// send its COMMIT for the slot.
func TestP3_RestartDoesNotPrepareInAViewNotEntered(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[2]
	b := c.batch(c.next(0))
	d := c.digest(b)
	// r2 is in view 0 and gets view 1's PRE-PREPARE and 2f PREPAREs early.
	c.step(2, msg(1, c.prePrepare(1, 1, b, 1)))
	c.step(2, msg(0, c.prepare(1, 1, d, 0)))
	c.step(2, msg(3, c.prepare(1, 1, d, 3)))
	c.restart(2)
	// It joins view 1 (V7) and sends its VIEW-CHANGE(1).
	r.reset()
	for _, i := range []int{0, 3} {
		c.step(2, msg(i, c.viewChange(1, i, nil)))
	}
	vc := lastViewChange(c, 2)
	if vc == nil || vc.View != 1 {
		t.Fatal("setup: r2 sent no VIEW-CHANGE(1)")
	}
	if err := c.checker.Message(msg(2, vc)); err != nil {
		t.Fatalf("r2's VIEW-CHANGE(1) is invalid after the restart: %v", err)
	}
	// NEW-VIEW(1) with an empty O; then r1 pre-prepares the batch at seq 1.
	nvVCs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 3, nil), vc}
	r.reset()
	c.step(2, msg(1, c.newView(1, nvVCs, c.expectedO(nvVCs), 1)))
	// With the PREPAREs of r0 and r3 it buffered before the crash it holds
	// 2f, so it is prepared now, in view 1, and must COMMIT (N5).
	c.step(2, msg(1, c.prePrepare(1, 1, b, 1)))
	committed := false
	for _, cm := range sentCommits(r.msgs) {
		committed = committed || (cm.View == 1 && cm.Seq == 1)
	}
	if !committed {
		t.Fatal("r2 never sent COMMIT(v1, s1) after entering view 1")
	}
}

// V5, V6, V7 (simulator seed 16459): a replica that entered view 1 and then
// moved on to a view change to 2 still relays NEW-VIEW(1) to a peer whose
// status says it is still changing to 1 (it missed the NEW-VIEW in a
// partition). Without the relay that peer waits for 2f+1 VIEW-CHANGE(1)s
// that the replicas already in view 1 no longer send, so its V6 timer never
// starts; with faulty replicas withholding their VIEW-CHANGE(2) from it, V7
// never pulls it along either, and the group can stall for good.
func TestV5_ReplicaChangingToALaterViewRelaysTheNewViewItEntered(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[3]
	vcs := []*bftpb.ViewChange{c.viewChange(1, 0, nil), c.viewChange(1, 1, nil), c.viewChange(1, 3, nil)}
	c.step(3, msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)))
	if v, changing := c.node(3).View(); v != 1 || changing {
		t.Fatalf("setup: r3 in view %d (changing %v), want view 1", v, changing)
	}
	// f+1 replicas ask for view 2 (primary r2, silent here): r3 joins (V7).
	for _, i := range []int{0, 1} {
		c.step(3, msg(i, c.viewChange(2, i, nil)))
	}
	if v, changing := c.node(3).View(); v != 2 || !changing {
		t.Fatalf("setup: r3 in view %d (changing %v), want a view change to 2", v, changing)
	}
	r.reset()
	c.step(3, msg(0, &bftpb.Status{View: 1, ViewChanging: true, Replica: 0}))
	nvs := sentNewViews(r.msgs)
	if len(nvs) != 1 || nvs[0].View != 1 {
		t.Fatalf("r3 sent NEW-VIEWs %v to a peer still changing to view 1, want NEW-VIEW(1)", nvs)
	}
	// The relayed NEW-VIEW brings the peer into view 1.
	c.step(0, msg(3, nvs[0]))
	if v, changing := c.node(0).View(); v != 1 || changing {
		t.Fatalf("r0 in view %d (changing %v) after the relay, want view 1", v, changing)
	}
	// A peer changing to a view above it gets nothing.
	r.reset()
	c.step(3, msg(0, &bftpb.Status{View: 2, ViewChanging: true, Replica: 0}))
	if nvs := sentNewViews(r.msgs); len(nvs) != 0 {
		t.Fatalf("r3 relayed %d NEW-VIEWs to a peer changing to view 2", len(nvs))
	}
}
