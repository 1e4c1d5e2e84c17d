package bfttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
)

// SimReplica hosts one replica in the simulation with the production event
// loop (pkg/bft/host), its real application and a real pebble store on a
// crashable in-memory filesystem. The simulator plays the roles that
// goroutines play in production — the network, the executor, the state
// fetcher — and decides when each event happens.
//
// A power cut (crash) keeps only what was synced (vfs.MemFS.CrashClone) and
// throws away the loop; a restart opens the store again and builds a new
// loop from it, exactly as a restarted process does (pbft.md P3).
type SimReplica struct {
	g    *Group
	id   int
	twin *SimReplica
	// side lists the slots a twin instance reaches while the network is
	// chaotic (its own side of the group).
	side     []bool
	instance int

	fs     *vfs.MemFS
	engine *storage.Engine
	loop   *host.Loop
	app    host.Application
	// toSign are the replies of this round waiting for their signatures:
	// Flush signs them as one tree, as production's signer does with the
	// replies waiting for it (pkg/bft/replica).
	toSign []host.PendingReply
	up     bool
	// incarnation counts starts: events scheduled for an earlier
	// incarnation find it changed and do nothing.
	incarnation int
	behavior    Behavior

	// The executor: jobs in order; busy while one runs.
	jobs    []*host.Job
	busy    bool
	lastFin int64 // when the last Finished was delivered (keeps them FIFO)
	// crashAfter, when set during a round, drops every send of the round
	// and crashes the replica once the round is over (a crash between
	// persisting and sending, pbft.md P1).
	crashAfter bool
	// crashClone, if set, is the filesystem the next crash restarts from
	// (taken mid-install).
	crashClone *vfs.MemFS
	// plan decides when this replica crashes (benign faults of correct
	// replicas; nil: never).
	plan *CrashPlan

	// For the checkers: per request, the seq this replica executed it at
	// since its state last moved back (restart, install).
	executed map[reqKey]bft.SeqNum
	// sent keeps this replica's outgoing messages for replay behaviours.
	sent [][]byte
	// received keeps VIEW-CHANGEs and stable certificates it saw, for the
	// valid-but-adversarial behaviours.
	seen seenMessages
}

type reqKey struct {
	client bft.ClientID
	ts     uint64
}

func newSimReplica(g *Group, id, instance int) *SimReplica {
	return &SimReplica{g: g, id: id, instance: instance, fs: vfs.NewCrashableMem()}
}

// ID returns the replica's slot.
func (r *SimReplica) ID() int { return r.id }

// Up reports whether the replica runs.
func (r *SimReplica) Up() bool { return r.up }

// Loop returns the replica's event loop (nil while down).
func (r *SimReplica) Loop() *host.Loop { return r.loop }

// Node returns the replica's node (nil while down).
func (r *SimReplica) Node() *bft.Node {
	if r.loop == nil {
		return nil
	}
	return r.loop.Node()
}

// Engine returns the replica's store (nil while down).
func (r *SimReplica) Engine() *storage.Engine { return r.engine }

// correct reports whether the replica follows the protocol; crashes are
// benign, so a crashing replica must stay safe.
func (r *SimReplica) correct() bool { return r.behavior == nil || r.behavior.Benign() }

func (r *SimReplica) reaches(slot int) bool {
	return r.side == nil || slot == r.id || r.side[slot]
}

func (r *SimReplica) name() string {
	if r.twin != nil {
		return fmt.Sprintf("g%dr%d.%d", r.g.ID, r.id, r.instance)
	}
	return fmt.Sprintf("g%dr%d", r.g.ID, r.id)
}

func (r *SimReplica) start() {
	w := r.g.w
	if r.fs == nil {
		return // shut down
	}
	e, err := storage.Open("replica", storage.Options{FS: r.fs, CacheSize: 1 << 20, MemTableSize: 256 << 10})
	if err != nil {
		w.Violation("%s cannot reopen its store: %v", r.name(), err)
		return
	}
	r.engine = e
	r.loadForCheck() // P1: what it sent survived the crash
	r.app = r.g.newApp()
	loop, err := host.New(host.Config{
		Core: r.g.coreConfig(r.id), Engine: e, App: r.app, Net: (*simNet)(r), Exec: (*simExec)(r),
	})
	if err != nil {
		_ = e.Close()
		r.engine = nil
		w.Violation("%s cannot restart: %v", r.name(), err)
		return
	}
	r.loop, r.up = loop, true
	r.incarnation++
	r.jobs, r.busy, r.crashAfter, r.crashClone = nil, false, false, nil
	r.executed = make(map[reqKey]bft.SeqNum)
	w.Tracef("%s up (executed %d, view %d)", r.name(), loop.Node().LastExecuted(), func() bft.View { v, _ := loop.Node().View(); return v }())
	r.process()
}

