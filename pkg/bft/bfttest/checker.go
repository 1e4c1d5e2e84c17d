package bfttest

import (
	"bytes"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// The checkers. They see every execution of every correct replica (as the
// executor runs it), every result a client accepts, and at the end the
// stores of the correct replicas.
//
//   - agreement: one batch digest per sequence number and one state digest
//     per checkpoint across correct replicas;
//   - validity: correct replicas execute only requests a client signed;
//   - exactly-once: a correct replica executes a request at most once on
//     any state it keeps (its state moves back only by a restart, which
//     loses unsynced executions, or an install of a checkpoint);
//   - client safety: a client accepts only results correct replicas
//     computed (checkAccepted);
//   - liveness: after the network heals every correct client's calls
//     complete (Run);
//   - durability: nothing a client saw accepted is lost, whatever power
//     cuts hit however many replicas (the workload's final check).

// checkExecutions checks a job a replica's executor just ran.
func (r *SimReplica) checkExecutions(job *host.Job, res *host.JobResult) {
	if !r.correct() {
		return
	}
	g := r.g
	for i := range job.Executions {
		ex := &job.Executions[i]
		if d, ok := g.agreed[ex.Seq]; ok && d != ex.Digest {
			g.w.Violation("agreement: %s executed %s at seq %d, another correct replica %s", r.name(), ex.Digest, ex.Seq, d)
		} else if !ok {
			g.agreed[ex.Seq] = ex.Digest
		}
		if digest := res.Digests[i]; digest != nil {
			if d, ok := g.cpDigests[ex.Seq]; ok && !bytes.Equal(d, digest) {
				g.w.Violation("agreement: %s has state digest %x at checkpoint %d, another correct replica %x", r.name(), digest[:4], ex.Seq, d[:4])
			} else if !ok {
				g.cpDigests[ex.Seq] = digest
			}
		}
		// A re-execution after the state moved back starts over.
		for k, s := range r.executed {
			if s >= ex.Seq {
				delete(r.executed, k)
			}
		}
		for j, req := range ex.Execute {
			key := reqKey{bft.ClientID(req.Client), req.Timestamp}
			if !g.signed[string(g.dom.RequestBytes(req))] {
				g.w.Violation("validity: %s executed a request its client did not sign (%v ts %d)", r.name(), key.client, key.ts)
			}
			if s, ok := r.executed[key]; ok {
				g.w.Violation("exactly-once: %s executed %v ts %d at seq %d and again at seq %d", r.name(), key.client, key.ts, s, ex.Seq)
			}
			r.executed[key] = ex.Seq
			g.recordResults(key.client, key.ts, req.Payload, res.Results[i][j])
		}
	}
}

// recordResults remembers, per call, the result correct replicas computed:
// keyed by the call's identity (client, timestamp, position) for agreement,
// and by the call's bytes for checkAccepted when the workload makes every
// call unique (SimClient's LogApp tokens; a transaction re-sent for recovery
// is the same call with another answer, E1, so the transaction simulator
// turns that off).
func (g *Group) recordResults(client bft.ClientID, ts uint64, payload, result []byte) {
	calls, err := envelope.DecodeCalls(payload)
	if err != nil {
		return
	}
	results, _, err := envelope.DecodeOutcomes(result)
	if err != nil || len(results) != len(calls) {
		g.w.Violation("validity: %d results for %d calls", len(results), len(calls))
		return
	}
	for i, c := range calls {
		id := callID{client, ts, i}
		if prev, ok := g.byCall[id]; ok && !bytes.Equal(prev, results[i]) {
			g.w.Violation("agreement: correct replicas computed %x and %x for call %d of %v ts %d", prev, results[i], i, client, ts)
		} else if !ok {
			g.byCall[id] = results[i]
		}
		if !g.uniqueCalls {
			continue
		}
		k := string(c)
		if prev, ok := g.callResults[k]; ok && !bytes.Equal(prev, results[i]) {
			g.w.Violation("agreement: correct replicas computed %x and %x for one call", prev, results[i])
		} else if !ok {
			g.callResults[k] = results[i]
		}
	}
}

type callID struct {
	client bft.ClientID
	ts     uint64
	i      int
}

// checkAccepted: a client accepts only a result correct replicas computed.
func (g *Group) checkAccepted(who string, call, result []byte) {
	want, ok := g.callResults[string(call)]
	if !ok {
		g.w.Violation("client safety: %s accepted a result for a call no correct replica executed", who)
		return
	}
	if !bytes.Equal(want, result) {
		g.w.Violation("client safety: %s accepted %x, correct replicas computed %x", who, result, want)
	}
}

// Coverage counts the situations the adversary produced, so a run shows it
// reached the corners where bugs hide (view changes racing state transfer
// and catch-up, restarts mid-execution, NEW-VIEWs above the executed
// sequence number, Twins equivocation).
type Coverage struct {
	ViewChanges                  uint64
	NewViews                     uint64
	NewViewsAboveExecuted        uint64
	ViewChangesDuringTransfer    uint64
	TransfersDuringViewChange    uint64
	StateTransfers               uint64
	Installs                     uint64
	Crashes                      uint64
	PowerCutsOfAll               uint64
	CrashesBetweenPersistAndSend uint64
	CrashesMidExecution          uint64
	CrashesMidInstall            uint64
	RestartsMidExecution         uint64
	TwinsConflicts               uint64
	Mutations                    uint64 // ByzzFuzz mutations sent
	RejectedRequests             uint64
	// TreeSignedReplies counts replies whose signatures came from a
	// signature tree over two or more messages (pkg/bft/auth, sigtree.go).
	TreeSignedReplies uint64

	twinSent map[twinKey]string
}

type twinKey struct {
	group, slot, instance int
	kind                  string
	view, seq             uint64
}

// Add adds o to c.
func (c *Coverage) Add(o *Coverage) {
	c.ViewChanges += o.ViewChanges
	c.NewViews += o.NewViews
	c.NewViewsAboveExecuted += o.NewViewsAboveExecuted
	c.ViewChangesDuringTransfer += o.ViewChangesDuringTransfer
	c.TransfersDuringViewChange += o.TransfersDuringViewChange
	c.StateTransfers += o.StateTransfers
	c.Installs += o.Installs
	c.Crashes += o.Crashes
	c.PowerCutsOfAll += o.PowerCutsOfAll
	c.CrashesBetweenPersistAndSend += o.CrashesBetweenPersistAndSend
	c.CrashesMidExecution += o.CrashesMidExecution
	c.CrashesMidInstall += o.CrashesMidInstall
	c.RestartsMidExecution += o.RestartsMidExecution
	c.TwinsConflicts += o.TwinsConflicts
	c.Mutations += o.Mutations
	c.RejectedRequests += o.RejectedRequests
	c.TreeSignedReplies += o.TreeSignedReplies
}

func (c *Coverage) String() string {
	return fmt.Sprintf("view changes %d (%d during state transfer), new views %d (%d with min-s above executed), "+
		"state transfers %d (%d during view changes, %d installed), crashes %d (%d power cuts of all, %d between persist and send, "+
		"%d mid-execution, %d mid-install, %d restarts with executions pending), Twins conflicts %d, mutations %d",
		c.ViewChanges, c.ViewChangesDuringTransfer, c.NewViews, c.NewViewsAboveExecuted,
		c.StateTransfers, c.TransfersDuringViewChange, c.Installs, c.Crashes, c.PowerCutsOfAll, c.CrashesBetweenPersistAndSend,
		c.CrashesMidExecution, c.CrashesMidInstall, c.RestartsMidExecution, c.TwinsConflicts, c.Mutations)
}

// Zero lists the counters a default run must see above zero, by name.
func (c *Coverage) Zero() []string {
	var z []string
	for name, v := range map[string]uint64{
		"view changes": c.ViewChanges, "view changes during state transfer": c.ViewChangesDuringTransfer,
		"state transfers during view changes": c.TransfersDuringViewChange, "restarts mid-execution": c.RestartsMidExecution,
		"new views with min-s above executed": c.NewViewsAboveExecuted, "Twins conflicts": c.TwinsConflicts,
	} {
		if v == 0 {
			z = append(z, name)
		}
	}
	return z
}
