package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/bft/transport"
	"github.com/augustus-db/augustus/pkg/bft/transport/transportpb"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Replica runs one member of a group: the event loop of pkg/bft/host fed by
// goroutines — the transport's stream goroutines (which verify), a ticker,
// an executor goroutine and a pool of reply signers. Create it with New,
// run it with Run.
type Replica struct {
	cfg     Config
	log     *slog.Logger
	group   bft.GroupID
	id      bft.ReplicaID
	n       int
	engine  *storage.Engine
	loop    *host.Loop
	checker *bft.Checker
	// checkers hold Checkers over batch verifiers (handler.OnMessages).
	checkers sync.Pool
	dom      *bft.Domain
	macs     *auth.MACKeys
	signer   *auth.Signer
	peerKey  *auth.PeerKeys
	metrics  *Metrics
	app      Application
	// validation caches the application's verdicts on calls: the checker
	// (on the stream goroutines) fills it, execution reads it.
	validation *host.ValidationCache

	peers            *transport.Peers
	server           *transport.Server
	transportMetrics *transport.Metrics

	inbox chan input
	// jobs feeds the executor goroutine, syncs the syncer goroutine; done
	// brings their results back.
	jobs  chan *host.Job
	syncs chan *host.Job
	done  chan *host.JobResult
	// signs feeds the reply signers, each element the replies of one of
	// the loop's rounds; toSign collects the round's (loop goroutine only).
	signs  chan []host.PendingReply
	toSign []host.PendingReply
	// stop is closed when Run ends, so that Submit never blocks forever.
	stop chan struct{}
	wg   sync.WaitGroup

	// corruptChunk, if set (tests), tampers with the state this replica
	// serves, to exercise the requester's fallback to another peer.
	corruptChunk func(*transportpb.StateChunk)
	// breakStateAfter, if set (tests), breaks every state stream this
	// replica serves after that many chunks.
	breakStateAfter int

	// ready is closed once Run serves; Addrs are the bound addresses.
	ready                chan struct{}
	peerAddr, clientAddr net.Addr
}

type input struct {
	msgs []*bftpb.Message
	req  *bftpb.Request
}

// jobQueue bounds the jobs waiting for the executor; a full queue makes the
// loop wait (back-pressure from a slow disk).
const jobQueue = 64