// crash cuts the power: the store keeps only what was synced (or, after a
// crash mid-install, what the clone taken then held).
func (r *SimReplica) crash() {
	if !r.up {
		return
	}
	w := r.g.w
	clone := r.crashClone
	if clone == nil {
		clone = r.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: w.rng.IntN(101), RNG: mrand.New(mrand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))})
	}
	if r.busy || len(r.jobs) > 0 {
		r.g.cov.RestartsMidExecution++
	}
	r.g.cov.Crashes++
	r.g.coreStats = addStats(r.g.coreStats, r.loop.Node().Stats())
	r.toSign = nil // unsigned replies die with the process
	r.loop.Close()
	_ = r.engine.Close()
	r.fs, r.engine, r.loop, r.app = clone, nil, nil, nil
	r.up = false
	r.incarnation++
	r.jobs, r.busy, r.crashAfter, r.crashClone = nil, false, false, nil
	w.Tracef("%s crashed", r.name())
}

// shutdown stops the replica for good, releasing its store.
func (r *SimReplica) shutdown() {
	if r.up {
		r.loop.Close()
		_ = r.engine.Close()
	}
	r.up, r.loop, r.engine, r.app = false, nil, nil, nil
	r.incarnation++
	r.fs = nil
}

// restartAfter restarts the replica d microseconds from now.
func (r *SimReplica) restartAfter(d int64) {
	inc := r.incarnation
	r.g.w.After(d, func() {
		if !r.up && r.incarnation == inc {
			r.start()
		}
	})
}

// process runs the loop's rounds, then a crash the round asked for.
func (r *SimReplica) process() {
	if !r.up {
		return
	}
	err := r.loop.Process()
	if err != nil {
		if r.correct() {
			r.g.w.Violation("%s stopped: %v", r.name(), err)
		}
		r.crashAfter = true
	}
	if r.crashAfter {
		r.crash()
		if err == nil {
			r.restartAfter(r.g.w.restartDelay())
		}
	}
}

func (r *SimReplica) tick() {
	if !r.up {
		return
	}
	v0, vc0 := r.loop.Node().View()
	r.loop.Tick()
	if r.behavior != nil {
		r.behavior.Tick(r)
	}
	r.observeViewChange(v0, vc0)
	r.process()
}

func (r *SimReplica) deliver(b []byte) {
	if !r.up {
		return
	}
	m := &bftpb.Message{}
	if err := proto.Unmarshal(b, m); err != nil {
		return
	}
	if err := r.g.checker.Message(m); err != nil {
		r.g.w.Tracef("%s rejects %s from %d: %v", r.name(), bftpb.KindName(m), m.From, err)
		return
	}
	if r.behavior != nil {
		r.behavior.Incoming(r, m)
	}
	r.seen.note(m)
	v0, vc0 := r.loop.Node().View()
	r.loop.Deliver(m)
	r.noteAccepted(m, v0, vc0)
	r.observeViewChange(v0, vc0)
	r.process()
}

func (r *SimReplica) deliverRequest(b []byte) {
	if !r.up {
		return
	}
	req := &bftpb.Request{}
	if err := proto.Unmarshal(b, req); err != nil {
		return
	}
	if err := r.g.checker.Request(req); err != nil {
		// An error reply, never silence (DESIGN.md §3.2), as the production
		// handler answers.
		if len(req.Client) == 32 {
			(*simNet)(r).Reply(host.Rejection(r.g.dom, bft.ReplicaID(r.id), req, err), nil)
		}
		return
	}
	r.loop.Propose(req)
	r.process()
}

