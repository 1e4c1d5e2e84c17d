package bfttest

import (
	"bytes"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// replica is a simulated replica host: it owns a bft.Node while up, and a
// durable store (hard state, log records, application state, checkpoint
// snapshots) that survives crashes.
type replica struct {
	sim      *Sim
	id       int
	cfg      bft.Config
	node     *bft.Node
	up       bool
	behavior Behavior

	// Durable.
	hs        *bftpb.HardState
	records   map[string]*bftpb.LogRecord
	app       *App
	snapshots map[bft.SeqNum]*App

	transfer      *bft.StateTarget
	transferTries int

	// For the checkers: requests executed since the last state install.
	executed map[reqKey]bool
	// sent keeps this replica's outgoing messages for replay behaviours.
	sent [][]byte
}

type reqKey struct {
	client bft.ClientID
	ts     uint64
}

// correct reports whether the replica follows the protocol (crash and
// recovery is a benign fault: such a replica must stay safe).
func (r *replica) correct() bool { return r.behavior == nil || r.behavior.Benign() }

func (r *replica) start() {
	restored := &bft.Restored{HardState: r.hs, LastExecuted: r.app.LastExecuted, Clients: r.app.ClientRecords()}
	keys := make([]string, 0, len(r.records))
	for k := range r.records {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		restored.Records = append(restored.Records, r.records[k])
	}
	node, err := bft.NewNode(r.cfg, restored)
	if err != nil {
		r.sim.violation("replica %d cannot restart: %v", r.id, err)
		return
	}
	r.node, r.up = node, true
	r.transfer = nil
	r.executed = make(map[reqKey]bool)
	r.sim.tracef("r%d up (view %d, executed %d, %d records)", r.id, r.hs.GetView(), r.app.LastExecuted, len(r.records))
	r.process()
}

func (r *replica) crash() {
	if !r.up {
		return
	}
	r.up, r.node, r.transfer = false, nil, nil
	r.sim.tracef("r%d crashed", r.id)
}

func (r *replica) tick() {
	if !r.up {
		return
	}
	r.node.Tick()
	if r.behavior != nil {
		r.behavior.Tick(r)
	}
	r.process()
}

func (r *replica) deliver(b []byte) {
	if !r.up {
		return
	}
	m := &bftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		r.sim.stats.rejected++
		return
	}
	if err := r.sim.checker.Message(m); err != nil {
		r.sim.stats.rejected++
		r.sim.tracef("r%d rejects %T from %d: %v", r.id, m.Body, m.From, err)
		return
	}
	r.node.Step(m)
	r.process()
}

func (r *replica) deliverRequest(b []byte) {
	if !r.up {
		return
	}
	req := &bftpb.Request{}
	if err := proto.Unmarshal(b, req); err != nil {
		return
	}
	if err := r.sim.checker.Request(req); err != nil {
		r.sim.stats.rejected++
		return
	}
	if err := r.node.Propose(req); err != nil {
		r.sim.tracef("r%d: propose ts %d: %v", r.id, req.Timestamp, err)
	}
	r.process()
}

// process drives the node's Ready loop as pkg/bft/replica does.
func (r *replica) process() {
	for r.up && r.node.HasReady() {
		rd := r.node.Ready()
		// 1. Persist (P1).
		if rd.HardState != nil {
			r.hs = proto.Clone(rd.HardState).(*bftpb.HardState)
		}
		for _, rec := range rd.Records {
			r.records[string(rec.Key)] = rec.Record
		}
		for _, del := range rd.Deletes {
			for k := range r.records {
				if k >= string(del.Start) && k < string(del.End) {
					delete(r.records, k)
				}
			}
		}
		// A crash between persisting and sending (pbft.md, simulator list).
		if r.behavior != nil && r.behavior.CrashAfterPersist(r) {
			r.crash()
			r.sim.scheduleRestart(r)
			return
		}
		// 2. Send.
		for _, out := range rd.Messages {
			r.sendOut(out)
		}
		for _, rep := range rd.Replies {
			r.sendReply(rep)
		}
		// 3. Execute (P2).
		for i := range rd.Executions {
			if !r.execute(&rd.Executions[i]) {
				return
			}
		}
		// 4. State transfer (G3).
		if rd.StateTarget != nil {
			r.startTransfer(rd.StateTarget)
		}
		r.node.Advance()
	}
	if r.up && r.node.Stopped() != nil && r.correct() {
		r.sim.violation("replica %d stopped: %v", r.id, r.node.Stopped())
		r.up = false
	}
}

