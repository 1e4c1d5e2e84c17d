package bfttest

import (
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/storage"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Behavior is a fault a simulated replica can be switched to. The node
// inside still runs the real core; the behaviour tampers with what leaves
// it, injects messages of its own, or crashes it.
type Behavior interface {
	Name() string
	// Benign behaviours keep the replica correct: the safety checkers
	// still apply to it.
	Benign() bool
	Init(r *SimReplica)
	Tick(r *SimReplica)
	// Incoming sees each verified message before the node does.
	Incoming(r *SimReplica, m *bftpb.Message)
	// Outgoing returns what actually goes to replica to instead of m.
	Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message
	// Reply returns what goes to the client instead of rep (nil: nothing).
	Reply(r *SimReplica, rep *bftpb.Reply) *bftpb.Reply
	// Snapshot may tamper with the state this replica serves in a transfer.
	Snapshot(r *SimReplica, chunks []storage.Chunk) []storage.Chunk
}

// base implements Behavior as a correct replica; behaviours embed it.
type base struct{}

func (base) Benign() bool                         { return false }
func (base) Init(*SimReplica)                     {}
func (base) Tick(*SimReplica)                     {}
func (base) Incoming(*SimReplica, *bftpb.Message) {}
func (base) Outgoing(_ *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	return []*bftpb.Message{m}
}
func (base) Reply(_ *SimReplica, rep *bftpb.Reply) *bftpb.Reply { return rep }
func (base) Snapshot(_ *SimReplica, c []storage.Chunk) []storage.Chunk {
	return c
}

func clone(m *bftpb.Message) *bftpb.Message { return proto.Clone(m).(*bftpb.Message) }

// signer returns the replica's signing key.
func (r *SimReplica) signer() bft.Signer { return r.g.Keys.ReplicaSigner(r.id) }

// resign recomputes the signature of every signed body of m with r's key.
func resign(r *SimReplica, m *bftpb.Message) {
	d := r.g.dom
	sg := r.signer()
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		b.PrePrepare.Signature = sg.Sign(d.PrePrepareBytes(b.PrePrepare))
	case *bftpb.Message_Prepare:
		b.Prepare.Signature = sg.Sign(d.PrepareBytes(b.Prepare))
	case *bftpb.Message_Commit:
		b.Commit.Signature = sg.Sign(d.CommitBytes(b.Commit))
	case *bftpb.Message_Checkpoint:
		b.Checkpoint.Signature = sg.Sign(d.CheckpointBytes(b.Checkpoint))
	case *bftpb.Message_ViewChange:
		b.ViewChange.Signature = sg.Sign(d.ViewChangeBytes(b.ViewChange))
	case *bftpb.Message_NewView:
		b.NewView.Signature = sg.Sign(d.NewViewBytes(b.NewView))
	}
}

func (r *SimReplica) randDigest() []byte {
	d := make([]byte, 32)
	for i := range d {
		d[i] = byte(r.g.w.rng.IntN(256))
	}
	return d
}

// Silent sends nothing at all.
type Silent struct{ base }

func (Silent) Name() string                                               { return "silent" }
func (Silent) Outgoing(*SimReplica, int, *bftpb.Message) []*bftpb.Message { return nil }
func (Silent) Reply(*SimReplica, *bftpb.Reply) *bftpb.Reply               { return nil }

// Equivocate, as primary, sends different PRE-PREPAREs for one (v, s) to
// different backups (a shorter batch, correctly signed).
type Equivocate struct{ base }

func (Equivocate) Name() string { return "equivocate" }
func (Equivocate) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	pp := m.GetPrePrepare()
	if pp == nil || pp.Batch == nil || to%2 == 0 {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	cpp := c.GetPrePrepare()
	if n := len(cpp.Batch.Requests); n > 0 {
		cpp.Batch.Requests = cpp.Batch.Requests[:n-1]
	}
	d := r.g.dom.BatchDigest(cpp.Batch)
	cpp.Digest = d[:]
	resign(r, c)
	return []*bftpb.Message{c}
}

// WrongDigest sends PREPAREs and COMMITs for random digests, correctly signed.
type WrongDigest struct{ base }

