package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/bft/transport"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Replica runs one member of a group. Create it with New, run it with Run.
type Replica struct {
	cfg     Config
	log     *slog.Logger
	group   bft.GroupID
	id      bft.ReplicaID
	n       int
	engine  *storage.Engine
	node    *bft.Node
	checker *bft.Checker
	dom     *bft.Domain
	macs    *auth.MACKeys
	peerKey *auth.PeerKeys
	metrics *Metrics
	app     Application

	peers            *transport.Peers
	server           *transport.Server
	transportMetrics *transport.Metrics

	inbox        chan input
	transferDone chan transferResult
	transfer     *bft.StateTarget
	cancelXfer   context.CancelFunc

	snaps    snapshots
	arrivals map[arrivalKey]time.Time
	wg       sync.WaitGroup

	// The executor goroutine runs committed batches off the protocol loop
	// (their application work and fsync overlap with the next round).
	execQ      chan []bft.Execution
	execDone   chan execResult
	execMu     sync.Mutex    // held by the executor per job and by a state install
	jobsQueued uint64        // main loop only
	jobsDone   atomic.Uint64 // jobs the executor finished
	jobSignal  chan struct{} // poked after each job (state install waits on it)

	// corruptChunk, if set (tests), tampers with the state this replica
	// serves, to exercise the requester's fallback to another peer.
	corruptChunk func(*transportpb.StateChunk)

	// ready is closed once Run serves; Addrs are the bound addresses.
	ready                chan struct{}
	peerAddr, clientAddr net.Addr
}

type input struct {
	msg *bftpb.Message
	req *bftpb.Request
}

type arrivalKey struct {
	client string
	ts     uint64
}