func (r *replica) sendOut(out bft.Outbound) {
	for to := range r.sim.replicas {
		if to == r.id || (!out.Broadcast && to != int(out.To)) {
			continue
		}
		msgs := []*bftpb.Message{out.Msg}
		if r.behavior != nil {
			msgs = r.behavior.Outgoing(r, to, out.Msg)
		}
		for _, m := range msgs {
			b, err := proto.Marshal(m)
			if err != nil {
				panic(err)
			}
			if r.behavior != nil && len(r.sent) < 4096 {
				r.sent = append(r.sent, b)
			}
			r.sim.sendReplicaMsg(r.id, to, b)
		}
	}
}

func (r *replica) sendReply(rep *bftpb.Reply) {
	if r.behavior != nil {
		if rep = r.behavior.Reply(r, rep); rep == nil {
			return
		}
	}
	c, ok := r.sim.clientIndex[bft.ClientID(rep.Client)]
	if !ok {
		return
	}
	rep.Mac = r.sim.keys.ReplyMAC(r.id, bft.ClientID(rep.Client), r.node.Domain().ReplyBytes(rep))
	r.sim.sendReply(c, rep)
}

// execute runs one committed batch and reports it; it returns false if the
// replica must stop processing.
func (r *replica) execute(ex *bft.Execution) bool {
	if ex.Seq != r.app.LastExecuted+1 {
		r.sim.violation("replica %d: execution of seq %d after %d", r.id, ex.Seq, r.app.LastExecuted)
		r.up = false
		return false
	}
	results := r.app.Execute(ex)
	var digest []byte
	if ex.Checkpoint {
		digest = r.app.Digest()
		r.snapshots[ex.Seq] = r.app.Clone()
	}
	if r.correct() {
		r.sim.checkExecution(r, ex, results, digest)
	}
	if err := r.node.Executed(ex.Seq, results, digest); err != nil {
		r.sim.violation("replica %d: Executed(%d): %v", r.id, ex.Seq, err)
		r.up = false
		return false
	}
	for s := range r.snapshots {
		if s < r.node.LowWatermark() {
			delete(r.snapshots, s)
		}
	}
	return true
}

// startTransfer fetches the state of target from peers, one at a time,
// checking each answer against the certified digest.
func (r *replica) startTransfer(t *bft.StateTarget) {
	r.transfer = t
	r.transferTries = 0
	r.sim.tracef("r%d state transfer to %d", r.id, t.Seq)
	d := r.sim.delay()
	if r.sim.opts.TransferDelay > 0 {
		d += r.sim.rng.Int64N(r.sim.opts.TransferDelay)
	}
	r.sim.after(d, func() { r.tryTransfer(t) })
}

func (r *replica) tryTransfer(t *bft.StateTarget) {
	if !r.up || r.transfer != t {
		return
	}
	n := len(r.sim.replicas)
	peer := r.sim.replicas[(r.id+1+r.transferTries)%n]
	r.transferTries++
	if peer.id == r.id {
		r.sim.after(20_000, func() { r.tryTransfer(t) })
		return
	}
	var snap *App
	if s := peer.snapshots[t.Seq]; s != nil && peer.up && !r.sim.linkCut(peer.id, r.id) {
		snap = s.Clone()
		if peer.behavior != nil {
			peer.behavior.Snapshot(peer, snap)
		}
	}
	if snap == nil || !bytes.Equal(snap.Digest(), t.Digest[:]) {
		if snap != nil {
			r.sim.stats.badSnapshots++
			r.sim.tracef("r%d rejects state from r%d: digest mismatch", r.id, peer.id)
		}
		wait := int64(r.sim.delay())
		if r.transferTries%n == 0 {
			wait = 100_000
		}
		r.sim.after(wait, func() { r.tryTransfer(t) })
		return
	}
	r.app = snap
	r.app.LastExecuted = t.Seq
	r.snapshots[t.Seq] = snap.Clone()
	r.executed = make(map[reqKey]bool)
	r.transfer = nil
	r.sim.tracef("r%d installed state %d from r%d", r.id, t.Seq, peer.id)
	if err := r.node.StateInstalled(t.Seq, r.app.ClientRecords()); err != nil {
		r.sim.violation("replica %d: StateInstalled(%d): %v", r.id, t.Seq, err)
		r.up = false
		return
	}
	r.process()
}

func (r *replica) String() string { return fmt.Sprintf("r%d", r.id) }
