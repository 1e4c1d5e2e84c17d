package bft

import (
	"bytes"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// nvEntry is one PRE-PREPARE of a NEW-VIEW's O: its seq and digest, and
// whether it is the null batch.
type nvEntry struct {
	seq    SeqNum
	digest Digest
	null   bool
}

// nvPlan is what V4 computes from a set of VIEW-CHANGEs.
type nvPlan struct {
	// minS is the highest stable checkpoint in V, maxS the highest seq of a
	// prepared certificate above it (minS if none).
	minS, maxS SeqNum
	// stable is the VIEW-CHANGE whose checkpoint is min-s (its certificate
	// proves min-s); nil when min-s is the genesis checkpoint. entries are
	// O: one per seq in (minS, maxS], in order.
	stable  *bftpb.ViewChange
	entries []nvEntry
}

// computeNewView is V4: min-s is the highest stable checkpoint among the
// VIEW-CHANGEs, max-s the highest seq of any prepared certificate; every seq
// in (min-s, max-s] gets the digest of the prepared certificate of the
// highest view, or the null batch. It is pure, so the primary and every
// backup compute the same O from the same V (V5).
//
// Why these choices keep every committed batch:
//   - min-s: every seq at or below the highest checkpoint proven in V is
//     decided by that checkpoint's state, which 2f+1 replicas (f+1 correct)
//     reached; a replica behind it fetches the state (G3), so nothing at or
//     below min-s is proposed again.
//   - A batch committed at s in an earlier view was prepared by f+1 correct
//     replicas, and any 2f+1 VIEW-CHANGEs include one of them, whose
//     VIEW-CHANGE carries a certificate for s (or a checkpoint at or above
//     s, and then min-s >= s). No other digest can hold a prepared
//     certificate of a higher view at s: every NEW-VIEW since re-proposed
//     the committed digest there (by induction on views).
//     So the certificate of the highest view names the committed batch.
//   - A seq in (min-s, max-s] with no certificate in V committed nowhere,
//     so the null batch is safe there; it keeps the sequence dense, since
//     batches execute in order (N7) and a gap would stall execution for
//     good.
//   - Above max-s nothing in V prepared, so nothing there committed, and
//     the new primary continues at max-s+1.
func computeNewView(vcs []*bftpb.ViewChange, null Digest) nvPlan {
	var plan nvPlan
	for _, vc := range vcs {
		// min-s, and the VIEW-CHANGE whose certificate proves it: a backup
		// behind min-s adopts that certificate or fetches the state it names
		// (enterView).
		if s := SeqNum(vc.StableSeq); s > plan.minS || (s == plan.minS && plan.stable == nil && s > 0) {
			plan.minS = s
			plan.stable = vc
		}
	}
	plan.maxS = plan.minS
	type best struct {
		view   uint64
		digest []byte
	}
	chosen := make(map[SeqNum]best)
	for _, vc := range vcs {
		for _, pc := range vc.Prepared {
			pp := pc.GetPrePrepare()
			s := SeqNum(pp.GetSeq())
			// Decided by the checkpoint at min-s.
			if s <= plan.minS {
				continue
			}
			if s > plan.maxS {
				plan.maxS = s
			}
			// Highest view wins; on a tie (impossible with at most f faulty
			// replicas) the smaller digest wins, so the choice is deterministic.
			if b, ok := chosen[s]; !ok || pp.GetView() > b.view || (pp.GetView() == b.view && bytes.Compare(pp.GetDigest(), b.digest) < 0) {
				chosen[s] = best{view: pp.GetView(), digest: pp.GetDigest()}
			}
		}
	}
	// Every seq in (min-s, max-s], in order; the Checker compares a
	// NEW-VIEW's O with this, entry for entry.
	for s := plan.minS + 1; s <= plan.maxS; s++ {
		if b, ok := chosen[s]; ok {
			d, _ := digestFrom(b.digest)
			plan.entries = append(plan.entries, nvEntry{seq: s, digest: d})
		} else {
			plan.entries = append(plan.entries, nvEntry{seq: s, digest: null, null: true})
		}
	}
	return plan
}

// buildNewView is V4 at the primary of view v: it computes O from the 2f+1
// VIEW-CHANGEs vcs and signs each of O's PRE-PREPAREs (so they can later
// appear in prepared certificates) and the NEW-VIEW. The VIEW-CHANGEs go
// into V as they came, signatures and certificates included, so that every
// backup can check them and recompute O (V5).
func buildNewView(dom *Domain, s Signer, v View, self ReplicaID, vcs []*bftpb.ViewChange, null Digest) (*bftpb.NewView, nvPlan) {
	plan := computeNewView(vcs, null)
	nv := &bftpb.NewView{View: uint64(v), ViewChanges: vcs, Replica: uint32(self)}
	for _, e := range plan.entries {
		pp := &bftpb.PrePrepare{View: uint64(v), Seq: uint64(e.seq), Digest: append([]byte(nil), e.digest[:]...), Replica: uint32(self)}
		pp.Signature = s.Sign(dom.PrePrepareBytes(pp))
		nv.PrePrepares = append(nv.PrePrepares, pp)
	}
	nv.Signature = s.Sign(dom.NewViewBytes(nv))
	return nv, plan
}

// BuildNewView returns the NEW-VIEW the primary self of view v sends for
// the VIEW-CHANGEs vcs (V4), signed with s. The simulator's Byzantine
// primaries use it to send valid NEW-VIEWs built from the VIEW-CHANGEs they
// choose.
func BuildNewView(dom *Domain, s Signer, v View, self ReplicaID, vcs []*bftpb.ViewChange) *bftpb.NewView {
	nv, _ := buildNewView(dom, s, v, self, vcs, dom.BatchDigest(&bftpb.Batch{}))
	return nv
}
