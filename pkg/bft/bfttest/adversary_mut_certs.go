package bfttest

import (
	"maps"
	"math/rand/v2"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Adversaries added for the mutation gate (internal/mutate): faulty
// replicas that build certificates out of genuine, correctly signed
// messages of others — so that every signature checks — but with a flaw
// that only the Checker's structural checks catch (V3, G1), and a new
// primary that probes the floor of its NEW-VIEW (V5, G2). bft.Checker must
// refuse all of it; the signing oracle (adversary_mut_oracle.go) flags a
// correct replica that accepts it.

// forgeMem is what a CertForger collected: PRE-PREPARE headers, PREPAREs
// and CHECKPOINTs of others, as they arrived.
type forgeMem struct {
	pps      map[[2]uint64]*bftpb.PrePrepare
	prepares map[[2]uint64]map[uint32]*bftpb.Prepare
	cps      map[uint64]map[string]map[uint32]*bftpb.Checkpoint
	order    [][2]uint64 // (v, s) in arrival order, bounded
}

// CertForger collects genuine signed messages and sends, now and then,
// VIEW-CHANGEs and checkpoint certificates made of them that every
// signature check passes but that prove nothing: a prepared certificate
// whose PREPAREs name another digest than its PRE-PREPARE (V3, N4), one of
// the very view the VIEW-CHANGE asks for (V3), and checkpoint certificates
// of f+1 CHECKPOINTs (G1).
type CertForger struct {
	base
	mem map[*SimReplica]*forgeMem
}

// NewCertForger returns a CertForger with its own memory.
func NewCertForger() CertForger { return CertForger{mem: make(map[*SimReplica]*forgeMem)} }

func (CertForger) Name() string { return "cert-forger" }

func (c CertForger) m(r *SimReplica) *forgeMem {
	fm := c.mem[r]
	if fm == nil {
		fm = &forgeMem{pps: make(map[[2]uint64]*bftpb.PrePrepare), prepares: make(map[[2]uint64]map[uint32]*bftpb.Prepare),
			cps: make(map[uint64]map[string]map[uint32]*bftpb.Checkpoint)}
		c.mem[r] = fm
	}
	return fm
}

func (c CertForger) Incoming(r *SimReplica, msg *bftpb.Message) {
	fm := c.m(r)
	note := func(k [2]uint64) {
		if _, ok := fm.pps[k]; ok {
			return
		}
		if _, ok := fm.prepares[k]; ok {
			return
		}
		fm.order = append(fm.order, k)
		if len(fm.order) > 64 {
			old := fm.order[0]
			fm.order = fm.order[1:]
			delete(fm.pps, old)
			delete(fm.prepares, old)
		}
	}
	switch b := msg.Body.(type) {
	case *bftpb.Message_PrePrepare:
		k := [2]uint64{b.PrePrepare.View, b.PrePrepare.Seq}
		note(k)
		if fm.pps[k] == nil {
			h := proto.Clone(b.PrePrepare).(*bftpb.PrePrepare)
			h.Batch = nil
			fm.pps[k] = h
		}
	case *bftpb.Message_Prepare:
		k := [2]uint64{b.Prepare.View, b.Prepare.Seq}
		note(k)
		row := fm.prepares[k]
		if row == nil {
			row = make(map[uint32]*bftpb.Prepare)
			fm.prepares[k] = row
		}
		row[b.Prepare.Replica] = b.Prepare
	case *bftpb.Message_Checkpoint:
		cp := b.Checkpoint
		if len(fm.cps) > 16 {
			for s := range fm.cps {
				if s < cp.Seq {
					delete(fm.cps, s)
				}
			}
		}
		byDigest := fm.cps[cp.Seq]
		if byDigest == nil {
			byDigest = make(map[string]map[uint32]*bftpb.Checkpoint)
			fm.cps[cp.Seq] = byDigest
		}
		row := byDigest[string(cp.StateDigest)]
		if row == nil {
			row = make(map[uint32]*bftpb.Checkpoint)
			byDigest[string(cp.StateDigest)] = row
		}
		row[cp.Replica] = cp
	}
}

func (c CertForger) Tick(r *SimReplica) {
	g := r.g
	rng := g.w.rng
	if !r.up || rng.IntN(10) != 0 {
		return
	}
	var out *bftpb.Message
	switch rng.IntN(3) {
	case 0:
		out = c.mismatchedCert(r)
	case 1:
		out = c.sameViewCert(r)
	default:
		out = c.weakCheckpointCert(r)
	}
	if out == nil {
		return
	}
	b, _ := proto.Marshal(out)
	for to := 0; to < g.N; to++ {
		if to != r.id {
			g.sendReplicaMsg(r, to, b)
		}
	}
}

// viewChangeWith returns a VIEW-CHANGE of r for view with its genuine stable
// checkpoint and pc, signed, if pc's seq is in the window V3 allows.
func (c CertForger) viewChangeWith(r *SimReplica, view uint64, pc *bftpb.PreparedCert) *bftpb.Message {
	vc := &bftpb.ViewChange{View: view, Replica: uint32(r.id)}
	if st := r.Node().StableCheckpoint(); st != nil {
		vc.StableSeq, vc.StableDigest, vc.CheckpointCert = st.Seq, st.StateDigest, st.Checkpoints
	}
	s := pc.PrePrepare.Seq
	if view == 0 || s <= vc.StableSeq || s > vc.StableSeq+uint64(r.g.coreConfig(r.id).LogWindow) {
		return nil
	}
	vc.Prepared = []*bftpb.PreparedCert{pc}
	vc.Signature = r.signer().Sign(r.g.dom.ViewChangeBytes(vc))
	return &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_ViewChange{ViewChange: vc}}
}

