package bft_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
)

// Tests of checkpoints and garbage collection, pbft.md G1–G3.

// executeUpTo has backup i execute seqs from+1..to in view 0, one
// request each, with forged votes of the others.
func executeUpTo(c *cluster, i int, from, to uint64) {
	for s := from + 1; s <= to; s++ {
		c.commitAt(i, 0, s, c.batch(c.next(int(s%8))))
	}
}

func fakeDigest(s uint64, tag string) []byte {
	h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(tag), s))
	return h[:]
}

// G1: after executing a batch whose seq is a multiple of K, and only then,
// a replica sends CHECKPOINT(s, d, i) with the state digest the host
// reported for s.
func TestG1_CheckpointAfterExecutingMultipleOfK(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[1]
	executeUpTo(c, 1, 0, tK-1)
	if cps := sentCheckpoints(r.msgs); len(cps) != 0 {
		t.Fatalf("checkpoint sent before seq K: %v", cps)
	}
	for _, ex := range r.execs {
		if ex.Checkpoint {
			t.Fatalf("Execution %d asks for a checkpoint", ex.Seq)
		}
	}
	executeUpTo(c, 1, tK-1, tK)
	if !r.execs[tK-1].Checkpoint {
		t.Fatalf("Execution %d does not ask for the state digest", tK)
	}
	cps := sentCheckpoints(r.msgs)
	if len(cps) != 1 {
		t.Fatalf("%d checkpoints after executing seq K", len(cps))
	}
	cp := cps[0]
	if cp.Seq != tK || cp.Replica != 1 || !bytes.Equal(cp.StateDigest, r.app.Digest()) {
		t.Fatalf("CHECKPOINT(s%d, %x, r%d), want (%d, host's digest, 1)", cp.Seq, cp.StateDigest[:4], cp.Replica, tK)
	}
	if err := c.checker.Message(msg(1, cp)); err != nil {
		t.Fatalf("checker rejects the checkpoint: %v", err)
	}
	executeUpTo(c, 1, tK, 2*tK-1)
	if n := len(sentCheckpoints(r.msgs)); n != 1 {
		t.Fatalf("%d checkpoints after executing up to 2K-1, want still 1", n)
	}
}

// G1: the host must report the state digest with a checkpoint's execution.
func TestG1_ExecutedAtCheckpointNeedsStateDigest(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[1]
	r.manualExec = true
	executeUpTo(c, 1, 0, tK)
	for _, ex := range r.pendingExec[:tK-1] {
		res := r.app.Execute(&ex)
		if err := r.node.Executed(ex.Seq, res, nil); err != nil {
			t.Fatalf("Executed(%d) without digest below a checkpoint: %v", ex.Seq, err)
		}
	}
	ex := r.pendingExec[tK-1]
	res := r.app.Execute(&ex)
	if err := r.node.Executed(ex.Seq, res, []byte("short")); !errors.Is(err, bft.ErrUnexpectedReply) {
		t.Fatalf("Executed(K) with a 5-byte digest: err = %v, want ErrUnexpectedReply", err)
	}
	if err := r.node.Executed(ex.Seq, res, r.app.Digest()); err != nil {
		t.Fatal(err)
	}
}

// G1: 2f+1 matching CHECKPOINTs from distinct replicas, its own included,
// make the checkpoint stable; 2f do not.
func TestG1_QuorumOfMatchingCheckpointsMakesStable(t *testing.T) {
	c := newCluster(t, 2) // 2f+1 = 5
	c.net = false
	executeUpTo(c, 1, 0, tK)
	d := c.reps[1].app.Digest()
	for _, j := range []int{0, 2, 3} { // 4 with its own
		c.step(1, msg(j, c.checkpoint(tK, d, j)))
	}
	for k := 0; k < 3; k++ { // repeated: still 4 distinct
		c.step(1, msg(3, c.checkpoint(tK, d, 3)))
	}
	if h := c.node(1).LowWatermark(); h != 0 {
		t.Fatalf("h = %d with 2f matching checkpoints, want 0", h)
	}
	c.step(1, msg(4, c.checkpoint(tK, d, 4)))
	if h := c.node(1).LowWatermark(); h != tK {
		t.Fatalf("h = %d with 2f+1 matching checkpoints, want %d", h, tK)
	}
	cert := c.node(1).StableCheckpoint()
	if err := c.checker.CheckpointCert(cert); err != nil || cert.Seq != tK || !bytes.Equal(cert.StateDigest, d) {
		t.Fatalf("stable certificate %v invalid: %v", cert, err)
	}
}