// observeViewChange counts view changes that start while a state transfer
// is in progress (coverage).
func (r *SimReplica) observeViewChange(v0 bft.View, vc0 bool) {
	if r.loop == nil {
		return
	}
	v, vc := r.loop.Node().View()
	if vc && (!vc0 || v != v0) && r.loop.Transferring() != nil {
		r.g.cov.ViewChangesDuringTransfer++
	}
}

// simNet is the loop's Network in the simulation.
type simNet SimReplica

func (n *simNet) r() *SimReplica { return (*SimReplica)(n) }

func (n *simNet) Send(to bft.ReplicaID, m *bftpb.Message) { n.sendTo(int(to), m) }

func (n *simNet) Broadcast(m *bftpb.Message) {
	for to := 0; to < n.g.N; to++ {
		if to != n.id {
			n.sendTo(to, m)
		}
	}
}

func (n *simNet) sendTo(to int, m *bftpb.Message) {
	r := n.r()
	if !r.crashAfter && r.plan != nil && r.plan.crashBeforeSend(r) {
		// Everything of this round is persisted; nothing has left yet.
		r.crashAfter = true
		r.g.cov.CrashesBetweenPersistAndSend++
	}
	if r.crashAfter || !r.up {
		return
	}
	r.noteSent(m)
	msgs := []*bftpb.Message{m}
	if r.behavior != nil {
		msgs = r.behavior.Outgoing(r, to, m)
	}
	for _, out := range msgs {
		b, err := proto.Marshal(out)
		if err != nil {
			panic(err)
		}
		if r.behavior != nil && len(r.sent) < 4096 {
			r.sent = append(r.sent, b)
		}
		if r.twin != nil {
			r.g.cov.noteTwin(r, out)
		}
		r.g.sendReplicaMsg(r, to, b)
	}
}

// Reply signs what the application asked to have signed, MACs and sends.
func (n *simNet) Reply(rep *bftpb.Reply, sign [][]byte) {
	r := n.r()
	if r.crashAfter || !r.up {
		return
	}
	if r.behavior != nil {
		orig := rep.Result
		if rep = r.behavior.Reply(r, rep); rep == nil {
			return
		}
		// A Byzantine replica signs what it sends: a changed result gets the
		// signatures the application asks of it, unless the behaviour signs
		// something else on purpose.
		if !bytes.Equal(orig, rep.Result) {
			signing, _ := r.app.(host.Signing)
			sign = host.SignBytesOf(signing, rep)
		}
		if t, ok := r.behavior.(SignTamperer); ok {
			sign = t.TamperSign(r, rep, sign)
		}
	}
	if sign != nil {
		r.toSign = append(r.toSign, host.PendingReply{Rep: rep, Sign: sign})
		return
	}
	n.sendReply(rep)
}

// Flush, at the end of each of the loop's rounds, signs the round's replies
// as one signature tree (pkg/bft/auth, sigtree.go) and sends them.
func (n *simNet) Flush() {
	r := n.r()
	if r.crashAfter || !r.up {
		// A crash in this round: as in production, where the signer may
		// not have sent them, the replies are lost.
		r.toSign = r.toSign[:0]
		return
	}
	if len(r.toSign) == 0 {
		return
	}
	msgs := host.AppendSignBytes(nil, r.toSign)
	sigs := auth.SignTree(r.g.Keys.ReplicaSigner(r.id).Sign, msgs)
	if len(msgs) > 1 {
		r.g.cov.TreeSignedReplies += uint64(len(r.toSign))
	}
	if t, ok := r.behavior.(TreeTamperer); ok {
		t.TamperTree(r, sigs)
	}
	host.AttachSignatures(r.toSign, sigs)
	for _, p := range r.toSign {
		n.sendReply(p.Rep)
	}
	r.toSign = r.toSign[:0]
}

func (n *simNet) sendReply(rep *bftpb.Reply) {
	r := n.r()
	rep.Mac = nil
	rep.Mac = r.g.Keys.ReplyMAC(r.id, bft.ClientID(rep.Client), r.g.dom.ReplyBytes(rep))
	r.g.sendReply(rep)
}

// simExec is the loop's Executor in the simulation: the seeded scheduler
// decides when each job runs, so execution can lag behind commit by many
// batches, and when each result reaches the loop.
type simExec SimReplica

func (e *simExec) Submit(job *host.Job) {
	r := (*SimReplica)(e)
	if r.crashAfter || !r.up {
		return
	}
	if job.Sync {
		r.runSync(job)
		return
	}
	r.jobs = append(r.jobs, job)
	if !r.busy {
		r.nextJob()
	}
}