// mismatchedCert: a genuine PRE-PREPARE with genuine PREPAREs of others
// and its own PREPARE for another digest (V3: a certificate's PREPAREs
// must all match its PRE-PREPARE).
func (c CertForger) mismatchedCert(r *SimReplica) *bftpb.Message {
	g, fm := r.g, c.m(r)
	for i := len(fm.order) - 1; i >= 0; i-- {
		k := fm.order[i]
		pp := fm.pps[k]
		if pp == nil || int(pp.Replica) == r.id {
			continue
		}
		pc := &bftpb.PreparedCert{PrePrepare: pp}
		row := fm.prepares[k]
		for _, id := range slices.Sorted(maps.Keys(row)) {
			p := row[id]
			if len(pc.Prepares) == 2*g.F-1 {
				break
			}
			if id != pp.Replica && int(id) != r.id {
				pc.Prepares = append(pc.Prepares, p)
			}
		}
		if len(pc.Prepares) < 2*g.F-1 {
			continue
		}
		own := &bftpb.Prepare{View: pp.View, Seq: pp.Seq, Digest: r.randDigest(), Replica: uint32(r.id)}
		own.Signature = r.signer().Sign(g.dom.PrepareBytes(own))
		pc.Prepares = append(pc.Prepares, own)
		v, _ := r.Node().View()
		if m := c.viewChangeWith(r, max(uint64(v), pp.View)+1, pc); m != nil {
			return m
		}
	}
	return nil
}

// sameViewCert: a genuine prepared certificate of view w in a VIEW-CHANGE
// for w itself (V3: only views below the one asked for).
func (c CertForger) sameViewCert(r *SimReplica) *bftpb.Message {
	g, fm := r.g, c.m(r)
	for i := len(fm.order) - 1; i >= 0; i-- {
		k := fm.order[i]
		pp := fm.pps[k]
		if pp == nil || pp.View == 0 {
			continue
		}
		pc := &bftpb.PreparedCert{PrePrepare: pp}
		row := fm.prepares[k]
		for _, id := range slices.Sorted(maps.Keys(row)) {
			p := row[id]
			if len(pc.Prepares) == 2*g.F {
				break
			}
			if id != pp.Replica && string(p.Digest) == string(pp.Digest) {
				pc.Prepares = append(pc.Prepares, p)
			}
		}
		if len(pc.Prepares) < 2*g.F {
			continue
		}
		if m := c.viewChangeWith(r, pp.View, pc); m != nil {
			return m
		}
	}
	return nil
}

// weakCheckpointCert: f+1 genuine matching CHECKPOINTs as a certificate,
// sent alone (as catch-up sends one) or as the stable checkpoint of a
// VIEW-CHANGE (G1: a certificate is 2f+1).
func (c CertForger) weakCheckpointCert(r *SimReplica) *bftpb.Message {
	g, fm := r.g, c.m(r)
	var best uint64
	var cps []*bftpb.Checkpoint
	for s, byDigest := range fm.cps {
		for _, row := range byDigest {
			// Only one digest per seq can have f+1 (one is correct), so the
			// choice does not depend on the maps' order.
			if len(row) >= g.F+1 && s > best {
				best, cps = s, nil
				for _, id := range slices.Sorted(maps.Keys(row)) {
					if len(cps) < g.F+1 {
						cps = append(cps, row[id])
					}
				}
			}
		}
	}
	if cps == nil {
		return nil
	}
	if g.w.rng.IntN(2) == 0 {
		return &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_CheckpointCert{CheckpointCert: &bftpb.CheckpointCert{
			Seq: best, StateDigest: cps[0].StateDigest, Checkpoints: cps}}}
	}
	v, _ := r.Node().View()
	vc := &bftpb.ViewChange{View: uint64(v) + 1, Replica: uint32(r.id), StableSeq: best, StableDigest: cps[0].StateDigest, CheckpointCert: cps}
	vc.Signature = r.signer().Sign(g.dom.ViewChangeBytes(vc))
	return &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_ViewChange{ViewChange: vc}}
}

// FloorProbe, as the primary of a new view, sends with its NEW-VIEW — and
// again now and then while the view lasts — a PRE-PREPARE of the new view,
// with a valid batch, for every seq of the log window at or below min-s. A
// backup that has not executed up to min-s (its checkpoint pending) still
// has those seqs within its watermarks; after a crash that lost the COMMITs
// it received, it does not even know they committed. It must refuse them
// all (V5, G2: the floor).
type FloorProbe struct {
	base
	probes map[*SimReplica][]*bftpb.Message
}