// New opens the replica's store, restores its protocol state (P3) and
// prepares its network endpoints. Run starts it.
func New(cfg Config) (*Replica, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	gid, rid, err := cfg.Cluster.ReplicaID(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	core, err := cfg.Cluster.BFTConfig(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	signer, err := auth.NewSigner(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	core.Signer = signer
	core.Logger = slogLogger{cfg.Logger.With("replica", cfg.Name)}
	if cfg.ConfigureCore != nil {
		cfg.ConfigureCore(&core)
	}
	verifier, err := cfg.Cluster.Verifier(gid)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	peerKeys, err := cfg.Cluster.PeerKeys(gid)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	r := &Replica{
		cfg:              cfg,
		log:              cfg.Logger.With("replica", cfg.Name),
		group:            gid,
		id:               rid,
		n:                core.N,
		app:              cfg.App,
		metrics:          NewMetrics(cfg.Registerer),
		transportMetrics: transport.NewMetrics(cfg.Registerer),
		peerKey:          peerKeys,
		inbox:            make(chan input, 4096),
		transferDone:     make(chan transferResult, 1),
		arrivals:         make(map[arrivalKey]time.Time),
		ready:            make(chan struct{}),
		execQ:            make(chan []bft.Execution, execQueue),
		execDone:         make(chan execResult, execQueue+1),
		jobSignal:        make(chan struct{}, 1),
	}
	r.snaps.m = make(map[bft.SeqNum]*snapshotRef)
	r.checker, err = bft.NewChecker(bft.CheckerConfigFrom(core, verifier, r.validatePayload))
	if err != nil {
		return nil, err
	}
	r.dom = r.checker.Domain()
	if r.macs, err = auth.NewMACKeys(cfg.Key, auth.DefaultMACKeysCapacity); err != nil {
		return nil, fmt.Errorf("replica: reply MAC keys: %w", err)
	}
	if r.engine, err = storage.Open(cfg.DataDir, cfg.StorageOptions); err != nil {
		return nil, fmt.Errorf("replica: open store: %w", err)
	}
	restored, err := loadRestored(r.engine)
	if err == nil {
		err = r.app.Restored(r.engine)
	}
	if err == nil {
		r.node, err = bft.NewNode(core, restored)
	}
	if err != nil {
		_ = r.engine.Close()
		return nil, fmt.Errorf("replica: restore %s: %w", cfg.Name, err)
	}
	// Snapshots serve state transfer and live in memory. After a restart the
	// replica can serve its stable checkpoint only if its state is exactly
	// that checkpoint's; otherwise it serves from the next checkpoint on.
	if h := r.node.LowWatermark(); h > 0 && restored.LastExecuted == h {
		snap, err := r.engine.NewSnapshot()
		if err != nil {
			_ = r.engine.Close()
			return nil, fmt.Errorf("replica: snapshot of checkpoint %d: %w", h, err)
		}
		r.snaps.add(h, snap)
	}
	r.metrics.observe(r.node) // gauges show the restored state before Run
	v, vc := r.node.View()
	r.log.Info("replica restored", "view", v, "view_changing", vc, "executed", restored.LastExecuted,
		"stable", r.node.LowWatermark(), "log_records", len(restored.Records))
	return r, nil
}

// validatePayload decodes an envelope and validates every call in it.
func (r *Replica) validatePayload(payload []byte) error {
	calls, err := envelope.DecodeCalls(payload)
	if err != nil {
		return err
	}
	for i, c := range calls {
		if err := r.app.Validate(c); err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
	}
	return nil
}

// Ready is closed when the replica listens; PeerAddr and ClientAddr are
// valid from then on.
func (r *Replica) Ready() <-chan struct{} { return r.ready }

// PeerAddr returns the address the replica listens on for peers.
func (r *Replica) PeerAddr() net.Addr { return r.peerAddr }

// ClientAddr returns the address the replica listens on for clients.
func (r *Replica) ClientAddr() net.Addr { return r.clientAddr }

// Metrics returns the replica's metrics.
func (r *Replica) Metrics() *Metrics { return r.metrics }

// Run serves until ctx is done or a local fault stops the replica, then
// releases everything it holds. It returns nil after ctx ends and the fault
// otherwise.
func (r *Replica) Run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		if r.server != nil {
			r.server.Close()
		}
		if r.peers != nil {
			_ = r.peers.Close()
		}
		r.wg.Wait()
		r.snaps.closeAll()
		if cerr := r.engine.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("replica: close store: %w", cerr)
		}
	}()
	if err := r.startNetwork(ctx); err != nil {
		return err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.runExecutor(ctx)
	}()
	close(r.ready)
	ticker := time.NewTicker(r.cfg.TickInterval)
	defer ticker.Stop()
	if err := r.process(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case in := <-r.inbox:
			r.step(in)
			// Take what else has arrived, so one round persists and sends
			// for many messages (one fsync per round).
			for i := 0; i < 1024; i++ {
				select {
				case in := <-r.inbox:
					r.step(in)
					continue
				default:
				}
				break
			}
		case <-ticker.C:
			r.node.Tick()
		case res := <-r.transferDone:
			if err := r.finishTransfer(res); err != nil {
				return err
			}
		case done := <-r.execDone:
			if err := r.finishExecution(done); err != nil {
				return err
			}
		}
		if err := r.process(ctx); err != nil {
			return err
		}
	}
}

func (r *Replica) startNetwork(ctx context.Context) error {
	g, rep, err := r.cfg.Cluster.Replica(r.cfg.Name)
	if err != nil {
		return err
	}
	peerLis, clientLis := r.cfg.PeerListener, r.cfg.ClientListener
	if peerLis == nil {
		if peerLis, err = net.Listen("tcp", rep.PeerAddr); err != nil {
			return fmt.Errorf("replica: listen for peers on %s: %w", rep.PeerAddr, err)
		}
	}
	if clientLis == nil {
		if clientLis, err = net.Listen("tcp", rep.ClientAddr); err != nil {
			_ = peerLis.Close()
			return fmt.Errorf("replica: listen for clients on %s: %w", rep.ClientAddr, err)
		}
	}
	r.peerAddr, r.clientAddr = peerLis.Addr(), clientLis.Addr()
	addrs := make(map[uint32]string)
	for _, p := range g.ReplicasByIndex() {
		addrs[p.Index] = p.PeerAddr
	}
	identify := r.peerKey.Identify
	clientTLS, err := auth.ClientTLSConfig(r.cfg.Key, r.peerKey.Accept)
	if err != nil {
		return fmt.Errorf("replica: TLS: %w", err)
	}
	serverTLS, err := auth.ServerTLSConfig(r.cfg.Key, r.peerKey.Accept, false)
	if err != nil {
		return fmt.Errorf("replica: TLS: %w", err)
	}
	r.peers, err = transport.NewPeers(ctx, transport.PeersConfig{
		Self: uint32(r.id), Addrs: addrs, PeerIdentity: identify,
		TLS:         clientTLS,
		Interceptor: r.cfg.Interceptor, Logger: r.log,
		Metrics: r.transportMetrics,
	})
	if err != nil {
		return fmt.Errorf("replica: peers: %w", err)
	}
	r.server, err = transport.NewServer(transport.ServerConfig{
		TLS:          serverTLS,
		PeerIdentity: identify, Handler: handler{r}, Logger: r.log,
		Metrics: r.transportMetrics,
	})
	if err != nil {
		return fmt.Errorf("replica: server: %w", err)
	}
	for _, lis := range []net.Listener{peerLis, clientLis} {
		lis := lis
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := r.server.Serve(ctx, lis); err != nil && ctx.Err() == nil {
				r.log.Error("transport server stopped", "addr", lis.Addr(), "err", err)
			}
		}()
	}
	r.log.Info("replica serving", "peer_addr", r.peerAddr, "client_addr", r.clientAddr)
	return nil
}