// G1: checkpoints with different digests do not form a certificate.
func TestG1_MismatchedCheckpointsDoNotMakeStable(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	executeUpTo(c, 1, 0, tK)
	d := c.reps[1].app.Digest()
	c.step(1, msg(2, c.checkpoint(tK, d, 2)))
	c.step(1, msg(3, c.checkpoint(tK, fakeDigest(tK, "other"), 3)))
	if h := c.node(1).LowWatermark(); h != 0 {
		t.Fatalf("h = %d from 2 matching and 1 different checkpoint", h)
	}
	c.step(1, msg(0, c.checkpoint(tK, d, 0)))
	if h := c.node(1).LowWatermark(); h != tK {
		t.Fatalf("h = %d with 3 matching checkpoints, want %d", h, tK)
	}
}

// G1: the checker rejects checkpoints off the K grid, forged ones, and
// certificates with too few, duplicate or mismatching checkpoints.
func TestG1_CheckerRejectsBadCheckpointsAndCertificates(t *testing.T) {
	c := newCluster(t, 1)
	d := fakeDigest(tK, "d")
	if err := c.checker.Message(msg(2, c.checkpoint(tK+1, d, 2))); !errors.Is(err, bft.ErrMalformed) {
		t.Errorf("checkpoint at K+1: %v", err)
	}
	if err := c.checker.Message(msg(2, c.checkpoint(tK, d[:31], 2))); !errors.Is(err, bft.ErrMalformed) {
		t.Errorf("31-byte state digest: %v", err)
	}
	forged := c.checkpoint(tK, d, 2)
	forged.Signature = c.sign(3, c.dom.CheckpointBytes(forged))
	if err := c.checker.Message(msg(2, forged)); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("checkpoint signed by another replica: %v", err)
	}
	if err := c.checker.Message(msg(3, c.checkpoint(tK, d, 2))); !errors.Is(err, bft.ErrWrongSigner) {
		t.Errorf("checkpoint of 2 sent by 3: %v", err)
	}
	if err := c.checker.CheckpointCert(c.checkpointCert(tK, d, 0, 1, 2)); err != nil {
		t.Errorf("valid certificate rejected: %v", err)
	}
	if err := c.checker.CheckpointCert(c.checkpointCert(tK, d, 0, 1)); !errors.Is(err, bft.ErrBadCertificate) {
		t.Errorf("certificate of 2f: %v", err)
	}
	if err := c.checker.CheckpointCert(c.checkpointCert(tK, d, 0, 1, 1)); !errors.Is(err, bft.ErrBadCertificate) {
		t.Errorf("certificate with a duplicate: %v", err)
	}
	mixed := c.checkpointCert(tK, d, 0, 1)
	mixed.Checkpoints = append(mixed.Checkpoints, c.checkpoint(tK, fakeDigest(tK, "e"), 2))
	if err := c.checker.CheckpointCert(mixed); !errors.Is(err, bft.ErrBadCertificate) {
		t.Errorf("certificate with a mismatching digest: %v", err)
	}
	bad := c.checkpointCert(tK, d, 0, 1, 2)
	bad.Checkpoints[2].Signature[0] ^= 1
	if err := c.checker.CheckpointCert(bad); !errors.Is(err, bft.ErrBadCertificate) {
		t.Errorf("certificate with a forged checkpoint: %v", err)
	}
}

