package bft

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// Node is one replica's PBFT state machine. It is not safe for concurrent
// use: the host calls it from one goroutine.
//
// It performs no I/O. Inputs are Step (verified messages), Propose
// (verified requests), Tick, Executed and StateInstalled; every effect
// accumulates in the next Ready, which the host carries out in the order
// Ready documents (persist, then send, then execute).
type Node struct {
	cfg  Config
	dom  Domain
	q    quorum.Sizes
	log  Logger
	null Digest // digest of the null (empty) batch

	now uint64 // ticks since start

	// View state (V1–V7). view is the current view, or the target of the
	// view change in progress when viewChanging is set; both are in the hard
	// state (P1).
	view         View
	viewChanging bool // view is the target of a view change in progress
	vc           viewChangeState

	// Checkpoints and watermarks (G1–G3). h is the low watermark, the seq of
	// the stable checkpoint, whose certificate is persisted in the hard state
	// (P2); H = h + L. pending is a certificate above h that waits for
	// execution to reach it (see stabilize), so h can lag behind checkpoints
	// the group has made stable.
	h       SeqNum                // low watermark: last stable checkpoint
	stable  *bftpb.CheckpointCert // its certificate; nil for genesis
	cps     checkpointStore
	ownCps  map[SeqNum]Digest // own state digests at checkpoints above h
	pending *bftpb.CheckpointCert

	// The log: slots in (h, h+L]. Nothing outside the window gets a slot,
	// so memory is bounded by L whatever arrives (G2).
	slots map[SeqNum]*slot

	// Execution (N7), asynchronous: batches up to execCursor are handed to
	// the host, batches up to lastExecuted are reported executed and durable
	// (P2); lastExecuted <= execCursor, and execInfo holds what to answer for
	// each batch in between (see tryExecute). transfer is the state transfer
	// in progress (G3): nothing is handed out until it is installed. clients
	// is the client table (C2), ahead of the durable one by the batches
	// handed out and not yet reported.
	lastExecuted SeqNum
	execCursor   SeqNum // last seq handed to the host
	execInfo     map[SeqNum]*execRecord
	transfer     *StateTarget
	clients      clientTable

	// Requests held and batching (C2, N1, V1): the valid requests this
	// replica holds and has not seen executed, the primary's queue, the next
	// seq it will assign (never reused, P3) and the request timer of V1.
	reqs     requestStore
	nextSeq  SeqNum // primary: next seq to assign
	reqTimer timer

	// Catch-up (G3, V5): the peers' last Status hints, the ticks of the last
	// fetches, which rate-limit them, and of the last Status sent.
	peers      []peerStatus
	lastFetch  uint64 // tick of the last catch-up fetch
	fetchPeer  int
	bodyFetch  map[SeqNum]uint64 // seq -> tick a body fetch was sent
	statusTick uint64

	// Output: rd accumulates the next Ready; hsDirty marks a change of the
	// hard state, computed when Ready is called. stopped is the local fault
	// after which the node does nothing (fail).
	rd      Ready
	hsDirty bool
	stats   Stats
	stopped error
}

// Restored is what a host reloads after a restart (P3): the persisted hard
// state and log records, and from the application's store the last
// executed sequence number and the client table.
type Restored struct {
	HardState    *bftpb.HardState
	Records      []*bftpb.LogRecord
	LastExecuted SeqNum
	Clients      []*bftpb.ClientRecord
}