// New opens the replica's store, restores its protocol state (P3) and
// prepares its network endpoints. Run starts it.
func New(cfg Config) (*Replica, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	gid, rid, err := cfg.Cluster.ReplicaID(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	core, err := cfg.Cluster.BFTConfig(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	signer, err := auth.NewSigner(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	core.Signer = signer
	core.Logger = slogLogger{cfg.Logger.With("replica", cfg.Name)}
	if cfg.ConfigureCore != nil {
		cfg.ConfigureCore(&core)
	}
	verifier, err := cfg.Cluster.Verifier(gid)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	peerKeys, err := cfg.Cluster.PeerKeys(gid)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	r := &Replica{
		cfg:              cfg,
		log:              cfg.Logger.With("replica", cfg.Name),
		validation:       host.NewValidationCache(0),
		group:            gid,
		id:               rid,
		n:                core.N,
		app:              cfg.App,
		signer:           signer,
		metrics:          host.NewMetrics(cfg.Registerer),
		transportMetrics: transport.NewMetrics(cfg.Registerer),
		peerKey:          peerKeys,
		inbox:            make(chan input, 4096),
		jobs:             make(chan *host.Job, jobQueue),
		syncs:            make(chan *host.Job, 1),
		done:             make(chan *host.JobResult, jobQueue+2),
		signs:            make(chan []host.PendingReply, 1024),
		stop:             make(chan struct{}),
		ready:            make(chan struct{}),
	}
	r.checker, err = bft.NewChecker(bft.CheckerConfigFrom(core, verifier, r.validatePayload))
	if err != nil {
		return nil, err
	}
	r.dom = r.checker.Domain()
	r.checkers.New = func() any {
		b := verifier.NewBatch()
		return &batchChecker{batch: b, checker: r.checker.WithVerifier(b)}
	}
	if r.macs, err = auth.NewMACKeys(cfg.Key, auth.DefaultMACKeysCapacity); err != nil {
		return nil, fmt.Errorf("replica: reply MAC keys: %w", err)
	}
	opts := cfg.StorageOptions
	// Durability mode "none" (cluster.json "sync"): the log is never
	// synced; everything else, what is sent included, is the same.
	opts.NoSync = opts.NoSync || cfg.Cluster.NoSync()
	if opts.Metrics == nil {
		opts.Metrics = storage.NewMetrics(cfg.Registerer)
	}
	if r.engine, err = storage.Open(cfg.DataDir, opts); err != nil {
		return nil, fmt.Errorf("replica: open store: %w", err)
	}
	r.loop, err = host.New(host.Config{
		Core: core, Engine: r.engine, App: cfg.App, Net: (*replicaNet)(r), Exec: (*executor)(r),
		Metrics: r.metrics, Clock: time.Now, Logger: r.log, Validation: r.validation,
	})
	if err != nil {
		_ = r.engine.Close()
		return nil, fmt.Errorf("replica: restore %s: %w", cfg.Name, err)
	}
	node := r.loop.Node()
	v, vc := node.View()
	r.log.Info("replica restored", "view", v, "view_changing", vc, "executed", node.LastExecuted(),
		"stable", node.LowWatermark(), "sync", cfg.Cluster.Sync)
	return r, nil
}

// validatePayload is the checker's stateless check of a request's payload:
// the envelope must decode; each call's verdict goes into the validation
// cache for execution, where a rejected call fails alone (host/validate.go).
func (r *Replica) validatePayload(payload []byte) error {
	return host.ValidateEnvelope(r.app, r.validation, payload)
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
		close(r.stop)
		r.loop.Close()
		if r.server != nil {
			r.server.Close()
		}
		if r.peers != nil {
			_ = r.peers.Close()
		}
		r.wg.Wait()
		if cerr := r.engine.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("replica: close store: %w", cerr)
		}
	}()
	if err := r.startNetwork(ctx); err != nil {
		return err
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		r.runExecutor(ctx)
	}()
	go func() {
		defer r.wg.Done()
		r.runSyncer(ctx)
	}()
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.runSigner(ctx)
		}()
	}
	close(r.ready)
	ticker := time.NewTicker(r.cfg.TickInterval)
	defer ticker.Stop()
	if err := r.loop.Process(); err != nil {
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
			r.loop.Tick()
		case res := <-r.done:
			if err := r.loop.Finished(res); err != nil {
				return err
			}
		}
		if err := r.loop.Process(); err != nil {
			return err
		}
	}
}

