package bft

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// Node is one replica's PBFT state machine. It is not safe for concurrent
// use: the host calls it from one goroutine.
type Node struct {
	cfg  Config
	dom  Domain
	q    quorum.Sizes
	log  Logger
	null Digest // digest of the null (empty) batch

	now uint64 // ticks since start

	// View state (V1–V7).
	view         View
	viewChanging bool // view is the target of a view change in progress
	vc           viewChangeState

	// Checkpoints and watermarks (G1–G3).
	h       SeqNum                // low watermark: last stable checkpoint
	stable  *bftpb.CheckpointCert // its certificate; nil for genesis
	cps     checkpointStore
	ownCps  map[SeqNum]Digest // own state digests at checkpoints above h
	pending *bftpb.CheckpointCert

	// The log: slots in (h, h+L].
	slots map[SeqNum]*slot

	// Execution.
	lastExecuted SeqNum
	execCursor   SeqNum // last seq handed to the host
	execInfo     map[SeqNum]*execRecord
	transfer     *StateTarget
	clients      clientTable

	// Requests held and batching (C2, N1, V1).
	reqs     requestStore
	nextSeq  SeqNum // primary: next seq to assign
	reqTimer timer

	// Catch-up (G3, V5).
	peers      []peerStatus
	lastFetch  uint64 // tick of the last catch-up fetch
	fetchPeer  int
	bodyFetch  map[SeqNum]uint64 // seq -> tick a body fetch was sent
	statusTick uint64

	// Output.
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
	n.null = n.dom.BatchDigest(&bftpb.Batch{})
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
// retransmission.
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
func (n *Node) Step(m *bftpb.Message) {
	if n.stopped != nil || m == nil || int(m.From) >= n.cfg.N || ReplicaID(m.From) == n.cfg.ID {
		n.stats.Dropped[dropInvalid]++
		return
	}
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

// HasReady reports whether Ready would return anything.
func (n *Node) HasReady() bool {
	if n.stopped != nil {
		return false
	}
	return !n.rd.Empty() || n.hsDirty || n.canPropose()
}

// Ready returns what the host must do now (see Ready) and starts a new
// round. The primary cuts batches here, so every request proposed since the
// last round can join one batch.
func (n *Node) Ready() Ready {
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
// in order.
func (n *Node) Advance() {}

func (n *Node) hardState() *bftpb.HardState {
	return &bftpb.HardState{View: uint64(n.view), ViewChanging: n.viewChanging, Stable: n.stable}
}

// fail stops the node after a local fault: it must not continue and risk
// diverging (DESIGN.md §9).
func (n *Node) fail(err error) {
	if n.stopped == nil {
		n.stopped = fmt.Errorf("%w: %v", ErrStopped, err)
		n.log.Warnf("replica %d stopped: %v", n.cfg.ID, err)
	}
}

func (n *Node) primaryOf(v View) ReplicaID { return n.cfg.primaryOf(v) }

func (n *Node) highWatermark() SeqNum { return n.h + n.cfg.LogWindow }

func (n *Node) inWindow(s SeqNum) bool { return s > n.h && s <= n.highWatermark() }

// Output helpers.

func (n *Node) broadcast(m *bftpb.Message) {
	m.From = uint32(n.cfg.ID)
	n.rd.Messages = append(n.rd.Messages, Outbound{Broadcast: true, Msg: m})
}

func (n *Node) send(to ReplicaID, m *bftpb.Message) {
	if to == n.cfg.ID {
		return
	}
	m.From = uint32(n.cfg.ID)
	n.rd.Messages = append(n.rd.Messages, Outbound{To: to, Msg: m})
}

func (n *Node) persist(rec *bftpb.LogRecord) {
	n.rd.Records = append(n.rd.Records, Record{Key: RecordKey(rec), Record: rec})
}

func (n *Node) sign(b []byte) []byte { return n.cfg.Signer.Sign(b) }

// timer is a deadline in ticks.
type timer struct {
	deadline uint64
	active   bool
}

func (t *timer) start(now uint64, d int) { t.deadline, t.active = now+uint64(d), true }
func (t *timer) stop()                   { t.active = false }
func (t *timer) expired(now uint64) bool { return t.active && now >= t.deadline }

func (n *Node) tickTimers() {
	if n.reqTimer.expired(n.now) {
		n.reqTimer.stop()
		if !n.viewChanging {
			n.stats.RequestTimeouts++
			n.log.Debugf("r%d: request timer expired in view %d", n.cfg.ID, n.view)
			n.startViewChange(n.view + 1)
		}
	}
	if n.vc.timer.expired(n.now) {
		n.vc.timer.stop()
		if n.viewChanging {
			n.log.Debugf("r%d: view-change timer expired waiting for view %d", n.cfg.ID, n.view)
			n.startViewChange(n.view + 1)
		}
	}
}

// backoff returns the timeout d doubled once per view change without
// progress (V6), capped.
func (n *Node) backoff(d int) int {
	for i := 0; i < n.vc.attempts && d < n.cfg.MaxViewChangeTimeout; i++ {
		d *= 2
	}
	if d > n.cfg.MaxViewChangeTimeout {
		d = n.cfg.MaxViewChangeTimeout
	}
	return d
}