func (WrongDigest) Name() string { return "wrong-digest" }
func (WrongDigest) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	switch m.Body.(type) {
	case *bftpb.Message_Prepare, *bftpb.Message_Commit:
		c := clone(m)
		if p := c.GetPrepare(); p != nil {
			p.Digest = r.randDigest()
		} else {
			c.GetCommit().Digest = r.randDigest()
		}
		resign(r, c)
		return []*bftpb.Message{c}
	}
	return []*bftpb.Message{m}
}

// CorruptSignatures flips a bit in the signature of everything it signs.
type CorruptSignatures struct{ base }

func (CorruptSignatures) Name() string { return "corrupt-signatures" }
func (CorruptSignatures) Outgoing(_ *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	c := clone(m)
	flip := func(b []byte) {
		if len(b) > 0 {
			b[0] ^= 1
		}
	}
	switch b := c.Body.(type) {
	case *bftpb.Message_PrePrepare:
		flip(b.PrePrepare.Signature)
	case *bftpb.Message_Prepare:
		flip(b.Prepare.Signature)
	case *bftpb.Message_Commit:
		flip(b.Commit.Signature)
	case *bftpb.Message_Checkpoint:
		flip(b.Checkpoint.Signature)
	case *bftpb.Message_ViewChange:
		flip(b.ViewChange.Signature)
	case *bftpb.Message_NewView:
		flip(b.NewView.Signature)
	}
	return []*bftpb.Message{c}
}

// Forge sends, besides its own messages, copies that claim to come from
// another replica (it cannot sign as that replica).
type Forge struct{ base }

func (Forge) Name() string { return "forge" }
func (Forge) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	other := (r.id + 1 + r.g.w.rng.IntN(r.g.N-1)) % r.g.N
	c := clone(m)
	c.From = uint32(other)
	switch b := c.Body.(type) {
	case *bftpb.Message_Prepare:
		b.Prepare.Replica = uint32(other)
		if d := b.Prepare.Digest; len(d) > 0 {
			b.Prepare.Digest = r.randDigest()
		}
	case *bftpb.Message_Commit:
		b.Commit.Replica = uint32(other)
		b.Commit.Digest = r.randDigest()
	case *bftpb.Message_Checkpoint:
		b.Checkpoint.Replica = uint32(other)
		b.Checkpoint.StateDigest = r.randDigest()
	case *bftpb.Message_ViewChange:
		b.ViewChange.Replica = uint32(other)
		b.ViewChange.View += 5
	}
	resign(r, c) // signed with r's key while claiming other: must be rejected
	return []*bftpb.Message{m, c}
}

// Replay re-sends old messages of its own (old views, old sequence numbers,
// old checkpoints) at random.
type Replay struct{ base }

func (Replay) Name() string { return "replay" }
func (Replay) Tick(r *SimReplica) {
	if len(r.sent) == 0 || r.g.w.rng.IntN(5) != 0 {
		return
	}
	b := r.sent[r.g.w.rng.IntN(len(r.sent))]
	to := r.g.w.rng.IntN(r.g.N)
	if to != r.id {
		r.g.sendReplicaMsg(r, to, b)
	}
}

// BogusViewChange sends VIEW-CHANGEs with forged prepared certificates,
// stale or forged checkpoint certificates, and valid ones for far views
// (f replicas alone must not move the group, V7).
type BogusViewChange struct{ base }