func (r *Replica) step(in input) {
	for _, m := range in.msgs {
		r.loop.Deliver(m)
	}
	if in.req != nil {
		r.loop.Propose(in.req)
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

// replicaNet is the loop's Network: the transport.
type replicaNet Replica

// Send and Broadcast queue; Flush, at the end of each of the loop's
// rounds, sends what was queued for each peer in one write (a PeerBatch).
func (n *replicaNet) Send(to bft.ReplicaID, m *bftpb.Message) { n.peers.Queue(uint32(to), m) }
func (n *replicaNet) Broadcast(m *bftpb.Message)              { n.peers.QueueBroadcast(m) }
func (n *replicaNet) Flush() {
	n.peers.Flush()
	r := (*Replica)(n)
	if len(r.toSign) > 0 {
		// The round's replies to sign go to the signer together, to be
		// signed as one tree.
		select {
		case r.signs <- r.toSign:
		case <-r.stop:
		}
		r.toSign = nil
	}
}

// Reply MACs and sends at once a reply without signatures; one with
// signatures goes to the signer pool, so Ed25519 (≈ 18 µs each) never runs
// on the loop (DESIGN.md §3.1).
func (n *replicaNet) Reply(rep *bftpb.Reply, sign [][]byte) {
	r := (*Replica)(n)
	if sign == nil {
		r.finishReply(rep)
		return
	}
	r.toSign = append(r.toSign, host.PendingReply{Rep: rep, Sign: sign})
}

// runSigner signs replies. It takes every job waiting (up to maxSignBatch
// messages) and signs their messages as one signature tree
// (pkg/bft/auth, sigtree.go): one Ed25519 signature for the votes and
// acknowledgements of a whole executed batch, and one root for the other
// groups to verify instead of one signature per transaction. Under light
// load a job waits for no other: a lone message is signed plain.
func (r *Replica) runSigner(ctx context.Context) {
	var (
		jobs []host.PendingReply
		msgs [][]byte
	)
	for {
		select {
		case <-ctx.Done():
			return
		case js := <-r.signs:
			jobs = append(jobs[:0], js...)
			msgs = host.AppendSignBytes(msgs[:0], js)
		drain:
			for len(msgs) < maxSignBatch {
				select {
				case js := <-r.signs:
					jobs = append(jobs, js...)
					msgs = host.AppendSignBytes(msgs, js)
				default:
					break drain
				}
			}
			host.AttachSignatures(jobs, r.signTrees(msgs))
			for _, j := range jobs {
				r.finishReply(j.Rep)
			}
			clear(jobs)
			clear(msgs)
		}
	}
}

// maxSignBatch bounds the messages of one signature tree (depth 10).
const maxSignBatch = 1024

// signTrees signs msgs in trees of at most maxSignBatch messages (one
// round may bring more).
func (r *Replica) signTrees(msgs [][]byte) [][]byte {
	out := make([][]byte, 0, len(msgs))
	for len(msgs) > 0 {
		n := min(len(msgs), maxSignBatch)
		out = append(out, auth.SignTree(r.signer.Sign, msgs[:n])...)
		r.metrics.ReplySignatures.Inc()
		r.metrics.ReplySignedMessages.Add(float64(n))
		msgs = msgs[n:]
	}
	return out
}

// finishReply adds the MAC under the pairwise key of the client (over the
// signatures too, if any) and sends.
func (r *Replica) finishReply(rep *bftpb.Reply) {
	key, err := r.macs.ForClient(bft.ClientID(rep.Client))
	if err != nil {
		r.log.Debug("no MAC key for client", "err", err)
		return
	}
	rep.Mac = auth.MAC(key, r.dom.ReplyBytes(rep))
	r.server.SendReply(rep)
}

// executor is the loop's Executor: one goroutine runs the execution and
// install jobs in order, another the sync jobs, so a WAL sync (and the
// messages waiting for it) never waits behind an execution or a state
// transfer. The loop has at most one sync job out (host/durable.go).
type executor Replica

func (e *executor) Submit(job *host.Job) {
	q := e.jobs
	if job.Sync {
		q = e.syncs
	}
	select {
	case q <- job:
	case <-e.stop:
	}
}

// runSyncer runs the sync jobs: one WAL sync each, covering every round the
// loop committed before submitting it (group commit).
func (r *Replica) runSyncer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-r.syncs:
			res := r.loop.RunExecutions(job)
			// done has room for it: the executor fills at most jobQueue+1
			// of its places, and one sync job is out at a time.
			select {
			case r.done <- res:
			case <-ctx.Done():
				return
			}
			if res.Err != nil {
				return // a local fault: the loop stops the replica
			}
		}
	}
}

func (r *Replica) runExecutor(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-r.jobs:
			var res *host.JobResult
			if job.Target != nil {
				res = &host.JobResult{Job: job, Err: r.fetchState(job.Ctx, job.Target)}
			} else {
				res = r.loop.RunExecutions(job)
			}
			// done holds more than jobs can, so this never blocks the
			// executor against a loop blocked on Submit.
			select {
			case r.done <- res:
			case <-ctx.Done():
				return
			}
			if res.Err != nil && job.Target == nil {
				return // a local fault: the loop stops the replica
			}
		}
	}
}

// slogLogger adapts slog to the core's logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) Debugf(format string, args ...any) { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s slogLogger) Warnf(format string, args ...any)  { s.l.Warn(fmt.Sprintf(format, args...)) }