func (r *SimReplica) nextJob() {
	if len(r.jobs) == 0 {
		r.busy = false
		return
	}
	r.busy = true
	job := r.jobs[0]
	r.jobs = r.jobs[1:]
	inc := r.incarnation
	r.g.w.After(r.g.w.execDelay(), func() {
		if r.incarnation != inc || !r.up {
			return
		}
		if job.Target != nil {
			r.installAttempt(job, inc, 0)
			return
		}
		res := r.loop.RunExecutions(job)
		if res.Err == nil {
			r.checkExecutions(job, res)
		}
		if r.plan != nil && r.plan.crashMidExecution(r) {
			// The batches are committed to the store; the loop never hears.
			r.g.cov.CrashesMidExecution++
			r.crash()
			r.restartAfter(r.g.w.restartDelay())
			return
		}
		r.finish(res, inc)
		r.nextJob()
	})
}

// runSync runs a sync job (group commit, host/durable.go) beside the
// execution queue, as production's syncer goroutine does: the WAL sync
// happens when the scheduler says, and the loop hears of it after the
// results delivered before. The loop has one sync out at a time, so they
// stay in order. (Run in the execution queue, a sync would wait behind an
// install that waits for messages the sync holds back.)
func (r *SimReplica) runSync(job *host.Job) {
	w := r.g.w
	inc := r.incarnation
	var d int64 // scenario tests (Env): syncs complete at once
	if w.manual == nil {
		d = w.rng.Int64N(2000) // an fsync: up to 2 ms
		if w.rng.IntN(16) == 0 {
			d = w.rng.Int64N(50_000) // a slow disk
		}
	}
	w.After(d, func() {
		if r.incarnation != inc || !r.up {
			return
		}
		r.finish(r.loop.RunExecutions(job), inc)
	})
}

// finish delivers a job's result to the loop, after the results delivered
// before it (a channel in production).
func (r *SimReplica) finish(res *host.JobResult, inc int) {
	w := r.g.w
	at := w.now
	if w.execLag > 0 {
		at += w.rng.Int64N(1000)
	}
	if at < r.lastFin {
		at = r.lastFin
	}
	r.lastFin = at
	w.At(at, func() {
		if r.incarnation != inc || !r.up {
			return
		}
		if err := r.loop.Finished(res); err != nil {
			if r.correct() {
				w.Violation("%s: %v", r.name(), err)
			}
			r.crashAfter = true
		}
		if res.Job.Target != nil && res.Err == nil {
			r.g.cov.Installs++
			r.executed = make(map[reqKey]bft.SeqNum)
		}
		r.process()
	})
}

// installAttempt fetches the target's state from one peer (they take turns)
// and installs it; a peer that is down, cut off, has no snapshot or serves
// bad state is skipped and the next one tried later.
func (r *SimReplica) installAttempt(job *host.Job, inc, try int) {
	w := r.g.w
	if job.Ctx.Err() != nil {
		r.finish(&host.JobResult{Job: job, Err: job.Ctx.Err()}, inc)
		r.nextJob()
		return
	}
	if r.loop.Node() != nil {
		if v, vc := r.loop.Node().View(); vc {
			_ = v
			r.g.cov.TransfersDuringViewChange++
		}
	}
	t := job.Target
	peerSlot := (r.id + 1 + try) % r.g.N
	var chunks []storage.Chunk
	var from *SimReplica
	for _, p := range r.g.targets(r.id, peerSlot) {
		if p != r && p.up && !w.LinkCut(r.g.ID, p.id, r.id) {
			if c := p.serveState(t.Seq); c != nil {
				chunks, from = c, p
				break
			}
		}
	}
	retry := func() {
		d := w.Delay()
		if (try+1)%r.g.N == 0 {
			d = 100_000
		}
		w.After(d, func() {
			if r.incarnation == inc && r.up {
				r.installAttempt(job, inc, try+1)
			}
		})
	}
	if chunks == nil {
		retry()
		return
	}
	cutAt := -1
	if r.plan != nil && r.plan.crashMidInstall(r) {
		cutAt = w.rng.IntN(len(chunks) + 1)
	}
	i := 0
	next := func() (storage.Chunk, error) {
		if i == cutAt {
			r.crashClone = r.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: w.rng.IntN(101), RNG: mrand.New(mrand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))})
		}
		if i == len(chunks) {
			return storage.Chunk{}, io.EOF
		}
		c := chunks[i]
		i++
		return c, nil
	}
	err := r.loop.Install(job.Ctx, t, next)
	if cutAt >= 0 {
		if r.crashClone == nil {
			r.crashClone = r.fs.CrashClone(vfs.CrashCloneCfg{})
		}
		r.g.cov.CrashesMidInstall++
		r.crash()
		r.restartAfter(w.restartDelay())
		return
	}
	switch {
	case err == nil:
		w.Tracef("%s installed state %d from %s", r.name(), t.Seq, from.name())
		r.finish(&host.JobResult{Job: job}, inc)
		r.nextJob()
	case errors.Is(err, context.Canceled):
		r.finish(&host.JobResult{Job: job, Err: err}, inc)
		r.nextJob()
	case errors.Is(err, storage.ErrDigestMismatch) || errors.Is(err, storage.ErrInvalidChunk) || errors.Is(err, storage.ErrChunkOrder):
		w.badSnapshots++
		w.Tracef("%s rejects state %d from %s: %v", r.name(), t.Seq, from.name(), err)
		retry()
	default:
		// The store failed under a correct install: a local fault.
		r.finish(&host.JobResult{Job: job, Err: err}, inc)
		r.nextJob()
	}
}

