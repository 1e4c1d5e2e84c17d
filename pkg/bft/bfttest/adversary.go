package bfttest

import (
	"sort"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Valid but adversarial Byzantine replicas. The behaviours of behavior.go
// mostly send what the Checker rejects; these send messages every check
// accepts — correctly signed, well-formed, consistent — and choose them to
// hurt: stale but genuine checkpoints, omitted certificates, a hand-picked
// set of VIEW-CHANGEs, equivocation timed at view changes and checkpoints,
// small mutations of real messages (ByzzFuzz), two instances of one key
// (Twins), and faulty replicas that coordinate.

// seenMessages is what a replica saw that an adversary can reuse: valid
// VIEW-CHANGEs per view and the genuine stable checkpoint certificates.
type seenMessages struct {
	viewChanges map[uint64]map[uint32]*bftpb.ViewChange
	stable      []*bftpb.ViewChange // VIEW-CHANGEs carrying distinct stable checkpoints, oldest first
}

func (s *seenMessages) note(m *bftpb.Message) {
	vc := m.GetViewChange()
	if vc == nil {
		if nv := m.GetNewView(); nv != nil {
			for _, v := range nv.ViewChanges {
				s.noteVC(v)
			}
		}
		return
	}
	s.noteVC(vc)
}

func (s *seenMessages) noteVC(vc *bftpb.ViewChange) {
	if s.viewChanges == nil {
		s.viewChanges = make(map[uint64]map[uint32]*bftpb.ViewChange)
	}
	row := s.viewChanges[vc.View]
	if row == nil {
		if len(s.viewChanges) > 16 {
			for v := range s.viewChanges {
				if v < vc.View {
					delete(s.viewChanges, v)
				}
			}
		}
		row = make(map[uint32]*bftpb.ViewChange)
		s.viewChanges[vc.View] = row
	}
	row[vc.Replica] = vc
	if vc.StableSeq > 0 {
		for _, o := range s.stable {
			if o.StableSeq == vc.StableSeq {
				return
			}
		}
		s.stable = append(s.stable, vc)
		sort.Slice(s.stable, func(i, j int) bool { return s.stable[i].StableSeq < s.stable[j].StableSeq })
		if len(s.stable) > 8 {
			s.stable = s.stable[1:]
		}
	}
}

// ViewChangeLies sends VIEW-CHANGEs that every check accepts but that hide
// what it knows: an old but genuine checkpoint instead of its stable one,
// and some or all of its prepared certificates left out (V2, V4: the
// others' VIEW-CHANGEs must make up for it).
type ViewChangeLies struct{ base }

func (ViewChangeLies) Name() string { return "view-change-lies" }
func (ViewChangeLies) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	if m.GetViewChange() == nil {
		return []*bftpb.Message{m}
	}
	return []*bftpb.Message{lyingViewChange(r, m)}
}

func lyingViewChange(r *SimReplica, m *bftpb.Message) *bftpb.Message {
	rng := r.g.w.rng
	c := clone(m)
	vc := c.GetViewChange()
	if rng.IntN(2) == 0 {
		// An older genuine checkpoint (or the genesis one).
		var old *bftpb.ViewChange
		for _, s := range r.seen.stable {
			if s.StableSeq < vc.StableSeq {
				old = s
			}
		}
		if old != nil {
			vc.StableSeq, vc.StableDigest, vc.CheckpointCert = old.StableSeq, old.StableDigest, old.CheckpointCert
		} else {
			vc.StableSeq, vc.StableDigest, vc.CheckpointCert = 0, nil, nil
		}
	}
	// Keep only certificates V3 admits for the checkpoint claimed, and drop
	// some of those too.
	L := uint64(r.g.coreConfig(r.id).LogWindow)
	kept := vc.Prepared[:0:0]
	for _, pc := range vc.Prepared {
		s := pc.GetPrePrepare().GetSeq()
		if s > vc.StableSeq && s <= vc.StableSeq+L && rng.IntN(2) == 0 {
			kept = append(kept, pc)
		}
	}
	vc.Prepared = kept
	resign(r, c)
	return c
}

// ChoosyPrimary, as the primary of a new view, builds its NEW-VIEW from the
// 2f+1 valid VIEW-CHANGEs it likes least for the others — preferring ones
// with old checkpoints and few prepared certificates — instead of the first
// it got. Any 2f+1 valid VIEW-CHANGEs must lead to a safe O (V4, V5).
type ChoosyPrimary struct{ base }

