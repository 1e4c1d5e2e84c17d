package bfttest

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// The signing oracle: checkers on what correct replicas sign and accept,
// added for the mutation gate (internal/mutate). The checkers of checker.go
// look at executions and results; a bug that makes a correct replica sign
// contradictory messages, or accept a certificate that proves nothing,
// shows there only if the adversary also manages to turn it into
// divergence. These look at the cause:
//
//   - no equivocation (N2, N3, N5, P3): a correct replica signs at most one
//     digest per (view, seq) across its PRE-PREPAREs, PREPAREs and COMMITs,
//     one VIEW-CHANGE and one NEW-VIEW per view, one state digest per
//     checkpoint — across restarts too;
//   - what a correct replica signs or sends is sound: every certificate in
//     its VIEW-CHANGEs, NEW-VIEWs, checkpoint certificates and committed
//     batches holds the quorum pbft.md asks for (N4, N6, G1, V3, V4), and
//     it PREPAREs or COMMITs nothing at or below min-s of the NEW-VIEW of
//     the view it is in (V5, G2);
//   - what a correct replica accepts is sound: a VIEW-CHANGE, NEW-VIEW,
//     checkpoint certificate or committed batch that passed bft.Checker
//     passes these independent checks too (V3, V5, G1, G3);
//   - durability (P1): after a crash, a correct replica's log holds every
//     PRE-PREPARE, PREPARE and COMMIT it sent above its stable checkpoint.
//
// The checks here recount quorums and recompute O from scratch, without
// bft.Checker or bft's computeNewView; signatures are bft.Checker's alone
// (every message reaches a node through it).

// oracle is a group's record of what its correct replicas signed.
type oracle struct {
	// votes: the digest each replica signed per (view, seq).
	votes map[oracleKey][]byte
	// once: the hash of what each replica signed per VIEW-CHANGE view,
	// NEW-VIEW view, checkpoint seq.
	once map[oracleKey][32]byte
	// sent: slot messages each replica sent, for the durability check.
	sent map[int]map[oracleKey][]byte
	// minS: per replica and view, min-s of the NEW-VIEW it entered the view
	// with.
	minS map[[2]uint64]uint64
	// last checked outgoing message (a broadcast is one message sent n-1
	// times).
	lastOut *bftpb.Message
}

type oracleKey struct {
	replica int
	kind    byte
	view    uint64
	seq     uint64
}

func (g *Group) orc() *oracle {
	if g.oracle == nil {
		g.oracle = &oracle{
			votes: make(map[oracleKey][]byte), once: make(map[oracleKey][32]byte),
			sent: make(map[int]map[oracleKey][]byte), minS: make(map[[2]uint64]uint64),
		}
	}
	return g.oracle
}

