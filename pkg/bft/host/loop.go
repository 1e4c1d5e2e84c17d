package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Network is how the loop talks to the world. Every method returns at once:
// the implementation queues (production: the gRPC transport) or schedules
// (simulation: the seeded network).
type Network interface {
	// Send sends m to replica to.
	Send(to bft.ReplicaID, m *bftpb.Message)
	// Broadcast sends m to every other replica of the group.
	Broadcast(m *bftpb.Message)
	// Reply sends rep to its client. sign is nil, or holds one element per
	// call result of rep: the bytes the application asked this replica to
	// sign for that result (nil: none). The implementation signs them with
	// the replica's key (in parallel, off the loop, in production), sets
	// rep.Signatures and the MAC, and sends (DESIGN.md §3.2).
	Reply(rep *bftpb.Reply, sign [][]byte)
}

// Flusher is a Network that holds what Send and Broadcast hand it until
// Flush: the loop flushes at the end of every Process, so the messages of a
// round (and of every round a sync released) leave together — with
// pkg/bft/transport, one write per peer.
type Flusher interface {
	Flush()
}

// Executor runs the loop's jobs — committed batches to execute and state
// transfers to install — one at a time, in the order submitted, off the
// loop: production runs them on one goroutine; the simulator decides when
// each completes, so execution can lag behind commit by many batches.
// Whatever it runs, it reports with Loop.Finished, on the loop.
//
// An execution job is run with Loop.RunExecutions, and so is a sync job
// (Job.Sync), which may run beside the others — sync jobs need only run in
// the order submitted among themselves. An install job is run by
// fetching the target's state from peers and calling Loop.Install with the
// chunks (again with another peer if one fails), until it succeeds or the
// job's context ends.
type Executor interface {
	Submit(job *Job)
}

// Job is one unit of work for the Executor.
type Job struct {
	// Gen is the loop's transfer generation when the job was made. A state
	// transfer starts a new generation; reports of older jobs are void.
	Gen uint64
	// Executions is set for an execution job: committed batches in order.
	Executions []bft.Execution
	// Target is set for an install job.
	Target *bft.StateTarget
	// Sync is set for a sync job (group commit, durable.go): one WAL sync
	// that makes every persist the loop committed before submitting it
	// durable. It is run with RunExecutions too; a production Executor may
	// run sync jobs beside the others (they only need to run in order
	// among themselves), and its result is never void.
	Sync bool
	// Ctx of an install job ends when a newer target supersedes it or the
	// loop closes.
	Ctx context.Context
}

// JobResult is what the Executor reports for one job.
type JobResult struct {
	Job *Job
	// Results and Digests hold, per execution, the results of its requests
	// and, at checkpoints, the state digest.
	Results [][][]byte
	Digests [][]byte
	// Err is a local fault (a storage error, a failed install other than a
	// cancellation): the replica stops.
	Err error
}

// Config configures a Loop.
type Config struct {
	// Core is the PBFT core's configuration, Signer and Logger included.
	Core   bft.Config
	Engine *storage.Engine
	App    Application
	Net    Network
	Exec   Executor
	// Metrics, if set, receives the loop's metrics.
	Metrics *Metrics
	// Validation caches the application's verdicts on calls (the replica
	// shares it with its checker); nil: a cache of its own.
	Validation *ValidationCache
	// Clock, if set, times persists, executions and request latencies for
	// the metrics. The loop never reads the wall clock itself.
	Clock  func() time.Time
	Logger *slog.Logger
}

// Loop is the event loop of one replica: it owns the bft.Node, the
// application and the replica's store, and is driven by events — a verified
// message (Deliver), a verified client request (Propose), a tick (Tick), a
// finished job (Finished) — each followed by Process, which carries out what
// the node asks for, in the order of bft.Ready (pbft.md P1–P3):
//
//  1. persist the hard state and log records in one commit, without sync;
//  2. hand messages and replies to the Network once a WAL sync covers
//     every persist before them — at once if nothing is pending, else when
//     the sync job that covers them finishes (P1, group commit: durable.go);
//  3. submit committed batches to the Executor (N7, P2);
//  4. start a state transfer, submitting an install job (G3);
//  5. Advance.
//
// Production (pkg/bft/replica) feeds it from goroutines; the simulator
// (pkg/bft/bfttest) feeds it in a seeded order. Both run this code.
//
// A Loop is not safe for concurrent use, except RunExecutions, Install and
// Snapshots, which the Executor and the state-transfer server call from
// their own goroutines.
type Loop struct {
	cfg     Config
	log     *slog.Logger
	node    *bft.Node
	app     Application
	signing Signing
	// validation holds the application's verdicts on calls (validate.go).
	validation *ValidationCache
	engine     *storage.Engine
	metrics    *Metrics
	snaps      *Snapshots

	// gen is the transfer generation. startTransfer increments it, so that
	// the reports of execution jobs submitted before the transfer — which
	// may have run on the state the install replaces — are ignored.
	gen      uint64
	transfer *bft.StateTarget
	cancel   context.CancelFunc // of the install job of transfer
	closed   bool

	arrivals map[arrivalKey]time.Time

	// Group commit (durable.go).
	dur durability
}