func (ChoosyPrimary) Name() string { return "choosy-primary" }
func (ChoosyPrimary) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	nv := m.GetNewView()
	if nv == nil {
		return []*bftpb.Message{m}
	}
	row := r.seen.viewChanges[nv.View]
	var vcs []*bftpb.ViewChange
	for _, vc := range nv.ViewChanges {
		if vc.Replica == uint32(r.id) {
			vcs = append(vcs, vc) // its own
		}
	}
	ids := make([]int, 0, len(row))
	for id := range row {
		if id != uint32(r.id) {
			ids = append(ids, int(id))
		}
	}
	sort.Ints(ids)
	// Least helpful first: lowest checkpoint, fewest certificates; ties
	// broken at random.
	r.g.w.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	sort.SliceStable(ids, func(i, j int) bool {
		a, b := row[uint32(ids[i])], row[uint32(ids[j])]
		if a.StableSeq != b.StableSeq {
			return a.StableSeq < b.StableSeq
		}
		return len(a.Prepared) < len(b.Prepared)
	})
	q := 2*r.g.F + 1
	for _, id := range ids {
		if len(vcs) == q {
			break
		}
		vcs = append(vcs, row[uint32(id)])
	}
	if len(vcs) < q {
		return []*bftpb.Message{m}
	}
	alt := bft.BuildNewView(r.g.dom, r.signer(), bft.View(nv.View), bft.ReplicaID(r.id), vcs)
	return []*bftpb.Message{{From: m.From, Body: &bftpb.Message_NewView{NewView: alt}}}
}

// EquivocateAtViewChange sends different, valid VIEW-CHANGEs to different
// replicas: the real one to some, one with a stale checkpoint or omitted
// certificates to others.
type EquivocateAtViewChange struct{ base }

func (EquivocateAtViewChange) Name() string { return "equivocate-at-view-change" }
func (EquivocateAtViewChange) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	if m.GetViewChange() == nil || to%2 == 0 {
		return []*bftpb.Message{m}
	}
	return []*bftpb.Message{lyingViewChange(r, m)}
}

// EquivocateAtCheckpoint sends its real CHECKPOINT to some replicas and one
// with another state digest to the others, so checkpoint certificates form
// at some replicas only (G1–G3).
type EquivocateAtCheckpoint struct{ base }

func (EquivocateAtCheckpoint) Name() string { return "equivocate-at-checkpoint" }
func (EquivocateAtCheckpoint) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	if m.GetCheckpoint() == nil || to%2 == 0 {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	c.GetCheckpoint().StateDigest = r.randDigest()
	resign(r, c)
	return []*bftpb.Message{c}
}

// Mutate is ByzzFuzz-style: it sends, besides or instead of its real
// messages, small mutations of them — view ±1, sequence number ±1, or an
// old proposal of its own relabelled for the current view — correctly
// signed with its own key.
type Mutate struct{ base }

func (Mutate) Name() string { return "mutate" }
func (Mutate) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	rng := r.g.w.rng
	if rng.IntN(3) != 0 {
		return []*bftpb.Message{m}
	}
	c := clone(m)
	delta := func(x uint64) uint64 {
		if rng.IntN(2) == 0 || x == 0 {
			return x + 1
		}
		return x - 1
	}
	switch b := c.Body.(type) {
	case *bftpb.Message_PrePrepare:
		switch rng.IntN(3) {
		case 0:
			b.PrePrepare.View = delta(b.PrePrepare.View)
		case 1:
			b.PrePrepare.Seq = delta(b.PrePrepare.Seq)
		default: // a stale proposal: an old batch of its own at this (v, s)
			if old := r.oldPrePrepare(); old != nil {
				b.PrePrepare.Batch, b.PrePrepare.Digest = old.Batch, old.Digest
			}
		}
	case *bftpb.Message_Prepare:
		if rng.IntN(2) == 0 {
			b.Prepare.View = delta(b.Prepare.View)
		} else {
			b.Prepare.Seq = delta(b.Prepare.Seq)
		}
	case *bftpb.Message_Commit:
		if rng.IntN(2) == 0 {
			b.Commit.View = delta(b.Commit.View)
		} else {
			b.Commit.Seq = delta(b.Commit.Seq)
		}
	case *bftpb.Message_Checkpoint:
		b.Checkpoint.Seq = delta(b.Checkpoint.Seq)
	case *bftpb.Message_ViewChange:
		b.ViewChange.View = delta(b.ViewChange.View)
	default:
		return []*bftpb.Message{m}
	}
	resign(r, c)
	r.g.cov.Mutations++
	if rng.IntN(2) == 0 {
		return []*bftpb.Message{c}
	}
	return []*bftpb.Message{m, c}
}

// oldPrePrepare returns one of the PRE-PREPAREs with a body this replica
// sent before, if any.
func (r *SimReplica) oldPrePrepare() *bftpb.PrePrepare {
	for tries := 0; tries < 8 && len(r.sent) > 0; tries++ {
		m := &bftpb.Message{}
		if err := unmarshal(r.sent[r.g.w.rng.IntN(len(r.sent))], m); err != nil {
			continue
		}
		if pp := m.GetPrePrepare(); pp != nil && pp.Batch != nil {
			return pp
		}
	}
	return nil
}