// noteSent is called for every message a correct replica's node sends,
// before any behaviour or crash plan touches it.
func (r *SimReplica) noteSent(m *bftpb.Message) {
	if !r.correct() || r.twin != nil {
		return
	}
	g, o := r.g, r.g.orc()
	if o.lastOut == m {
		return
	}
	o.lastOut = m
	id := r.id
	vote := func(kind string, code byte, v, s uint64, d []byte, durable bool) {
		k := oracleKey{id, 'x', v, s}
		if prev, ok := o.votes[k]; ok && !bytes.Equal(prev, d) {
			g.w.Violation("equivocation: correct %s signed %s(v%d, s%d) for %x after signing %x there", r.name(), kind, v, s, d[:4], prev[:4])
		} else if !ok {
			o.votes[k] = append([]byte(nil), d...)
		}
		if durable {
			row := o.sent[id]
			if row == nil {
				row = make(map[oracleKey][]byte)
				o.sent[id] = row
			}
			row[oracleKey{id, code, v, s}] = o.votes[k]
		}
		if kind != "PRE-PREPARE" {
			if ms, ok := o.minS[[2]uint64{uint64(id), v}]; ok && s <= ms {
				g.w.Violation("V5: correct %s signed %s(v%d, s%d) at or below min-s %d of view %d's NEW-VIEW", r.name(), kind, v, s, ms, v)
			}
		}
	}
	one := func(kind byte, key uint64, what string, b []byte) {
		k := oracleKey{id, kind, key, 0}
		h := sha256.Sum256(b)
		if prev, ok := o.once[k]; ok && prev != h {
			g.w.Violation("equivocation: correct %s signed two different %s for %d", r.name(), what, key)
		} else if !ok {
			o.once[k] = h
		}
	}
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		vote("PRE-PREPARE", 'P', b.PrePrepare.View, b.PrePrepare.Seq, b.PrePrepare.Digest, true)
	case *bftpb.Message_Prepare:
		vote("PREPARE", 'p', b.Prepare.View, b.Prepare.Seq, b.Prepare.Digest, true)
	case *bftpb.Message_Commit:
		vote("COMMIT", 'C', b.Commit.View, b.Commit.Seq, b.Commit.Digest, true)
	case *bftpb.Message_Checkpoint:
		one('k', b.Checkpoint.Seq, "CHECKPOINTs", b.Checkpoint.StateDigest)
	case *bftpb.Message_ViewChange:
		if vc := b.ViewChange; int(vc.Replica) == id {
			one('v', vc.View, "VIEW-CHANGEs", g.dom.ViewChangeBytes(vc))
		}
		if err := g.oracleViewChange(b.ViewChange); err != nil {
			g.w.Violation("soundness: correct %s sent a VIEW-CHANGE for view %d that %v", r.name(), b.ViewChange.View, err)
		}
	case *bftpb.Message_NewView:
		nv := b.NewView
		if int(nv.Replica) == id {
			one('n', nv.View, "NEW-VIEWs", g.dom.NewViewBytes(nv))
			for _, pp := range nv.PrePrepares {
				vote("PRE-PREPARE", 'P', pp.View, pp.Seq, pp.Digest, false)
			}
		}
		if err := g.oracleNewView(nv); err != nil {
			g.w.Violation("soundness: correct %s sent a NEW-VIEW for view %d that %v", r.name(), nv.View, err)
		}
		if int(nv.Replica) == id {
			o.minS[[2]uint64{uint64(id), nv.View}] = oracleMinS(nv)
		}
	case *bftpb.Message_CheckpointCert:
		if err := g.oracleCheckpointCert(b.CheckpointCert.Seq, b.CheckpointCert.StateDigest, b.CheckpointCert.Checkpoints); err != nil {
			g.w.Violation("soundness: correct %s sent a checkpoint certificate that %v", r.name(), err)
		}
	case *bftpb.Message_CommittedBatch:
		if err := g.oracleCommitCert(b.CommittedBatch.GetCert()); err != nil {
			g.w.Violation("soundness: correct %s sent a committed batch whose certificate %v", r.name(), err)
		}
	}
}

// noteAccepted is called for every message bft.Checker passed on its way
// to a correct replica, after the node took it; (v0, vc0) is the node's
// view before.
func (r *SimReplica) noteAccepted(m *bftpb.Message, v0 bft.View, vc0 bool) {
	if !r.correct() || r.twin != nil {
		return
	}
	g := r.g
	var err error
	what := ""
	switch b := m.Body.(type) {
	case *bftpb.Message_ViewChange:
		what, err = "VIEW-CHANGE", g.oracleViewChange(b.ViewChange)
	case *bftpb.Message_NewView:
		what, err = "NEW-VIEW", g.oracleNewView(b.NewView)
		if err == nil && r.up && r.loop != nil {
			n := r.loop.Node()
			if v, changing := n.View(); uint64(v) == b.NewView.View && !changing {
				ms := oracleMinS(b.NewView)
				k := [2]uint64{uint64(r.id), b.NewView.View}
				if _, ok := g.orc().minS[k]; !ok {
					g.orc().minS[k] = ms
				}
				// V5, G3: entering the view, a replica that executed up to
				// min-s adopts its checkpoint (h = min-s) at once.
				if entered := uint64(v0) < b.NewView.View || vc0; entered && uint64(n.LastExecuted()) >= ms && uint64(n.LowWatermark()) < ms {
					g.w.Violation("V5: correct %s entered view %d (NEW-VIEW min-s %d) having executed %d, but its low watermark stays %d", r.name(), v, ms, n.LastExecuted(), n.LowWatermark())
				}
			}
		}
	case *bftpb.Message_CheckpointCert:
		what, err = "checkpoint certificate", g.oracleCheckpointCert(b.CheckpointCert.Seq, b.CheckpointCert.StateDigest, b.CheckpointCert.Checkpoints)
	case *bftpb.Message_CommittedBatch:
		what, err = "committed batch", g.oracleCommitCert(b.CommittedBatch.GetCert())
		if err == nil {
			pp, cc := b.CommittedBatch.GetPrePrepare(), b.CommittedBatch.GetCert()
			if cc.GetView() != pp.GetView() || cc.GetSeq() != pp.GetSeq() || !bytes.Equal(cc.GetDigest(), pp.GetDigest()) {
				err = fmt.Errorf("does not match its PRE-PREPARE")
			}
		}
	default:
		return
	}
	if err != nil {
		g.w.Violation("soundness: correct %s accepted a %s from %d that %v", r.name(), what, m.From, err)
	}
}

