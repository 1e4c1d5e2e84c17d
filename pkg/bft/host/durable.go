package host

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Group commit across the pipeline.
//
// The loop never waits for the disk. Each round's persist (hard state and
// log records, step 1 of Ready) is committed to pebble without sync, and the
// round's messages and replies wait in a queue until a WAL sync covers that
// commit. One sync job is out at a time; while it runs, the loop goes on
// stepping messages and committing rounds, and everything those rounds want
// to send waits for the next sync, which covers all of them at once. So a
// replica under load pays one fsync per sync period, whatever the number of
// rounds, batches and slots in it, and the primary cuts its next batch while
// the previous ones are being persisted.
//
// Why P1 still holds. P1 asks that nothing leaves before the record that
// would let the replica contradict it after a crash is durable. Pebble's WAL
// is one file written in commit order, and a sync makes every byte written
// before it durable (storage.Engine.SyncWAL). An output is queued behind
// every commit the loop made before it — the round's own and all earlier
// ones, which is what Ready promises the record is among — and is released
// only when a sync job submitted after those commits has finished. A crash
// before that loses the commits and the outputs together: the outputs never
// left, so there is nothing to contradict. Outputs leave in the order the
// node made them.
//
// Replies wait like messages. A reply says a batch committed, counting the
// replica's own COMMIT (N6), which it made — and counted — before that
// COMMIT was durable; the reply leaves only once a sync covers the COMMIT
// and the prepared certificate persisted with or before it. With f faulty
// repliers, the f+1 replies a client accepts include a correct replica's,
// and it saw 2f+1 COMMITs, each made durable by its sender before it was
// sent: so at least f+1 correct replicas hold the batch's prepared
// certificate durably, and a view change after any power cuts re-proposes
// it at its seq (V4).
//
// Why P2 still holds, and why executions need no sync before their replies.
// An execution commits the application's writes, the client table and the
// applied seq in one atomic batch (exec.go) without a sync of its own: the
// next sync of the loop (or a checkpoint save, which syncs the WAL) covers
// it, so under load the execution of batch s and the persists of s+1 … s+k
// share one fsync. A power cut can then lose the last executions, replies
// sent or not, but atomically, never part of one: the store comes back at an
// earlier applied seq with its matching client table, and the node executes
// the lost batches again — from its log, or from commit certificates its
// peers hold (G3) — to the same results, since execution is deterministic.
// What a client accepted is decided by durable logs (above), not by the
// executed state: it is never lost, and the replica only redoes work. A
// checkpoint's state is durable before its CHECKPOINT leaves:
// storage.SaveCheckpoint syncs the WAL before the executor reports it. So
// the critical path of a batch holds three syncs, of the PRE-PREPARE, the
// PREPAREs and the COMMITs (pbft.md P1), and no fourth for the execution.
// (The simulator's durability checker, with power cuts that keep only
// synced data, checks that no accepted result is lost.)
//
// What a power cut can lose (durability mode "fsync", the default): rounds
// whose sync had not finished (none of their outputs left), records of
// received messages (rounds that send nothing are never synced for their
// own sake; losing them is the same as never having received the messages),
// and the executions since the last sync, which are redone.
//
// In the "none" durability mode of cluster.json the loop is unchanged: the
// store's WAL syncs are no-ops (storage.Options.NoSync), so a sync job only
// hands the WAL's buffered bytes to the operating system. The node sees the
// same events in the same order and sends exactly the same messages
// (TestSyncNoneSendsWhatFsyncSends); only durability differs: a process
// crash (kill -9) loses nothing, a power cut of a replica can lose the tail
// of its log, after which it may contradict what it sent — it then counts as
// one of the f faulty replicas, so the group survives power cuts of up to f
// replicas at a time, not of the whole group (BFT-SMaRt's default).

// output is a message or a reply waiting for durability.
type output struct {
	msg bft.Outbound
	rep *bftpb.Reply
}

// maxHeldRequests bounds the requests a primary holds while a sync is out;
// beyond it requests go to the node at once (which has its own bound).
const maxHeldRequests = 1 << 14

// durability is the loop's group-commit state.
type durability struct {
	// dirty: a persist was committed since the last sync job was submitted,
	// so an output made now needs a sync not yet submitted.
	dirty bool
	// syncing: a sync job is out; outstanding leave when it finishes.
	syncing     bool
	outstanding []output
	// next wait for the sync after the one out (submitted by startSync).
	next []output
	// held are client requests a primary holds while a sync is out (see
	// holdRequest).
	held []*bftpb.Request
	// syncs counts sync jobs submitted (tests).
	syncs int
}