func (BogusViewChange) Name() string { return "bogus-view-change" }
func (BogusViewChange) Tick(r *SimReplica) {
	s := r.g
	rng := s.w.rng
	if rng.IntN(20) != 0 || !r.up {
		return
	}
	v, _ := r.Node().View()
	vc := &bftpb.ViewChange{View: uint64(v) + 1 + uint64(rng.IntN(3)), Replica: uint32(r.id)}
	switch rng.IntN(3) {
	case 0: // a prepared certificate whose PREPAREs it signed itself as others
		pp := &bftpb.PrePrepare{View: uint64(v), Seq: uint64(r.Node().LowWatermark()) + 1, Digest: r.randDigest(), Replica: uint32(bft.PrimaryOf(v, s.N))}
		pp.Signature = r.signer().Sign(s.dom.PrePrepareBytes(pp))
		pc := &bftpb.PreparedCert{PrePrepare: pp}
		for i := 0; i < 2*s.F; i++ {
			p := &bftpb.Prepare{View: pp.View, Seq: pp.Seq, Digest: pp.Digest, Replica: uint32((int(pp.Replica) + 1 + i) % s.N)}
			p.Signature = r.signer().Sign(s.dom.PrepareBytes(p))
			pc.Prepares = append(pc.Prepares, p)
		}
		vc.Prepared = append(vc.Prepared, pc)
	case 1: // a checkpoint certificate made of its own checkpoint repeated
		cp := &bftpb.Checkpoint{Seq: uint64(r.g.coreConfig(r.id).CheckpointInterval) * 7, StateDigest: r.randDigest(), Replica: uint32(r.id)}
		cp.Signature = r.signer().Sign(s.dom.CheckpointBytes(cp))
		vc.StableSeq, vc.StableDigest = cp.Seq, cp.StateDigest
		for i := 0; i < 2*s.F+1; i++ {
			vc.CheckpointCert = append(vc.CheckpointCert, cp)
		}
	default: // valid, for a view far ahead
		vc.View += 10
		if st := r.Node().StableCheckpoint(); st != nil {
			vc.StableSeq, vc.StableDigest, vc.CheckpointCert = st.Seq, st.StateDigest, st.Checkpoints
		}
	}
	vc.Signature = r.signer().Sign(s.dom.ViewChangeBytes(vc))
	m := &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_ViewChange{ViewChange: vc}}
	b, _ := proto.Marshal(m)
	for to := 0; to < s.N; to++ {
		if to != r.id {
			s.sendReplicaMsg(r, to, b)
		}
	}
}

// BogusNewView, as the primary of a new view, sends a NEW-VIEW whose O does
// not follow from its V (a prepared batch replaced by the null batch).
type BogusNewView struct{ base }

func (BogusNewView) Name() string { return "bogus-new-view" }
func (BogusNewView) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	nv := m.GetNewView()
	if nv == nil {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	cnv := c.GetNewView()
	null := r.g.dom.BatchDigest(&bftpb.Batch{})
	if len(cnv.PrePrepares) > 0 {
		pp := cnv.PrePrepares[0]
		pp.Digest = null[:]
		pp.Signature = r.signer().Sign(r.g.dom.PrePrepareBytes(pp))
	} else {
		pp := &bftpb.PrePrepare{View: cnv.View, Seq: uint64(r.Node().LowWatermark()) + 1, Digest: r.randDigest(), Replica: uint32(r.id)}
		pp.Signature = r.signer().Sign(r.g.dom.PrePrepareBytes(pp))
		cnv.PrePrepares = append(cnv.PrePrepares, pp)
	}
	resign(r, c)
	return []*bftpb.Message{c}
}

// BogusCheckpoint sends checkpoints with wrong state digests, and some for
// sequence numbers far in the future.
type BogusCheckpoint struct{ base }

func (BogusCheckpoint) Name() string { return "bogus-checkpoint" }
func (BogusCheckpoint) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	if m.GetCheckpoint() == nil {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	cp := c.GetCheckpoint()
	cp.StateDigest = r.randDigest()
	if r.g.w.rng.IntN(3) == 0 {
		cp.Seq += uint64(r.g.coreConfig(r.id).LogWindow) * uint64(1+r.g.w.rng.IntN(5))
	}
	resign(r, c)
	return []*bftpb.Message{c}
}

// Snapshot serves corrupted state to replicas that transfer state from it:
// a value changed, an entry dropped, or a chunk left out.
func (BogusCheckpoint) Snapshot(r *SimReplica, chunks []storage.Chunk) []storage.Chunk {
	rng := r.g.w.rng
	if len(chunks) == 0 {
		return chunks
	}
	c := &chunks[rng.IntN(len(chunks))]
	switch {
	case len(c.Entries) > 0 && rng.IntN(2) == 0:
		e := &c.Entries[rng.IntN(len(c.Entries))]
		e.Value = append(append([]byte(nil), e.Value...), 'x')
	case len(c.Entries) > 0:
		i := rng.IntN(len(c.Entries))
		c.Entries = append(c.Entries[:i:i], c.Entries[i+1:]...)
	case len(chunks) > 1:
		i := rng.IntN(len(chunks) - 1)
		chunks = append(chunks[:i:i], chunks[i+1:]...)
	}
	return chunks
}