func (r *Replica) step(in input) {
	if in.msg != nil {
		r.node.Step(in.msg)
		return
	}
	// Arrival times feed the request latency histogram; requests this
	// replica never answers (forwarded, dropped) would pile up, so the map
	// starts over when it reaches its bound.
	if len(r.arrivals) >= 1<<16 {
		clear(r.arrivals)
	}
	k := arrivalKey{string(in.req.Client), in.req.Timestamp}
	if _, ok := r.arrivals[k]; !ok {
		r.arrivals[k] = time.Now()
	}
	if err := r.node.Propose(in.req); err != nil && !errors.Is(err, bft.ErrBusy) {
		r.log.Debug("request refused", "err", err)
	}
}

// process handles every Ready the node has (see the package comment).
func (r *Replica) process(ctx context.Context) error {
	for r.node.HasReady() {
		rd := r.node.Ready()
		if rd.MustSync() {
			start := time.Now()
			if err := persistReady(r.engine, &rd); err != nil {
				return err
			}
			r.metrics.PersistLatency.Observe(time.Since(start).Seconds())
		}
		for _, out := range rd.Messages {
			if out.Broadcast {
				r.peers.Broadcast(out.Msg)
			} else {
				r.peers.Send(uint32(out.To), out.Msg)
			}
		}
		for _, rep := range rd.Replies {
			r.sendReply(rep)
		}
		if len(rd.Executions) > 0 {
			r.jobsQueued++
			select {
			case r.execQ <- rd.Executions:
			case <-ctx.Done():
				return nil
			}
		}
		if rd.StateTarget != nil {
			r.startTransfer(ctx, rd.StateTarget)
		}
		r.node.Advance()
	}
	r.metrics.observe(r.node)
	r.snaps.pruneBelow(r.node.LowWatermark())
	if err := r.node.Stopped(); err != nil {
		return err
	}
	return nil
}

func (r *Replica) sendReply(rep *bftpb.Reply) {
	k := arrivalKey{string(rep.Client), rep.Timestamp}
	if t, ok := r.arrivals[k]; ok {
		r.metrics.RequestLatency.Observe(time.Since(t).Seconds())
		delete(r.arrivals, k)
	}
	key, err := r.macs.ForClient(bft.ClientID(rep.Client))
	if err != nil {
		r.log.Debug("no MAC key for client", "err", err)
		return
	}
	rep.Mac = auth.MAC(key, r.dom.ReplyBytes(rep))
	r.server.SendReply(rep)
}

// execQueue bounds the runs of batches waiting for the executor.
const execQueue = 64

// execResult is what the executor reports for one run of batches.
type execResult struct {
	exs     []bft.Execution
	results [][][]byte
	digests [][]byte // per execution; set at checkpoints
	err     error
}

// runExecutor executes runs of committed batches in order until ctx ends.
func (r *Replica) runExecutor(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case exs := <-r.execQ:
			r.execMu.Lock()
			res := r.execute(exs)
			r.execMu.Unlock()
			r.jobsDone.Add(1)
			select {
			case r.jobSignal <- struct{}{}:
			default:
			}
			// execDone holds more than execQ can, so this never blocks the
			// executor against a main loop blocked on execQ.
			r.execDone <- res
			if res.err != nil {
				return
			}
		}
	}
}