// G2: on a new stable checkpoint everything at or below h is discarded:
// Ready.Deletes cover the log records and own checkpoints up to h (not
// above), the watermarks move to (h, h+L], and messages at or below h are
// dropped afterwards.
func TestG2_StableCheckpointPrunesLogAndMovesWatermarks(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[1]
	executeUpTo(c, 1, 0, tK)
	b5 := c.batch(c.next(5))
	c.step(1, msg(0, c.prePrepare(0, tK+1, b5, 0))) // pre-prepared above the checkpoint
	var below, above [][]byte
	for k, rec := range r.records {
		if pp := rec.GetPrePrepare(); pp != nil {
			if pp.Seq <= tK {
				below = append(below, []byte(k))
			} else {
				above = append(above, []byte(k))
			}
		}
	}
	if len(below) != tK || len(above) != 1 {
		t.Fatalf("store holds %d PRE-PREPAREs up to K and %d above", len(below), len(above))
	}
	ownCp := bft.RecordKey(&bftpb.LogRecord{Record: &bftpb.LogRecord_Checkpoint{Checkpoint: sentCheckpoints(r.msgs)[0]}})
	// Before the checkpoint is stable, a peer's fetch of batch 1 is answered.
	b1 := r.execs[0].Batch
	fetch1 := msg(3, &bftpb.Fetch{Kind: bftpb.Fetch_KIND_BATCH, FromSeq: 1, Digest: c.digest(b1), Replica: 3})
	r.reset()
	c.step(1, fetch1)
	if len(r.msgs) != 1 || r.msgs[0].Msg.GetBatchBody() == nil {
		t.Fatalf("control: fetch of batch 1 not answered before the checkpoint")
	}
	r.reset()
	d := r.app.Digest()
	c.step(1, msg(0, c.checkpoint(tK, d, 0)))
	c.step(1, msg(2, c.checkpoint(tK, d, 2)))
	if h := c.node(1).LowWatermark(); h != tK {
		t.Fatalf("h = %d, want %d", h, tK)
	}
	for _, k := range below {
		if !inRanges(k, r.deletes) {
			t.Errorf("record %x at or below h not deleted", k)
		}
	}
	if !inRanges(ownCp, r.deletes) {
		t.Errorf("own checkpoint record at h not deleted")
	}
	for _, k := range above {
		if inRanges(k, r.deletes) {
			t.Errorf("record %x above h deleted", k)
		}
	}
	for k := range r.records {
		if bytes.HasPrefix([]byte(k), []byte{'s'}) && bytes.Compare([]byte(k), seqKey(tK+1)) < 0 {
			t.Errorf("store still holds %x", k)
		}
	}
	// At or below h: dropped without a reaction, and nothing is left to serve.
	r.reset()
	c.step(1, fetch1)
	before := dropped(r.node, "watermark")
	dK := c.digest(c.batch(c.next(6)))
	c.step(1, msg(0, c.prePrepare(0, tK, c.batch(c.next(7)), 0)))
	c.step(1, msg(2, c.prepare(0, tK, dK, 2)))
	c.step(1, msg(2, c.commit(0, tK, dK, 2)))
	if got := dropped(r.node, "watermark") - before; got != 3 {
		t.Errorf("%d of PRE-PREPARE, PREPARE, COMMIT at h dropped, want 3", got)
	}
	staleBefore := dropped(r.node, "stale")
	c.step(1, msg(3, c.checkpoint(tK, d, 3)))
	if dropped(r.node, "stale") != staleBefore+1 {
		t.Errorf("checkpoint at h not dropped as stale")
	}
	if len(r.msgs) != 0 {
		t.Errorf("messages at or below h caused output: %d messages", len(r.msgs))
	}
	// H moved to h+L.
	c.step(1, msg(0, c.prePrepare(0, tK+tL, c.batch(c.next(0)), 0)))
	c.step(1, msg(0, c.prePrepare(0, tK+tL+1, c.batch(c.next(1)), 0)))
	ps := sentPrepares(r.msgs)
	if len(ps) != 1 || ps[0].Seq != tK+tL {
		t.Errorf("PREPAREs after h moved: %v, want one at h+L = %d", ps, tK+tL)
	}
}