// LyingReplies answers clients with wrong results (correctly MACed).
type LyingReplies struct{ base }

func (LyingReplies) Name() string { return "lying-replies" }
func (LyingReplies) Reply(r *SimReplica, rep *bftpb.Reply) *bftpb.Reply {
	c := proto.Clone(rep).(*bftpb.Reply)
	c.Result = append([]byte("lie"), c.Result...)
	if r.g.w.rng.IntN(4) == 0 {
		c.Status = bftpb.ReplyStatus_REPLY_STATUS_STALE
	}
	return c
}

// SeqAbuse, as primary, proposes beyond the high watermark, reuses sequence
// numbers for other batches, and slips an invalid request into batches.
type SeqAbuse struct{ base }

func (SeqAbuse) Name() string { return "seq-abuse" }
func (SeqAbuse) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	pp := m.GetPrePrepare()
	if pp == nil || pp.Batch == nil {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	cpp := c.GetPrePrepare()
	switch r.g.w.rng.IntN(4) {
	case 0: // beyond H
		cpp.Seq += uint64(r.g.coreConfig(r.id).LogWindow) + 1
	case 1: // another batch at the same seq (an empty one)
		cpp.Batch = &bftpb.Batch{}
	case 2: // an invalid request: payload changed under the client's signature
		if len(cpp.Batch.Requests) > 0 {
			cpp.Batch.Requests[0].Payload = append(cpp.Batch.Requests[0].Payload, 'x')
		}
	default: // skip ahead, leaving a gap
		cpp.Seq++
	}
	d := r.g.dom.BatchDigest(cpp.Batch)
	cpp.Digest = d[:]
	resign(r, c)
	return []*bftpb.Message{c}
}

// EarlyPrePrepare, as the primary of a new view, sends each backup a
// PRE-PREPARE of the new view for every seq of O — with another batch —
// ahead of the NEW-VIEW itself, hoping a backup keeps it instead of O's.
type EarlyPrePrepare struct{ base }

func (EarlyPrePrepare) Name() string { return "early-pre-prepare" }
func (EarlyPrePrepare) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	nv := m.GetNewView()
	if nv == nil {
		return []*bftpb.Message{m}
	}
	var out []*bftpb.Message
	for _, o := range nv.PrePrepares {
		batch := &bftpb.Batch{}
		if len(r.g.issuedList) > 0 {
			// A real, validly signed request, so the batch is valid.
			batch.Requests = append(batch.Requests, r.g.issuedList[r.g.w.rng.IntN(len(r.g.issuedList))])
		}
		d := r.g.dom.BatchDigest(batch)
		if string(d[:]) == string(o.Digest) {
			continue
		}
		pp := &bftpb.PrePrepare{View: o.View, Seq: o.Seq, Digest: d[:], Replica: uint32(r.id), Batch: batch}
		pp.Signature = r.signer().Sign(r.g.dom.PrePrepareBytes(pp))
		// And its own COMMIT for that batch, so that the backups it fools
		// need only each other to commit it.
		cm := &bftpb.Commit{View: o.View, Seq: o.Seq, Digest: d[:], Replica: uint32(r.id)}
		cm.Signature = r.signer().Sign(r.g.dom.CommitBytes(cm))
		out = append(out, &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_PrePrepare{PrePrepare: pp}},
			&bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_Commit{Commit: cm}})
	}
	return append(out, m)
}

// AllBehaviors lists every Byzantine behaviour the simulator mixes.
func AllBehaviors() []Behavior {
	return []Behavior{Silent{}, Equivocate{}, WrongDigest{}, CorruptSignatures{}, Forge{},
		Replay{}, BogusViewChange{}, BogusNewView{}, BogusCheckpoint{}, LyingReplies{}, SeqAbuse{}, EarlyPrePrepare{},
		ViewChangeLies{}, ChoosyPrimary{}, EquivocateAtViewChange{}, EquivocateAtCheckpoint{}, Mutate{}}
}