// NewFloorProbe returns a FloorProbe with its own memory.
func NewFloorProbe() FloorProbe { return FloorProbe{probes: make(map[*SimReplica][]*bftpb.Message)} }

func (FloorProbe) Name() string { return "floor-probe" }
func (f FloorProbe) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	nv := m.GetNewView()
	if nv == nil || len(r.g.issuedList) == 0 {
		return []*bftpb.Message{m}
	}
	if old := f.probes[r]; len(old) == 0 || old[0].GetPrePrepare().View != nv.View {
		f.probes[r] = f.build(r, nv)
	}
	return append([]*bftpb.Message{m}, f.probes[r]...)
}

func (f FloorProbe) build(r *SimReplica, nv *bftpb.NewView) []*bftpb.Message {
	g := r.g
	minS := oracleMinS(nv)
	L := uint64(g.coreConfig(r.id).LogWindow)
	var out []*bftpb.Message
	for s := max(minS, L) - L + 1; s <= minS; s++ {
		batch := &bftpb.Batch{Requests: []*bftpb.Request{g.issuedList[g.w.rng.IntN(len(g.issuedList))]}}
		d := g.dom.BatchDigest(batch)
		pp := &bftpb.PrePrepare{View: nv.View, Seq: s, Digest: d[:], Replica: uint32(r.id), Batch: batch}
		pp.Signature = r.signer().Sign(g.dom.PrePrepareBytes(pp))
		out = append(out, &bftpb.Message{From: uint32(r.id), Body: &bftpb.Message_PrePrepare{PrePrepare: pp}})
	}
	return out
}

func (f FloorProbe) Tick(r *SimReplica) {
	probes := f.probes[r]
	if !r.up || len(probes) == 0 || r.g.w.rng.IntN(20) != 0 {
		return
	}
	if v, changing := r.Node().View(); changing || uint64(v) != probes[0].GetPrePrepare().View {
		return
	}
	for _, m := range probes {
		b, _ := proto.Marshal(m)
		for to := 0; to < r.g.N; to++ {
			if to != r.id {
				r.g.sendReplicaMsg(r, to, b)
			}
		}
	}
}

// SilentAfter is a replica that works correctly until At (simulated
// microseconds) and is silent from then on: a primary that fails after
// checkpoints have formed, so that the next view starts above genesis.
type SilentAfter struct {
	base
	At int64
}

func (SilentAfter) Name() string { return "silent-after" }
func (s SilentAfter) Outgoing(r *SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	if r.g.w.now >= s.At {
		return nil
	}
	return []*bftpb.Message{m}
}
func (s SilentAfter) Reply(r *SimReplica, rep *bftpb.Reply) *bftpb.Reply {
	if r.g.w.now >= s.At {
		return nil
	}
	return rep
}

// mutAdversaries adds the adversaries of this file to a run, from a
// random stream of its own, so that the main stream of RandomOptions — and
// with it what every seed did before they existed — stays as it was: in
// about one seed in eight with Byzantine replicas, one of them (not of a
// coordinated pair, not a twin) becomes a CertForger or a FloorProbe; in
// about one f = 2 seed in twelve, the primary of view 0 falls silent mid-run
// and the primary of view 1 probes the floor (floorProbePair).
func mutAdversaries(seed uint64, opts *Options) {
	rng := rand.New(rand.NewPCG(seed, 0x6d757461))
	if opts.F == 2 && rng.IntN(12) == 0 {
		floorProbePair(rng, opts)
		return
	}
	if len(opts.Faulty) == 0 || rng.IntN(8) != 0 {
		return
	}
	var ids []int
	for id, b := range opts.Faulty {
		if _, coord := b.(Coordinated); !coord {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	id := ids[rng.IntN(len(ids))]
	if rng.IntN(2) == 0 {
		opts.Faulty[id] = NewCertForger()
	} else {
		opts.Faulty[id] = NewFloorProbe()
	}
}

// floorProbePair makes replica 0 (the primary of view 0) fall silent after
// a while and replica 1 (the primary of view 1) a FloorProbe, with
// execution lagging behind commit: the view change to 1 then finds backups
// that committed up to the checkpoint in the NEW-VIEW but have not executed
// it, which is the window of the floor (V5, G2). They replace whatever
// faults the seed drew.
func floorProbePair(rng *rand.Rand, opts *Options) {
	opts.Faulty = map[int]Behavior{0: SilentAfter{At: 500_000 + rng.Int64N(4_000_000)}, 1: NewFloorProbe()}
	opts.Twins = -1
	crashing := opts.Crashing[:0:0]
	for _, id := range opts.Crashing {
		if id > 1 {
			crashing = append(crashing, id)
		}
	}
	opts.Crashing = crashing
	opts.ExecLag = max(opts.ExecLag, 100_000+rng.Int64N(600_000))
}