// Coordination is the plan that the faulty replicas of a group share: they
// pick the same victims and act together.
type Coordination struct {
	// Victims are the correct replicas they try to split off.
	Victims []bool
	// Mode is the shared strategy: "split" (one batch to the victims,
	// another to the rest, and votes for each on its side), "omit" (both
	// go silent towards the victims, so the victims depend on each other
	// and on the rest), or "lie" (both send lying VIEW-CHANGEs and votes for
	// the victims' batch at once).
	Mode string
}

// Coordinated is a faulty replica that acts with the others of its
// Coordination: as primary it sends one batch to the victims and another to
// the rest; as a backup it PREPAREs and COMMITs whatever each side got, to
// that side, so each side sees f more votes for its batch than it would;
// and all of them send lying VIEW-CHANGEs together.
type Coordinated struct {
	base
	Plan *Coordination
}

func (Coordinated) Name() string { return "coordinated" }
func (c Coordinated) Outgoing(r *SimReplica, to int, m *bftpb.Message) []*bftpb.Message {
	victim := c.Plan.Victims[to]
	if c.Plan.Mode == "omit" && victim {
		return nil
	}
	if c.Plan.Mode == "lie" && m.GetViewChange() != nil {
		return []*bftpb.Message{lyingViewChange(r, m)}
	}
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		if !victim || b.PrePrepare.Batch == nil || len(b.PrePrepare.Batch.Requests) == 0 {
			return []*bftpb.Message{m}
		}
		// The victims get the batch without its last request.
		cl := clone(m)
		pp := cl.GetPrePrepare()
		pp.Batch.Requests = pp.Batch.Requests[:len(pp.Batch.Requests)-1]
		d := r.g.dom.BatchDigest(pp.Batch)
		pp.Digest = d[:]
		resign(r, cl)
		c.remember(r, pp)
		return []*bftpb.Message{cl}
	case *bftpb.Message_Prepare, *bftpb.Message_Commit:
		out := []*bftpb.Message{m}
		if victim {
			// Also vote for what the victims were sent at this (v, s).
			v, s := viewSeqOf(m)
			if d := c.victimDigest(r, v, s); d != nil {
				cl := clone(m)
				if p := cl.GetPrepare(); p != nil {
					p.Digest = d
				} else {
					cl.GetCommit().Digest = d
				}
				resign(r, cl)
				out = append(out, cl)
			}
		}
		return out
	case *bftpb.Message_ViewChange:
		return []*bftpb.Message{lyingViewChange(r, m)}
	}
	return []*bftpb.Message{m}
}

// The victims' digest per (v, s), shared through the group's coverage
// (one plan per group).
func (c Coordinated) remember(r *SimReplica, pp *bftpb.PrePrepare) {
	if r.g.coordinated == nil {
		r.g.coordinated = make(map[[2]uint64][]byte)
	}
	r.g.coordinated[[2]uint64{pp.View, pp.Seq}] = pp.Digest
}

func (c Coordinated) victimDigest(r *SimReplica, v, s uint64) []byte {
	return r.g.coordinated[[2]uint64{v, s}]
}

func viewSeqOf(m *bftpb.Message) (uint64, uint64) {
	switch b := m.Body.(type) {
	case *bftpb.Message_Prepare:
		return b.Prepare.View, b.Prepare.Seq
	case *bftpb.Message_Commit:
		return b.Commit.View, b.Commit.Seq
	case *bftpb.Message_PrePrepare:
		return b.PrePrepare.View, b.PrePrepare.Seq
	}
	return 0, 0
}

// twinBehavior marks the two instances of a Twins slot: each runs the
// correct protocol with the same key, on its own side of the group, so
// together they equivocate in every way a correct replica can be made to by
// its inputs (Twins, Bano et al., 2022). Their sides change a few times
// before the network heals.
type twinBehavior struct{ base }

func (twinBehavior) Name() string { return "twins" }
func (twinBehavior) Init(r *SimReplica) {
	if r.instance != 0 {
		return
	}
	w := r.g.w
	split := func() {
		a, b := make([]bool, r.g.N), make([]bool, r.g.N)
		for i := 0; i < r.g.N; i++ {
			if i == r.id {
				continue
			}
			if w.rng.IntN(2) == 0 {
				a[i] = true
			} else {
				b[i] = true
			}
		}
		r.side, r.twin.side = a, b
	}
	split()
	for i := 0; i < 3; i++ {
		w.At(w.rng.Int64N(w.healAt+1), split)
	}
}