// G2: memory stays bounded under a checkpoint flood: a replica that sends
// checkpoints for ever new seqs keeps only its latest few in the store, so
// its old ones stop counting (they were evicted) while its recent ones
// still count.
func TestG2_CheckpointFloodFromOneReplicaEvictsItsOldEntries(t *testing.T) {
	const first, count = 2 * tK, 2000
	last := uint64(first + tK*(count-1))
	dg := func(s uint64) []byte { return fakeDigest(s, "flood") }

	// Control: without the flood, replica 2's checkpoint at 2K counts.
	ctl := newCluster(t, 1)
	ctl.net = false
	for _, j := range []int{2, 0, 3} {
		ctl.step(1, msg(j, ctl.checkpoint(first, dg(first), j)))
	}
	if len(ctl.reps[1].targets) != 1 || ctl.reps[1].targets[0].Seq != first {
		t.Fatalf("control: no state target from a certificate at %d", first)
	}

	c := newCluster(t, 1)
	c.net = false
	for s := uint64(first); s <= last; s += tK {
		c.step(1, msg(2, c.checkpoint(s, dg(s), 2)))
	}
	for _, j := range []int{0, 3} {
		c.step(1, msg(j, c.checkpoint(first, dg(first), j)))
	}
	if len(c.reps[1].targets) != 0 || c.node(1).LowWatermark() != 0 {
		t.Fatalf("replica 2's checkpoint at %d still counted after it sent %d newer ones (target %v)", first, count-1, c.reps[1].targets)
	}
	for _, j := range []int{0, 3} {
		c.step(1, msg(j, c.checkpoint(last, dg(last), j)))
	}
	if len(c.reps[1].targets) != 1 || c.reps[1].targets[0].Seq != bft.SeqNum(last) {
		t.Fatalf("replica 2's latest checkpoint at %d did not count (targets %v)", last, c.reps[1].targets)
	}
}

// G3: a checkpoint certificate for a seq beyond what the replica executed
// (and its log cannot reach) makes it fetch the state: Ready.StateTarget
// names the seq, the certified digest and the certificate.
func TestG3_CheckpointCertificateBeyondExecutedYieldsStateTarget(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	d := fakeDigest(2*tK, "state")
	for _, j := range []int{0, 2} {
		c.step(1, msg(j, c.checkpoint(2*tK, d, j)))
	}
	if len(c.reps[1].targets) != 0 {
		t.Fatalf("state target from 2f checkpoints")
	}
	c.step(1, msg(3, c.checkpoint(2*tK, d, 3)))
	ts := c.reps[1].targets
	if len(ts) != 1 {
		t.Fatalf("%d state targets, want 1", len(ts))
	}
	if ts[0].Seq != 2*tK || !bytes.Equal(ts[0].Digest[:], d) {
		t.Fatalf("target (%d, %x), want (%d, %x)", ts[0].Seq, ts[0].Digest[:4], 2*tK, d[:4])
	}
	if err := c.checker.CheckpointCert(ts[0].Cert); err != nil || ts[0].Cert.Seq != 2*tK {
		t.Fatalf("target certificate invalid: %v", err)
	}
	if h := c.node(1).LowWatermark(); h != 2*tK {
		t.Fatalf("h = %d, want %d", h, 2*tK)
	}
	if len(c.reps[1].execs) != 0 {
		t.Fatalf("executions during a state transfer")
	}
}

// G3: a replica whose log holds every committed batch up to the certified
// checkpoint executes them instead of fetching the state.
func TestG3_ReplicaWhoseLogReachesCheckpointDoesNotTransfer(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.reps[1]
	r.manualExec = true
	executeUpTo(c, 1, 0, tK)
	twin := bfttest.NewApp()
	for _, ex := range r.pendingExec {
		twin.Execute(&ex)
	}
	d := twin.Digest()
	for _, j := range []int{0, 2, 3} {
		c.step(1, msg(j, c.checkpoint(tK, d, j)))
	}
	if len(r.targets) != 0 {
		t.Fatalf("state transfer although the log reaches seq %d", tK)
	}
	r.runPending()
	if len(r.targets) != 0 || c.node(1).LowWatermark() != tK || c.node(1).LastExecuted() != tK {
		t.Fatalf("after executing: targets %v, h %d, executed %d", r.targets, c.node(1).LowWatermark(), c.node(1).LastExecuted())
	}
}