// NewNode creates a replica's state machine. restored is nil for a replica
// that starts from the genesis state.
func NewNode(cfg Config, restored *Restored) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Quorum sizes from n = 3f+1: 2f+1 (any two quorums intersect in f+1
	// replicas, at least one correct), 2f PREPAREs beside the PRE-PREPARE
	// (N4), f+1 for a weak quorum (V7, C3). Validate checked n and f.
	q, _ := quorum.New(cfg.N, cfg.F)
	n := &Node{
		cfg:       cfg,
		dom:       NewDomain(cfg.ClusterID, cfg.Group),
		q:         q,
		log:       cfg.Logger,
		ownCps:    make(map[SeqNum]Digest),
		slots:     make(map[SeqNum]*slot),
		execInfo:  make(map[SeqNum]*execRecord),
		clients:   newClientTable(cfg.ClientWindow),
		reqs:      newRequestStore(),
		peers:     make([]peerStatus, cfg.N),
		bodyFetch: make(map[SeqNum]uint64),
		nextSeq:   1,
	}
	if n.log == nil {
		n.log = nopLogger{}
	}
	// The null batch of V4: a body every replica has.
	n.null = n.dom.BatchDigest(&bftpb.Batch{})
	// Per sender, the L/K checkpoints of the window and two beyond it (G2,
	// G3).
	n.cps = newCheckpointStore(cfg.N, int(cfg.LogWindow/cfg.CheckpointInterval)+2)
	n.vc = newViewChangeState(cfg.N)
	if restored != nil {
		if err := n.restore(restored); err != nil {
			return nil, fmt.Errorf("bft: restore: %w", err)
		}
	}
	return n, nil
}

// ID returns the replica's id.
func (n *Node) ID() ReplicaID { return n.cfg.ID }

// View returns the current view and whether a view change to it is in progress.
func (n *Node) View() (View, bool) { return n.view, n.viewChanging }

// Primary returns the primary of the current view.
func (n *Node) Primary() ReplicaID { return n.cfg.primaryOf(n.view) }

// IsPrimary reports whether this replica is the primary of its view.
func (n *Node) IsPrimary() bool { return n.Primary() == n.cfg.ID }

// LastExecuted returns the last sequence number the host reported executed.
func (n *Node) LastExecuted() SeqNum { return n.lastExecuted }

// Unexecuted reports whether the log holds a batch above the last executed
// sequence number that this replica saw prepared or committed: one that
// will execute here (after a restart, once the retransmitted COMMITs
// arrive; after a view change, re-proposed by the NEW-VIEW, V4). A bare
// PRE-PREPARE does not count: a faulty primary's proposal that never
// prepared may never execute, and need not.
func (n *Node) Unexecuted() bool {
	for s, sl := range n.slots {
		if s <= n.lastExecuted {
			continue
		}
		if sl.committed || sl.prepared != nil {
			return true
		}
	}
	return false
}

// LowWatermark returns h, the seq of the last stable checkpoint.
func (n *Node) LowWatermark() SeqNum { return n.h }

// StableCheckpoint returns the certificate of the last stable checkpoint
// (nil for genesis).
func (n *Node) StableCheckpoint() *bftpb.CheckpointCert { return n.stable }

// Stats returns the node's counters.
func (n *Node) Stats() Stats { return n.stats }

// Stopped returns the local fault that stopped the node, if any.
func (n *Node) Stopped() error { return n.stopped }

// Domain returns the node's signing domain.
func (n *Node) Domain() *Domain { return &n.dom }

// Tick advances the node's clock by one tick: timers, status and
// retransmission. Time is only this count, supplied by the host: the node
// reads no clock, so the simulator controls time (doc.go).
func (n *Node) Tick() {
	if n.stopped != nil {
		return
	}
	n.now++
	n.tickTimers()
	if n.now-n.statusTick >= uint64(n.cfg.StatusInterval) {
		n.statusTick = n.now
		n.periodic()
	}
}

