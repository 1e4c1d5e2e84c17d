package bfttest

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// CrashPlan makes a replica crash and restart at random moments before the
// network heals, at every point of the loop: between persisting a round and
// sending it, after the executor committed batches the loop has not heard
// of, in the middle of installing a checkpoint, and at plain moments. A
// crashing replica is correct (a benign fault): every safety checker still
// applies to it, and it does not use one of the f Byzantine slots.
type CrashPlan struct {
	// Crashes is how many plain crashes to schedule before the heal.
	Crashes int
	// Rate is the chance (1 in Rate) of a crash at each point the loop
	// offers while the network is chaotic; 0 disables them.
	Rate int
}

func (p *CrashPlan) chance(r *SimReplica) bool {
	return p.Rate > 0 && r.g.w.Chaotic() && r.g.w.rng.IntN(p.Rate) == 0
}

func (p *CrashPlan) crashBeforeSend(r *SimReplica) bool   { return p.chance(r) }
func (p *CrashPlan) crashMidExecution(r *SimReplica) bool { return p.chance(r) }
func (p *CrashPlan) crashMidInstall(r *SimReplica) bool   { return p.chance(r) }

// schedule plans the plain crashes of r.
func (p *CrashPlan) schedule(r *SimReplica) {
	w := r.g.w
	for i := 0; i < p.Crashes; i++ {
		w.At(w.rng.Int64N(w.healAt+1), func() {
			if r.up {
				r.crash()
				r.restartAfter(w.restartDelay())
			}
		})
	}
}

// SchedulePowerCut cuts the power of every replica of every group at one
// moment before the heal.
func (w *World) SchedulePowerCut() { w.schedulePowerCut() }

// schedulePowerCut cuts the power of every replica of every group at one
// moment before the heal, and restarts them one by one.
func (w *World) schedulePowerCut() {
	w.At(w.rng.Int64N(w.healAt+1), func() {
		for _, g := range w.groups {
			g.cov.PowerCutsOfAll++
			for _, r := range g.Instances() {
				if r.up {
					r.crash()
					r.restartAfter(w.restartDelay())
				}
			}
		}
	})
}

// execDelay is how long the executor takes to run a job: mostly quick,
// sometimes long enough for commits to run far ahead of execution.
func (w *World) execDelay() int64 {
	if w.execLag <= 0 {
		return 0
	}
	if w.rng.IntN(8) == 0 {
		return w.rng.Int64N(w.execLag + 1)
	}
	return w.rng.Int64N(w.execLag/20 + 1)
}

// restartDelay is how long a crashed replica stays down.
func (w *World) restartDelay() int64 {
	if !w.Chaotic() {
		return 100_000
	}
	return 100_000 + w.rng.Int64N(3_000_000)
}

// noteTwin records what a Twins instance signs per (kind, view, seq), and
// counts the times the two instances of one slot signed different digests:
// the equivocation Twins exists to produce.
func (c *Coverage) noteTwin(r *SimReplica, m *bftpb.Message) {
	var kind string
	var v, s uint64
	var d []byte
	switch b := m.Body.(type) {
	case *bftpb.Message_PrePrepare:
		kind, v, s, d = "pp", b.PrePrepare.View, b.PrePrepare.Seq, b.PrePrepare.Digest
	case *bftpb.Message_Prepare:
		kind, v, s, d = "p", b.Prepare.View, b.Prepare.Seq, b.Prepare.Digest
	case *bftpb.Message_Commit:
		kind, v, s, d = "c", b.Commit.View, b.Commit.Seq, b.Commit.Digest
	case *bftpb.Message_Checkpoint:
		kind, s, d = "cp", b.Checkpoint.Seq, b.Checkpoint.StateDigest
	default:
		return
	}
	if c.twinSent == nil {
		c.twinSent = make(map[twinKey]string)
	}
	k := twinKey{group: r.g.ID, slot: r.id, instance: r.instance, kind: kind, view: v, seq: s}
	if _, ok := c.twinSent[k]; ok {
		return
	}
	c.twinSent[k] = string(d)
	o := k
	o.instance = 1 - r.instance
	if other, ok := c.twinSent[o]; ok && other != string(d) {
		c.TwinsConflicts++
	}
}