// G3: a replica that missed everything fetches from a peer: the peer
// answers with its stable checkpoint certificate and the committed batches
// after it (each with 2f+1 COMMITs); the replica installs the state and
// then executes the batches, reaching the same state.
func TestG3_LaggingReplicaTransfersStateThenCommittedBatches(t *testing.T) {
	c := newCluster(t, 1)
	var snap *bfttest.App
	for i := 1; i <= 2*tK+1; i++ {
		if err := c.propose(0, c.next(i%8)); err != nil {
			t.Fatal(err)
		}
		c.drop(toR(3))
		c.deliver(func(e envelope) bool { return e.to != 3 })
		c.drop(toR(3))
		if i == 2*tK {
			snap = c.reps[0].app.Clone()
		}
	}
	if c.node(0).LowWatermark() != 2*tK || c.node(0).LastExecuted() != 2*tK+1 {
		t.Fatalf("r0: h %d executed %d", c.node(0).LowWatermark(), c.node(0).LastExecuted())
	}
	r3 := c.reps[3]
	if r3.node.LastExecuted() != 0 {
		t.Fatal("r3 should have missed everything")
	}
	c.step(0, msg(3, &bftpb.Fetch{Kind: bftpb.Fetch_KIND_COMMITTED, FromSeq: 1, ToSeq: 2*tK + 1, Replica: 3}))
	if n := c.deliver(toR(3)); n != 2 {
		t.Fatalf("r0 answered the fetch with %d messages, want the checkpoint certificate and one committed batch", n)
	}
	if len(r3.targets) != 1 || r3.targets[0].Seq != 2*tK || !bytes.Equal(r3.targets[0].Digest[:], snap.Digest()) {
		t.Fatalf("r3 state targets %v, want seq %d with r0's digest", r3.targets, 2*tK)
	}
	if len(r3.execs) != 0 {
		t.Fatal("r3 executed before installing the state")
	}
	r3.app = snap
	if err := r3.node.StateInstalled(2*tK, snap.ClientRecords()); err != nil {
		t.Fatal(err)
	}
	r3.drain()
	if got := executedSeqs(r3.execs); len(got) != 1 || got[0] != 2*tK+1 {
		t.Fatalf("r3 executed %v after installing the state, want [%d]", got, 2*tK+1)
	}
	if !bytes.Equal(r3.app.Digest(), c.reps[0].app.Digest()) {
		t.Fatal("r3's state differs from r0's")
	}
}

// G3: the checker accepts a committed batch only with a matching commit
// certificate of 2f+1 COMMITs and its body.
func TestG3_CheckerRejectsCommittedBatchWithoutValidCertificate(t *testing.T) {
	c := newCluster(t, 1)
	b := c.batch(c.next(0))
	d := c.digest(b)
	cert := func(ids ...int) *bftpb.CommitCert {
		cc := &bftpb.CommitCert{View: 0, Seq: 1, Digest: d}
		for _, i := range ids {
			cc.Commits = append(cc.Commits, c.commit(0, 1, d, i))
		}
		return cc
	}
	ok := &bftpb.CommittedBatch{PrePrepare: c.prePrepare(0, 1, b, 0), Cert: cert(0, 1, 2)}
	if err := c.checker.Message(msg(2, ok)); err != nil {
		t.Fatalf("valid committed batch rejected: %v", err)
	}
	cases := map[string]*bftpb.CommittedBatch{
		"2f commits":   {PrePrepare: c.prePrepare(0, 1, b, 0), Cert: cert(0, 1)},
		"duplicate":    {PrePrepare: c.prePrepare(0, 1, b, 0), Cert: cert(0, 1, 1)},
		"no body":      {PrePrepare: c.ppHeader(0, 1, d, 0), Cert: cert(0, 1, 2)},
		"other seq":    {PrePrepare: c.prePrepare(0, 2, b, 0), Cert: cert(0, 1, 2)},
		"forged":       {PrePrepare: c.prePrepare(0, 1, b, 0), Cert: cert(0, 1, 2)},
		"wrong digest": {PrePrepare: c.prePrepare(0, 1, c.batch(c.next(1)), 0), Cert: cert(0, 1, 2)},
	}
	cases["forged"].Cert.Commits[1].Signature[0] ^= 1
	for name, cb := range cases {
		if err := c.checker.Message(msg(2, cb)); err == nil {
			t.Errorf("%s: committed batch accepted", name)
		}
	}
}