// Step processes a message from another replica. m must have passed
// Checker.Message; Step applies the checks that depend on the node's state
// and drops (and counts) what fails them.
//
// m.From, the sender the transport authenticated, is used only where an
// answer goes back to it (Status, Fetch); every protocol message names its
// signer inside, and the Checker made that the sender. A message claiming
// to come from this replica itself is dropped.
func (n *Node) Step(m *bftpb.Message) {
	// A stopped node takes nothing; the rest cannot come from a correct
	// transport.
	if n.stopped != nil || m == nil || int(m.From) >= n.cfg.N || ReplicaID(m.From) == n.cfg.ID {
		n.stats.Dropped[dropInvalid]++
		return
	}
	// Each handler applies its rule's stateful checks (view, watermarks,
	// duplicates) and drops what fails them. Only onStatus and onFetch take
	// from: whose hint it is and whom to answer.
	from := ReplicaID(m.From)
	switch b := m.Body.(type) {
	case *bftpb.Message_Request:
		n.onRequest(b.Request, true)
	case *bftpb.Message_PrePrepare:
		n.onPrePrepare(b.PrePrepare)
	case *bftpb.Message_Prepare:
		n.onPrepare(b.Prepare)
	case *bftpb.Message_Commit:
		n.onCommit(b.Commit)
	case *bftpb.Message_Checkpoint:
		n.onCheckpoint(b.Checkpoint)
	case *bftpb.Message_ViewChange:
		n.onViewChange(b.ViewChange)
	case *bftpb.Message_NewView:
		n.onNewView(b.NewView)
	case *bftpb.Message_Status:
		n.onStatus(from, b.Status)
	case *bftpb.Message_Fetch:
		n.onFetch(from, b.Fetch)
	case *bftpb.Message_CommittedBatch:
		n.onCommittedBatch(b.CommittedBatch)
	case *bftpb.Message_BatchBody:
		n.onBatchBody(b.BatchBody)
	case *bftpb.Message_CheckpointCert:
		n.onCheckpointCert(b.CheckpointCert)
	default:
		n.stats.Dropped[dropInvalid]++
	}
}

// Propose hands the node a client request that passed Checker.Request. A
// request already executed is answered from the reply cache (C2); a backup
// forwards a new one to the primary and starts its request timer (C4, V1).
func (n *Node) Propose(r *bftpb.Request) error {
	if n.stopped != nil {
		return n.stopped
	}
	return n.onRequest(r, false)
}

// HasReady reports whether Ready would return anything. A primary with
// requests to batch counts, since batches are cut in Ready.
func (n *Node) HasReady() bool {
	if n.stopped != nil {
		return false
	}
	return !n.rd.Empty() || n.hsDirty || n.canPropose()
}

// Ready returns what the host must do now (see Ready) and starts a new
// round. The primary cuts batches here, so every request proposed since the
// last round can join one batch. The hard state is taken last, so it
// reflects every change of the round and is persisted with the round's
// records, before its messages leave (P1).
func (n *Node) Ready() Ready {
	// A stopped node signs nothing new; what the round already holds still
	// goes out, as it was decided before the fault.
	if n.stopped == nil {
		n.propose()
	}
	if n.hsDirty {
		n.rd.HardState = n.hardState()
		n.hsDirty = false
	}
	rd := n.rd
	n.rd = Ready{}
	n.checkInvariants()
	return rd
}

// Advance tells the node the host finished the last Ready. Executions may
// also be reported later (asynchronous execution); the node only needs them
// in order. It has nothing to do: each Ready is handed out whole, and
// executions are reported through Executed.
func (n *Node) Advance() {}

// hardState is what P1 asks to be durable before a message leaves, beside
// the log records: the view, whether a view change to it is in progress,
// and the stable checkpoint certificate (P2).
func (n *Node) hardState() *bftpb.HardState {
	return &bftpb.HardState{View: uint64(n.view), ViewChanging: n.viewChanging, Stable: n.stable}
}

// fail stops the node after a local fault: it must not continue and risk
// diverging (DESIGN.md §9). It is for what at most f faulty replicas cannot
// cause, such as two commit certificates for one seq. Anything f faulty
// replicas can cause is dropped and counted instead (Stats.Dropped), or a
// single faulty peer could stop correct replicas.
func (n *Node) fail(err error) {
	if n.stopped == nil {
		n.stopped = fmt.Errorf("%w: %w", ErrStopped, err)
		n.log.Warnf("replica %d stopped: %v", n.cfg.ID, err)
	}
}