// persisted notes the commit of a round's persist. Only a persist with
// something of this replica's own — its hard state (view, view change,
// stable checkpoint) or a message it signed — makes later outputs wait for
// its sync. By Ready's contract, what a replica must not contradict is among
// its own records; records of received messages matter for an output only
// through an own record made with or after them (the PREPAREs of a prepared
// certificate are persisted with or before the COMMIT that says so; a
// backup's record of a PRE-PREPARE, with or before its PREPARE), whose sync
// covers them, the WAL being sequential. The received COMMITs that commit a
// batch need no sync here: their senders made them durable before sending
// them (P1), which is what a view change after a power cut relies on.
func (l *Loop) persisted(rd *bft.Ready) {
	if rd.HardState != nil {
		l.dur.dirty = true
		return
	}
	for i := range rd.Records {
		if recordReplica(rd.Records[i].Record) == uint32(l.cfg.Core.ID) {
			l.dur.dirty = true
			return
		}
	}
}

// recordReplica returns the replica that signed a log record's message.
func recordReplica(rec *bftpb.LogRecord) uint32 {
	switch r := rec.Record.(type) {
	case *bftpb.LogRecord_PrePrepare:
		return r.PrePrepare.GetReplica()
	case *bftpb.LogRecord_Prepare:
		return r.Prepare.GetReplica()
	case *bftpb.LogRecord_Commit:
		return r.Commit.GetReplica()
	case *bftpb.LogRecord_ViewChange:
		return r.ViewChange.GetReplica()
	case *bftpb.LogRecord_NewView:
		return r.NewView.GetReplica()
	case *bftpb.LogRecord_Checkpoint:
		return r.Checkpoint.GetReplica()
	}
	return ^uint32(0)
}

// emit sends the outputs of a round, or queues them behind the sync that
// will cover every persist before them (P1).
func (l *Loop) emit(msgs []bft.Outbound, reps []*bftpb.Reply) {
	d := &l.dur
	if !d.dirty && !d.syncing {
		for i := range msgs {
			l.send(msgs[i])
		}
		for _, rep := range reps {
			l.reply(rep)
		}
		return
	}
	// Nothing committed since the sync out was submitted: that sync covers
	// every persist before these outputs.
	q := &d.next
	if !d.dirty {
		q = &d.outstanding
	}
	for i := range msgs {
		*q = append(*q, output{msg: msgs[i]})
	}
	for _, rep := range reps {
		*q = append(*q, output{rep: rep})
	}
}

func (l *Loop) send(out bft.Outbound) {
	if out.Broadcast {
		l.cfg.Net.Broadcast(out.Msg)
	} else {
		l.cfg.Net.Send(out.To, out.Msg)
	}
}

// startSync submits a sync job for the outputs waiting for one, unless one
// is out already (its completion starts the next). Commits with no output
// waiting get no sync of their own: the next one covers them.
func (l *Loop) startSync() {
	d := &l.dur
	if !d.dirty || d.syncing || len(d.next) == 0 {
		return
	}
	d.syncing, d.dirty = true, false
	d.outstanding, d.next = d.next, d.outstanding[:0]
	d.syncs++
	l.cfg.Exec.Submit(&Job{Gen: l.gen, Sync: true})
}

// synced handles a finished sync job: the outputs it covers leave, in
// order, and the requests held during it go to the node, to be cut into the
// next batch. A failed sync is a local fault: the replica stops, since it
// cannot know what of its log is durable (and must not send what is not).
func (l *Loop) synced(res *JobResult) error {
	d := &l.dur
	if !d.syncing {
		return nil // from before a restart of the loop's state: impossible
	}
	if res.Err != nil {
		return fmt.Errorf("host: sync the log: %w", res.Err)
	}
	d.syncing = false
	out := d.outstanding
	for i := range out {
		if out[i].rep != nil {
			l.reply(out[i].rep)
		} else {
			l.send(out[i].msg)
		}
		out[i] = output{}
	}
	d.outstanding = out[:0]
	held := d.held
	for i, r := range held {
		l.propose(r)
		held[i] = nil
	}
	d.held = held[:0]
	return nil
}

// holdRequest holds a client request at the primary while a sync is out,
// and reports whether it did. A batch cut now would wait for the next sync
// anyway (the one out was submitted before it), so cutting it when that
// sync is submitted costs no latency and puts every request that arrived
// during a sync into one batch: under load the group orders fewer, larger
// batches, and pays the per-batch signatures and messages fewer times.
func (l *Loop) holdRequest(r *bftpb.Request) bool {
	d := &l.dur
	if !d.syncing || len(d.held) >= maxHeldRequests || !l.node.IsPrimary() {
		return false
	}
	d.held = append(d.held, r)
	return true
}

// runSync runs a sync job.
func (l *Loop) runSync(job *Job) *JobResult {
	start := l.now()
	err := l.engine.SyncWAL()
	if l.metrics != nil {
		l.observeSince(l.metrics.SyncLatency, start)
	}
	return &JobResult{Job: job, Err: err}
}

// Syncs returns the number of sync jobs the loop submitted.
func (l *Loop) Syncs() int { return l.dur.syncs }
