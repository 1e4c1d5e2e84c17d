package main

// The planted bugs of the mutation gate. Each breaks one rule of pbft.md
// with the smallest textual change that does it: every Edit replaces an
// anchor that must occur exactly once in its file (Apply fails loudly
// otherwise, so the list cannot rot silently when the code moves), and the
// mutated tree must compile (TestEveryMutationAnchorAppliesOnceAndCompiles).
//
// `make mutate` runs the PBFT simulator's random seeds against each mutated
// tree; the goal is that the simulator alone catches every one of them.

// Mutation is one planted bug.
type Mutation struct {
	N     int
	Name  string
	Rule  string // the pbft.md rule it breaks
	Edits []Edit
	// Note explains a mutation the simulator is not expected to catch, or
	// what catches it.
	Note string
	// Equivalent marks a mutation that changes no behaviour the rules can
	// observe (Note says why): the gate runs it and reports it, but does not
	// fail on it.
	Equivalent bool
}

// Edit replaces Anchor, which must occur exactly once in File, by Replace.
type Edit struct {
	File, Anchor, Replace string
}

var mutations = []Mutation{
	{N: 1, Name: "prepared-2f-1", Rule: "N4: prepared needs 2f matching PREPAREs",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\tif len(matching) < n.q.Prepares() {", "\tif len(matching) < n.q.Prepares()-1 {"},
			{"pkg/bft/normal.go", "Prepares: matching[:n.q.Prepares()]}", "Prepares: matching[:min(len(matching), n.q.Prepares())]}"},
		}},
	{N: 2, Name: "committed-2f", Rule: "N6: committed-local needs 2f+1 matching COMMITs",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\tif len(matching) < n.q.Quorum() {", "\tif len(matching) < n.q.Quorum()-1 {"},
			{"pkg/bft/normal.go", "Commits: matching[:n.q.Quorum()],", "Commits: matching[:min(len(matching), n.q.Quorum())],"},
		}},
	{N: 3, Name: "prepare-digest-unchecked", Rule: "N4: PREPAREs must match the PRE-PREPARE's digest",
		Edits: []Edit{
			{"pkg/bft/normal.go", "if p != nil && ReplicaID(id) != primary && string(p.Digest) == string(ph.digest[:]) {", "if p != nil && ReplicaID(id) != primary {"},
		}},
	{N: 4, Name: "new-view-lowest-view", Rule: "V4: re-propose the certificate of the highest view",
		Edits: []Edit{
			{"pkg/bft/newview.go", "if b, ok := chosen[s]; !ok || pp.GetView() > b.view ||", "if b, ok := chosen[s]; !ok || pp.GetView() < b.view ||"},
		}},
	{N: 5, Name: "checker-skips-o-digests", Rule: "V5: O must be exactly what V4 computes from V",
		Edits: []Edit{
			{"pkg/bft/verify.go", "if pp.GetView() != nv.View || pp.GetSeq() != uint64(want.seq) || !bytes.Equal(pp.GetDigest(), want.digest[:]) {", "if pp.GetView() != nv.View || pp.GetSeq() != uint64(want.seq) {"},
		}},
	{N: 6, Name: "stable-with-f+1", Rule: "G1: a checkpoint certificate is 2f+1 CHECKPOINTs",
		Edits: []Edit{
			{"pkg/bft/checkpoint.go", "n.cps.certificate(s, n.q.Quorum())", "n.cps.certificate(s, n.q.Weak())"},
		}},
	{N: 7, Name: "checker-cert-f+1", Rule: "G1, V3: the Checker demands 2f+1 CHECKPOINTs in a certificate",
		Edits: []Edit{
			{"pkg/bft/verify.go", "if len(cps) < c.q.Quorum() || len(cps) > c.cfg.N {", "if len(cps) < c.q.Weak() || len(cps) > c.cfg.N {"},
		}},
	{N: 8, Name: "vote-during-view-change", Rule: "V2: no PRE-PREPARE/PREPARE/COMMIT taken during a view change",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\t\treturn !n.viewChanging, true", "\t\treturn true, true"},
		}},
	{N: 9, Name: "duplicate-not-detected", Rule: "C2, N7: a request already executed is not executed again",
		Edits: []Edit{
			{"pkg/bft/clients.go", "\tcase cached != nil:", "\tcase false && cached != nil:"},
		}},
	{N: 10, Name: "stale-off-by-one", Rule: "C2: a request at or below the client's low watermark never executes",
		Edits: []Edit{
			{"pkg/bft/clients.go", "\tcase r.Timestamp <= low:", "\tcase r.Timestamp < low:"},
		}},
	{N: 11, Name: "pre-prepare-overwrites", Rule: "N2: one PRE-PREPARE per (v, s); another digest is refused",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\tif ph.pp != nil {\n\t\tif ph.digest != d {", "\tif ph.pp != nil && ph.digest == d {\n\t\tif ph.digest != d {"},
		}},
	{N: 12, Name: "view-change-cert-digests-unchecked", Rule: "V3: each prepared certificate's PREPAREs match its PRE-PREPARE",
		Edits: []Edit{
			{"pkg/bft/verify.go", "if p.GetView() != pp.View || p.GetSeq() != pp.Seq || !bytes.Equal(p.GetDigest(), pp.Digest) {", "if p.GetView() != pp.View || p.GetSeq() != pp.Seq {"},
		}},
	{N: 13, Name: "view-change-cert-view-unchecked", Rule: "V3: prepared certificates of a VIEW-CHANGE to v+1 are of views < v+1",
		Edits: []Edit{
			{"pkg/bft/verify.go", "\t\tif pp.GetView() >= vc.View {", "\t\tif false && pp.GetView() >= vc.View {"},
		}},
	{N: 14, Name: "new-view-no-move-to-min-s", Rule: "V5, G3: a backup behind min-s moves its state to min-s",
		Edits: []Edit{
			{"pkg/bft/viewchange.go", "\tif plan.minS > n.h && plan.stable != nil {", "\tif false && plan.minS > n.h && plan.stable != nil {"},
		}},
	{N: 15, Name: "own-prepare-not-persisted", Rule: "P1: a backup's PREPARE is persisted before it is sent",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\t\tph.prepares[n.cfg.ID] = p\n\t\tn.persist(&bftpb.LogRecord{Record: &bftpb.LogRecord_Prepare{Prepare: p}})\n", "\t\tph.prepares[n.cfg.ID] = p\n"},
		}},
	{N: 16, Name: "restart-reuses-seq", Rule: "P3: a restarted primary never reuses a sequence number",
		Edits: []Edit{
			{"pkg/bft/persist.go", "\tn.nextSeq = maxOwn + 1\n", "\tn.nextSeq = maxOwn\n"},
		}},
	{N: 17, Name: "client-one-reply", Rule: "C3: the client accepts a result on f+1 matching replies",
		Edits: []Edit{
			{"pkg/bft/client/core.go", "\tif len(match) < c.cfg.F+1 {", "\tif len(match) < 1 {"},
		}},
	{N: 18, Name: "no-new-view-floor", Rule: "V5, G2: after NEW-VIEW(min-s) nothing at or below min-s is pre-prepared in the view",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\tif !n.inWindow(s) || (v == n.view && !n.viewChanging && s <= n.vc.floor) {\n\t\t// G2: the watermarks", "\tif !n.inWindow(s) {\n\t\t// G2: the watermarks"},
			{"pkg/bft/normal.go", "\tif sl.seq <= n.vc.floor && ph.view == n.view && !n.viewChanging {", "\tif false && sl.seq <= n.vc.floor && ph.view == n.view && !n.viewChanging {"},
		},
		Equivalent: true,
		Note: "Masked by the commit guard of acceptPrePrepare (a backup never PREPAREs a seq it holds a commit certificate for with " +
			"another batch): a backup whose h is below min-s after a NEW-VIEW holds every batch up to min-s committed (stabilize " +
			"keeps the checkpoint pending only if its log covers it; otherwise it adopts it, h = min-s), and its COMMITs are " +
			"durable before it enters the view (the view's hard state is synced), so after a restart too. The rule tests " +
			"TestV5_NoPrepareAtOrBelowMinSAfterNewView and TestV5_NoPrepareOfEarlyPrePrepareAtOrBelowMinS pass under it as " +
			"well. Mutation 19 removes the commit guard too, and the simulator catches that."},
	{N: 19, Name: "no-floor-no-commit-guard", Rule: "V5, G2 (with N2): no PREPARE at or below min-s, nor against a commit certificate",
		Edits: []Edit{
			{"pkg/bft/normal.go", "\tif !n.inWindow(s) || (v == n.view && !n.viewChanging && s <= n.vc.floor) {\n\t\t// G2: the watermarks", "\tif !n.inWindow(s) {\n\t\t// G2: the watermarks"},
			{"pkg/bft/normal.go", "\tif sl.seq <= n.vc.floor && ph.view == n.view && !n.viewChanging {", "\tif false && sl.seq <= n.vc.floor && ph.view == n.view && !n.viewChanging {"},
			{"pkg/bft/normal.go", "\tif sl.committed && sl.commitDigest != ph.digest {", "\tif false && sl.committed && sl.commitDigest != ph.digest {"},
		}},
}