// checkDurable is called when a correct replica restarts, on its store
// before the node is built: every PRE-PREPARE, PREPARE and COMMIT it sent
// above its stable checkpoint is in its log (P1).
func (r *SimReplica) checkDurable(rs *bft.Restored) {
	if !r.correct() || r.twin != nil || r.g.oracle == nil {
		return
	}
	row := r.g.oracle.sent[r.id]
	if len(row) == 0 {
		return
	}
	stable := uint64(0)
	if rs.HardState != nil && rs.HardState.Stable != nil {
		stable = rs.HardState.Stable.Seq
	}
	have := make(map[oracleKey][]byte, len(rs.Records))
	for _, rec := range rs.Records {
		switch x := rec.Record.(type) {
		case *bftpb.LogRecord_PrePrepare:
			have[oracleKey{int(x.PrePrepare.Replica), 'P', x.PrePrepare.View, x.PrePrepare.Seq}] = x.PrePrepare.Digest
		case *bftpb.LogRecord_Prepare:
			have[oracleKey{int(x.Prepare.Replica), 'p', x.Prepare.View, x.Prepare.Seq}] = x.Prepare.Digest
		case *bftpb.LogRecord_Commit:
			have[oracleKey{int(x.Commit.Replica), 'C', x.Commit.View, x.Commit.Seq}] = x.Commit.Digest
		}
	}
	for k, d := range row {
		if k.seq <= stable {
			delete(row, k)
			continue
		}
		kind := map[byte]string{'P': "PRE-PREPARE", 'p': "PREPARE", 'C': "COMMIT"}[k.kind]
		if got, ok := have[k]; !ok || !bytes.Equal(got, d) {
			r.g.w.Violation("durability (P1): correct %s sent %s(v%d, s%d) but its log after the crash does not hold it (stable %d)", r.name(), kind, k.view, k.seq, stable)
			delete(row, k)
		}
	}
}

// loadForCheck reads what a restarting replica's host will restore.
func (r *SimReplica) loadForCheck() {
	if r.engine == nil || r.g.oracle == nil || len(r.g.oracle.sent[r.id]) == 0 {
		return
	}
	rs, err := host.LoadRestored(r.engine)
	if err != nil {
		return // the host reports it
	}
	r.checkDurable(rs)
}

func oracleMinS(nv *bftpb.NewView) uint64 {
	m := uint64(0)
	for _, vc := range nv.ViewChanges {
		if vc.StableSeq > m {
			m = vc.StableSeq
		}
	}
	return m
}

func (g *Group) oracleCheckpointCert(seq uint64, digest []byte, cps []*bftpb.Checkpoint) error {
	seen := map[uint32]bool{}
	for _, cp := range cps {
		if cp.GetSeq() != seq || !bytes.Equal(cp.GetStateDigest(), digest) {
			return fmt.Errorf("holds a CHECKPOINT for another state")
		}
		if int(cp.GetReplica()) >= g.N {
			return fmt.Errorf("holds a CHECKPOINT of a non-member")
		}
		seen[cp.GetReplica()] = true
	}
	if len(seen) < 2*g.F+1 {
		return fmt.Errorf("holds %d distinct CHECKPOINTs for seq %d, not 2f+1 = %d (G1)", len(seen), seq, 2*g.F+1)
	}
	return nil
}

func (g *Group) oracleCommitCert(cc *bftpb.CommitCert) error {
	if cc == nil {
		return fmt.Errorf("is missing")
	}
	seen := map[uint32]bool{}
	for _, c := range cc.Commits {
		if c.GetView() != cc.View || c.GetSeq() != cc.Seq || !bytes.Equal(c.GetDigest(), cc.Digest) {
			return fmt.Errorf("holds a COMMIT for another (v, s, d)")
		}
		if int(c.GetReplica()) >= g.N {
			return fmt.Errorf("holds a COMMIT of a non-member")
		}
		seen[c.GetReplica()] = true
	}
	if len(seen) < 2*g.F+1 {
		return fmt.Errorf("holds %d distinct COMMITs, not 2f+1 = %d (N6)", len(seen), 2*g.F+1)
	}
	return nil
}