// serveState exports the snapshot of checkpoint seq in small chunks (so
// installs span many), as this replica's state-transfer server would.
func (r *SimReplica) serveState(seq bft.SeqNum) []storage.Chunk {
	snaps := r.loop.Snapshots()
	ref := snaps.Acquire(seq)
	if ref == nil {
		return nil
	}
	defer snaps.Release(ref)
	var chunks []storage.Chunk
	if err := ref.Snap.Export(context.Background(), 4096, func(c storage.Chunk) error {
		chunks = append(chunks, c.Clone())
		return nil
	}); err != nil {
		return nil
	}
	if r.behavior != nil {
		chunks = r.behavior.Snapshot(r, chunks)
	}
	return chunks
}

func (r *SimReplica) describe() string {
	if !r.up {
		return r.name() + " down"
	}
	n := r.loop.Node()
	v, vc := n.View()
	return fmt.Sprintf("%s view %d changing=%v h=%d exec=%d", r.name(), v, vc, n.LowWatermark(), n.LastExecuted())
}

// simTime converts simulated microseconds to a time.Time for the client.
func simTime(us int64) time.Time { return time.Unix(1_700_000_000, us*1000) }

// SimTime converts simulated microseconds to the time.Time the simulated
// clients see.
func SimTime(us int64) time.Time { return simTime(us) }

// Tick ticks the replica (its node's clock and its behaviour).
func (r *SimReplica) Tick() { r.tick() }

// SignTamperer is a Behavior that also chooses what its replica signs in a
// reply (signatures on the wrong vote, txn.md's Byzantine replicas).
type SignTamperer interface {
	TamperSign(r *SimReplica, rep *bftpb.Reply, sign [][]byte) [][]byte
}

// TreeTamperer is a Behavior that also changes its replica's reply
// signatures once they are made (one per message signed this round, in
// order): forged paths, one message's signature for another.
type TreeTamperer interface {
	TamperTree(r *SimReplica, sigs [][]byte)
}

// App returns the replica's application (nil while down).
func (r *SimReplica) App() host.Application { return r.app }

// Group returns the replica's group.
func (r *SimReplica) Group() *Group { return r.g }

// World returns the group's world.
func (g *Group) World() *World { return g.w }

// Correct reports whether the replica follows the protocol (crashes are
// benign).
func (r *SimReplica) Correct() bool { return r.correct() }

// Idle reports whether its executor has nothing to run.
func (r *SimReplica) Idle() bool { return !r.busy && len(r.jobs) == 0 }

// SetCrashPlan makes the replica crash and restart by plan (a correct
// replica stays correct: crashes are benign) and schedules its plain
// crashes.
func (r *SimReplica) SetCrashPlan(p CrashPlan) {
	r.plan = &p
	p.schedule(r)
}