// waitForExecutions waits until the executor finished n jobs and returns
// with execMu held, so nothing executes while the caller changes the state
// (a state install); the caller unlocks it.
func (r *Replica) waitForExecutions(ctx context.Context, n uint64) error {
	for {
		r.execMu.Lock()
		if r.jobsDone.Load() >= n {
			return nil
		}
		r.execMu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.jobSignal:
		}
	}
}

// execute runs committed batches (N7, P2): one indexed batch per run of
// executions, committed with one fsync, split after each checkpoint so
// that the digest and snapshot are those of the checkpoint's state.
func (r *Replica) execute(exs []bft.Execution) (out execResult) {
	start := time.Now()
	out = execResult{exs: exs, results: make([][][]byte, len(exs)), digests: make([][]byte, len(exs))}
	var b *storage.Batch
	defer func() {
		if b != nil {
			_ = b.Close()
		}
	}()
	for i := range exs {
		ex := &exs[i]
		if b == nil {
			b = r.engine.NewIndexedBatch()
		}
		res, err := r.apply(ex, b)
		if err != nil {
			out.err = err
			return out
		}
		out.results[i] = res
		r.metrics.BatchSize.Observe(float64(len(ex.Batch.GetRequests())))
		if !ex.Checkpoint && i != len(exs)-1 {
			continue
		}
		if err := r.engine.Commit(b, true); err != nil {
			out.err = fmt.Errorf("replica: commit executed batches: %w", err)
			return out
		}
		_ = b.Close()
		b = nil
		if ex.Checkpoint {
			sum, err := r.engine.Sum()
			if err != nil {
				out.err = fmt.Errorf("replica: state digest: %w", err)
				return out
			}
			out.digests[i] = sum[:]
			snap, err := r.engine.NewSnapshot()
			if err != nil {
				out.err = fmt.Errorf("replica: checkpoint snapshot: %w", err)
				return out
			}
			r.snaps.add(ex.Seq, snap)
		}
	}
	r.metrics.ExecuteLatency.Observe(time.Since(start).Seconds())
	return out
}

// finishExecution reports a run of executed batches to the node.
func (r *Replica) finishExecution(done execResult) error {
	if done.err != nil {
		return done.err
	}
	for i := range done.exs {
		if err := r.node.Executed(done.exs[i].Seq, done.results[i], done.digests[i]); err != nil {
			return err
		}
	}
	return nil
}

// apply executes one batch into b: the application's calls, then the
// client table and the applied seq. It returns one result per request.
func (r *Replica) apply(ex *bft.Execution, b *storage.Batch) ([][]byte, error) {
	var calls []Call
	counts := make([]int, len(ex.Execute))
	for i, req := range ex.Execute {
		payloads, err := envelope.DecodeCalls(req.Payload)
		if err != nil {
			// Impossible for a request that passed the checker; every correct
			// replica sees the same bytes, so this stays deterministic.
			continue
		}
		counts[i] = len(payloads)
		for j, p := range payloads {
			calls = append(calls, Call{Client: bft.ClientID(req.Client), Timestamp: req.Timestamp, Index: j, Payload: p})
		}
	}
	res, err := r.app.Execute(ex.Seq, calls, b)
	if err != nil {
		return nil, fmt.Errorf("replica: application failed at seq %d: %w", ex.Seq, err)
	}
	if len(res) != len(calls) {
		return nil, fmt.Errorf("replica: application returned %d results for %d calls at seq %d", len(res), len(calls), ex.Seq)
	}
	out := make([][]byte, len(ex.Execute))
	k := 0
	for i, c := range counts {
		out[i] = envelope.EncodeResults(res[k : k+c])
		k += c
	}
	if err := writeClientUpdates(b, ex, out); err != nil {
		return nil, fmt.Errorf("replica: client table: %w", err)
	}
	return out, nil
}

// slogLogger adapts slog to the core's logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Debugf(format string, args ...any) { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s slogLogger) Warnf(format string, args ...any)  { s.l.Warn(fmt.Sprintf(format, args...)) }