type arrivalKey struct {
	client string
	ts     uint64
}

// New restores the replica's protocol state from its store (P3): hard
// state and log records from BFTState, the last executed sequence number
// and the client table from ReplyCache; then it tells the application to
// rebuild its memory (Restored). A replica whose state is exactly its stable
// checkpoint can serve that checkpoint at once.
func New(cfg Config) (*Loop, error) {
	if cfg.Engine == nil || cfg.App == nil || cfg.Net == nil || cfg.Exec == nil {
		return nil, errors.New("host: engine, application, network and executor are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Loop{
		cfg: cfg, log: cfg.Logger, app: cfg.App, engine: cfg.Engine, metrics: cfg.Metrics,
		arrivals: make(map[arrivalKey]time.Time),
	}
	l.signing, _ = cfg.App.(Signing)
	l.validation = cfg.Validation
	if l.validation == nil {
		l.validation = NewValidationCache(0)
	}
	restored, err := loadRestored(cfg.Engine)
	if err != nil {
		return nil, err
	}
	if err := cfg.App.Restored(cfg.Engine); err != nil {
		return nil, fmt.Errorf("host: application restore: %w", err)
	}
	if l.node, err = bft.NewNode(cfg.Core, restored); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if l.snaps, err = loadSnapshots(cfg.Engine, l.node.LowWatermark()); err != nil {
		return nil, fmt.Errorf("host: saved checkpoints: %w", err)
	}
	if l.metrics != nil {
		l.metrics.observe(l.node)
	}
	return l, nil
}

// Node returns the loop's node (read-only use: views, watermarks, stats).
func (l *Loop) Node() *bft.Node { return l.node }

// Snapshots returns the checkpoint snapshots this replica can serve.
func (l *Loop) Snapshots() *Snapshots { return l.snaps }

// Transferring returns the state-transfer target in progress, if any.
func (l *Loop) Transferring() *bft.StateTarget { return l.transfer }

// Deliver steps a message that passed bft.Checker.Message.
func (l *Loop) Deliver(m *bftpb.Message) { l.node.Step(m) }

// Tick advances the node's clock by one tick.
func (l *Loop) Tick() { l.node.Tick() }

// Propose hands the node a client request that passed
// bft.Checker.Request. A request the node cannot take now (its queue is
// full, or it is beyond the client's window) is dropped: the client
// retransmits.
func (l *Loop) Propose(r *bftpb.Request) {
	if l.cfg.Clock != nil {
		// Arrival times feed the request latency histogram; requests this
		// replica never answers (forwarded, dropped) would pile up, so the
		// map starts over when it reaches its bound.
		if len(l.arrivals) >= 1<<16 {
			clear(l.arrivals)
		}
		k := arrivalKey{string(r.Client), r.Timestamp}
		if _, ok := l.arrivals[k]; !ok {
			l.arrivals[k] = l.cfg.Clock()
		}
	}
	if l.holdRequest(r) {
		return
	}
	l.propose(r)
}

func (l *Loop) propose(r *bftpb.Request) {
	if err := l.node.Propose(r); err != nil && !errors.Is(err, bft.ErrBusy) {
		l.log.Debug("request refused", "err", err)
	}
}

// Process carries out every Ready the node has, in order (see Loop), and
// returns a local fault that must stop the replica, if any.
func (l *Loop) Process() error {
	for l.node.HasReady() {
		rd := l.node.Ready()
		if rd.MustSync() {
			start := l.now()
			if err := persistReady(l.engine, &rd); err != nil {
				return err // E12/P1: never send what could not be persisted
			}
			l.observeSince(l.metricPersist(), start)
			l.persisted(&rd)
		}
		// P1: the messages and replies leave once a sync covers this
		// round's persist and every one before it (durable.go).
		l.emit(rd.Messages, rd.Replies)
		if len(rd.Executions) > 0 {
			l.cfg.Exec.Submit(&Job{Gen: l.gen, Executions: rd.Executions})
		}
		if rd.StateTarget != nil {
			l.startTransfer(rd.StateTarget)
		}
		l.node.Advance()
	}
	l.startSync()
	if f, ok := l.cfg.Net.(Flusher); ok {
		f.Flush()
	}
	if l.metrics != nil {
		l.metrics.observe(l.node)
	}
	l.snaps.pruneBelow(l.node.LowWatermark())
	return l.node.Stopped()
}

// startTransfer starts a new transfer generation and submits an install job
// for t, cancelling the install of an older target (a newer target
// supersedes it, G3).
func (l *Loop) startTransfer(t *bft.StateTarget) {
	if l.cancel != nil {
		l.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.gen++
	l.transfer, l.cancel = t, cancel
	l.log.Info("state transfer", "seq", t.Seq, "executed", l.node.LastExecuted())
	l.cfg.Exec.Submit(&Job{Gen: l.gen, Target: t, Ctx: ctx})
}

// Finished reports a job the Executor finished. A job of an older transfer
// generation is void: executions it ran are overwritten by the install that
// followed it, and reporting them would tell the node that batches after
// the installed checkpoint executed when the store no longer holds them.
func (l *Loop) Finished(res *JobResult) error {
	job := res.Job
	if job.Sync {
		// Not subject to the generation: what it makes durable is the
		// protocol log, which a state transfer does not replace.
		return l.synced(res)
	}
	if job.Gen != l.gen {
		return nil
	}
	if job.Target != nil {
		return l.finishInstall(res)
	}
	if res.Err != nil {
		return res.Err
	}
	for i := range job.Executions {
		if err := l.node.Executed(job.Executions[i].Seq, res.Results[i], res.Digests[i]); err != nil {
			return err
		}
	}
	return nil
}

// finishInstall hands an installed checkpoint to the application and the
// node (G3). A failure other than a cancellation is a local fault.
func (l *Loop) finishInstall(res *JobResult) error {
	t := res.Job.Target
	if t != l.transfer {
		return nil // superseded
	}
	l.transfer, l.cancel = nil, nil
	if res.Err != nil {
		if errors.Is(res.Err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("host: state transfer to %d: %w", t.Seq, res.Err)
	}
	applied, err := loadApplied(l.engine)
	if err != nil {
		return err
	}
	if applied != t.Seq {
		return fmt.Errorf("host: installed checkpoint %d holds the state of seq %d", t.Seq, applied)
	}
	clients, err := loadClients(l.engine)
	if err != nil {
		return err
	}
	// E11 (txn.md): the application rebuilds its memory from the installed
	// state before anything executes on it.
	if err := l.app.Restored(l.engine); err != nil {
		return fmt.Errorf("host: application restore after state transfer: %w", err)
	}
	if err := l.node.StateInstalled(t.Seq, clients); err != nil {
		return err
	}
	// The installed state is the stable checkpoint's: serve it from now on.
	if err := l.snaps.save(t.Seq); err != nil {
		return fmt.Errorf("host: save installed checkpoint %d: %w", t.Seq, err)
	}
	if l.metrics != nil {
		l.metrics.stateTransfersOK.Inc()
	}
	l.log.Info("state transfer installed", "seq", t.Seq)
	return nil
}

// Close cancels an install in progress and releases the snapshots. The
// caller stops the Executor and closes the engine.
func (l *Loop) Close() {
	if l.closed {
		return
	}
	l.closed = true
	if l.cancel != nil {
		l.cancel()
	}
	l.snaps.closeAll()
}

// reply hands a reply to the network with the bytes, per call result, that
// the application wants signed (DESIGN.md §3.2, txn.md E9): the runtime
// signs them after execution, and again whenever it re-sends a cached
// reply (possibly in another signature tree than the first time: both
// verify, and clients match replies on results, not signatures).
func (l *Loop) reply(rep *bftpb.Reply) {
	if l.cfg.Clock != nil {
		k := arrivalKey{string(rep.Client), rep.Timestamp}
		if t, ok := l.arrivals[k]; ok {
			if l.metrics != nil {
				l.metrics.RequestLatency.Observe(l.cfg.Clock().Sub(t).Seconds())
			}
			delete(l.arrivals, k)
		}
	}
	l.cfg.Net.Reply(rep, SignBytesOf(l.signing, rep))
}

// SignBytesOf returns, for an OK reply of an application that signs, what
// must be signed per call result (nil if nothing).
func SignBytesOf(s Signing, rep *bftpb.Reply) [][]byte {
	if s == nil || rep.Status != bftpb.ReplyStatus_REPLY_STATUS_OK || len(rep.Result) == 0 {
		return nil
	}
	results, rejected, err := envelope.DecodeOutcomes(rep.Result)
	if err != nil {
		return nil
	}
	var sign [][]byte
	for i, r := range results {
		if rejected[i] != "" {
			continue
		}
		if b := s.SignBytes(r); b != nil {
			if sign == nil {
				sign = make([][]byte, len(results))
			}
			sign[i] = b
		}
	}
	return sign
}

func (l *Loop) now() time.Time {
	if l.cfg.Clock == nil {
		return time.Time{}
	}
	return l.cfg.Clock()
}

func (l *Loop) metricPersist() observer {
	if l.metrics == nil {
		return nil
	}
	return l.metrics.PersistLatency
}

type observer interface{ Observe(float64) }

func (l *Loop) observeSince(o observer, start time.Time) {
	if o != nil && l.cfg.Clock != nil {
		o.Observe(l.cfg.Clock().Sub(start).Seconds())
	}
}