func (n *Node) primaryOf(v View) ReplicaID { return n.cfg.primaryOf(v) }

// highWatermark is H = h + L (G2). Without the bound a faulty primary could
// propose at seqs far ahead, and every message about them would take memory
// no checkpoint ever frees.
func (n *Node) highWatermark() SeqNum { return n.h + n.cfg.LogWindow }

// inWindow reports h < s <= H, where the log takes messages (N2, N4, G2).
func (n *Node) inWindow(s SeqNum) bool { return s > n.h && s <= n.highWatermark() }

// Output helpers. Messages and records only accumulate in the Ready; the
// host persists a round's records before it sends the round's messages (P1),
// so the order of these calls within a round does not matter.

// broadcast sends m to every other replica.
func (n *Node) broadcast(m *bftpb.Message) {
	m.From = uint32(n.cfg.ID)
	n.rd.Messages = append(n.rd.Messages, Outbound{Broadcast: true, Msg: m})
}

// send sends m to one replica; to itself it sends nothing (its own
// messages are recorded directly). From is set here for completeness; the
// receiving transport overwrites it with the sender it authenticated
// (Checker.Message), so it lets a replica claim nothing.
func (n *Node) send(to ReplicaID, m *bftpb.Message) {
	if to == n.cfg.ID {
		return
	}
	m.From = uint32(n.cfg.ID)
	n.rd.Messages = append(n.rd.Messages, Outbound{To: to, Msg: m})
}

// persist adds a log record to the Ready, under its key (RecordKey).
func (n *Node) persist(rec *bftpb.LogRecord) {
	n.rd.Records = append(n.rd.Records, Record{Key: RecordKey(rec), Record: rec})
}

func (n *Node) sign(b []byte) []byte { return n.cfg.Signer.Sign(b) }

// timer is a deadline in ticks; there is no wall clock in the core. Timers
// decide only liveness (when to start a view change), never safety, so a
// replica with a slow or fast tick can delay the group but not split it.
type timer struct {
	deadline uint64
	active   bool
}

func (t *timer) start(now uint64, d int) { t.deadline, t.active = now+uint64(d), true }
func (t *timer) stop()                   { t.active = false }
func (t *timer) expired(now uint64) bool { return t.active && now >= t.deadline }

// tickTimers fires the expired timers: the request timer (V1) and the
// view-change timer T (V6).
func (n *Node) tickTimers() {
	// V1: a request this backup waits for did not execute in time: the
	// primary is faulty, or cannot get through. During a view change the
	// view-change timer governs instead.
	if n.reqTimer.expired(n.now) {
		n.reqTimer.stop()
		if !n.viewChanging {
			n.stats.RequestTimeouts++
			n.log.Debugf("r%d: request timer expired in view %d", n.cfg.ID, n.view)
			n.startViewChange(n.view + 1)
		}
	}
	// V6: no NEW-VIEW within T: move on to the next view, with a doubled
	// timeout.
	if n.vc.timer.expired(n.now) {
		n.vc.timer.stop()
		if n.viewChanging {
			n.log.Debugf("r%d: view-change timer expired waiting for view %d", n.cfg.ID, n.view)
			n.startViewChange(n.view + 1)
		}
	}
}

// backoff returns the timeout d doubled once per view change without
// progress (V6), capped at MaxViewChangeTimeout. Executed resets the count
// when a batch executes a request or answers a pending one. The doubling gives a correct primary time to
// finish a view change when the network is slow, instead of the group
// changing views faster than any can complete.
func (n *Node) backoff(d int) int { return n.backoffFrom(d, n.vc.attempts) }

// backoffFrom doubles d k times, capped at MaxViewChangeTimeout.
func (n *Node) backoffFrom(d, k int) int {
	for i := 0; i < k && d < n.cfg.MaxViewChangeTimeout; i++ {
		d *= 2
	}
	if d > n.cfg.MaxViewChangeTimeout {
		d = n.cfg.MaxViewChangeTimeout
	}
	return d
}