func (g *Group) oraclePreparedCert(pc *bftpb.PreparedCert, vcView uint64) error {
	pp := pc.GetPrePrepare()
	if pp == nil {
		return fmt.Errorf("has a prepared certificate without PRE-PREPARE")
	}
	if pp.View >= vcView {
		return fmt.Errorf("has a prepared certificate of view %d, not below %d (V3)", pp.View, vcView)
	}
	primary := uint32(pp.View % uint64(g.N))
	if pp.Replica != primary {
		return fmt.Errorf("has a prepared certificate whose PRE-PREPARE is not its view's primary's")
	}
	seen := map[uint32]bool{}
	for _, p := range pc.Prepares {
		if p.GetView() != pp.View || p.GetSeq() != pp.Seq || !bytes.Equal(p.GetDigest(), pp.Digest) {
			return fmt.Errorf("has a prepared certificate at s%d with a PREPARE that does not match its PRE-PREPARE (N4)", pp.Seq)
		}
		if p.GetReplica() == primary || int(p.GetReplica()) >= g.N {
			return fmt.Errorf("has a prepared certificate with a PREPARE of the primary or a non-member")
		}
		seen[p.GetReplica()] = true
	}
	if len(seen) < 2*g.F {
		return fmt.Errorf("has a prepared certificate at s%d with %d distinct PREPAREs, not 2f = %d (N4)", pp.Seq, len(seen), 2*g.F)
	}
	return nil
}

func (g *Group) oracleViewChange(vc *bftpb.ViewChange) error {
	if vc.StableSeq > 0 {
		if err := g.oracleCheckpointCert(vc.StableSeq, vc.StableDigest, vc.CheckpointCert); err != nil {
			return fmt.Errorf("has a checkpoint certificate that %v", err)
		}
	}
	L := uint64(g.coreConfig(0).LogWindow)
	seqs := map[uint64]bool{}
	for _, pc := range vc.Prepared {
		if err := g.oraclePreparedCert(pc, vc.View); err != nil {
			return err
		}
		s := pc.GetPrePrepare().Seq
		if s <= vc.StableSeq || s > vc.StableSeq+L || seqs[s] {
			return fmt.Errorf("has a prepared certificate at s%d outside (%d, %d] or twice (V3)", s, vc.StableSeq, vc.StableSeq+L)
		}
		seqs[s] = true
	}
	return nil
}

// oracleNewView checks V and recomputes O (V4): min-s the highest stable
// checkpoint, then for each seq up to the highest certificate the digest of
// the certificate of the highest view, or the null batch.
func (g *Group) oracleNewView(nv *bftpb.NewView) error {
	seen := map[uint32]bool{}
	for _, vc := range nv.ViewChanges {
		if vc.View != nv.View {
			return fmt.Errorf("holds a VIEW-CHANGE for view %d", vc.View)
		}
		if err := g.oracleViewChange(vc); err != nil {
			return fmt.Errorf("holds a VIEW-CHANGE from %d that %v", vc.Replica, err)
		}
		seen[vc.Replica] = true
	}
	if len(seen) < 2*g.F+1 {
		return fmt.Errorf("holds %d distinct VIEW-CHANGEs, not 2f+1 (V5)", len(seen))
	}
	minS := oracleMinS(nv)
	maxS := minS
	type best struct {
		view uint64
		d    []byte
	}
	chosen := map[uint64]best{}
	for _, vc := range nv.ViewChanges {
		for _, pc := range vc.Prepared {
			pp := pc.GetPrePrepare()
			if pp.Seq <= minS {
				continue
			}
			maxS = max(maxS, pp.Seq)
			b, ok := chosen[pp.Seq]
			if !ok || pp.View > b.view || (pp.View == b.view && bytes.Compare(pp.Digest, b.d) < 0) {
				chosen[pp.Seq] = best{pp.View, pp.Digest}
			}
		}
	}
	null := g.dom.BatchDigest(&bftpb.Batch{})
	if uint64(len(nv.PrePrepares)) != maxS-minS {
		return fmt.Errorf("has %d PRE-PREPAREs in O for (%d, %d] (V4)", len(nv.PrePrepares), minS, maxS)
	}
	for i, pp := range nv.PrePrepares {
		s := minS + 1 + uint64(i)
		want := null[:]
		if b, ok := chosen[s]; ok {
			want = b.d
		}
		if pp.View != nv.View || pp.Seq != s || !bytes.Equal(pp.Digest, want) {
			return fmt.Errorf("has O[%d] = (v%d, s%d, %x), V4 gives (v%d, s%d, %x)", i, pp.View, pp.Seq, pp.Digest[:min(4, len(pp.Digest))], nv.View, s, want[:4])
		}
	}
	return nil
}
