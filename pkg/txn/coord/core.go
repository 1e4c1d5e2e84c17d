package coord

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Core is the client library's protocol state machine (K1–K5, W1–W3, E8,
// E10, M4, M5). It is driven through Env: entry points (Start, Cancel,
// Startup, Stats) and every callback it hands to Env run on one thread of
// control and never block. It starts no goroutine, reads no clock but
// Env.Now, and draws randomness only from Config.Seed. Not safe for
// concurrent use.
type Core struct {
	cfg    Config
	env    Env
	dom    *txn.Domain
	rng    *rand.Rand
	groups []bft.GroupID // the cluster's groups, increasing

	// The metadata view (K1): the partition map routes; held is the
	// metadata version each group last showed (M2), which every data
	// transaction compares at each involved group.
	pmap        *oracle.Map
	pmapVersion uint64
	held        map[bft.GroupID]uint64
	refreshes   map[bft.GroupID]*refresh

	// Nonces and the watermark (W1, W3): see nonces.go.
	ready      bool
	startup    *startup
	nextNonce  uint64
	watermark  uint64
	unfinished map[uint64]*run
	waiting    []*request // requests waiting for a nonce (window full, or not ready)

	requests   map[Handle]*request
	nextHandle Handle

	// Recoveries of other owners' transactions (K4), by id; recent remembers
	// finished ones for a while so a stream of replies naming the same
	// transaction does not restart its recovery.
	recoveries map[txn.TxnID]*run
	recent     map[txn.TxnID]time.Time
	// waiters are the retries waiting for a running recovery to finish
	// (request.retry), by the recovered transaction's id.
	waiters map[txn.TxnID][]func()
}

// Handle names a transaction started with Start, for Cancel.
type Handle uint64

// NewCore returns a core. Call Startup before (or right after) the first
// Start: transactions wait until it has learned the client's watermark and
// next nonce (W3).
func NewCore(cfg Config, env Env) (*Core, error) {
	if env == nil {
		return nil, fmt.Errorf("%w: no Env", ErrConfig)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c := &Core{
		cfg: cfg, env: env, dom: cfg.Keys.Domain(),
		rng:    rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		groups: cfg.Keys.Groups(),
		pmap:   cfg.Map, pmapVersion: cfg.MapVersion, held: make(map[bft.GroupID]uint64),
		refreshes:  make(map[bft.GroupID]*refresh),
		unfinished: make(map[uint64]*run),
		requests:   make(map[Handle]*request),
		recoveries: make(map[txn.TxnID]*run),
		recent:     make(map[txn.TxnID]time.Time),
		waiters:    make(map[txn.TxnID][]func()),
	}
	for _, g := range c.groups {
		c.held[g] = cfg.MapVersion
	}
	return c, nil
}

// Start starts a transaction with ops (see txn.Builder) and calls done once
// with its result: err is nil when it committed, an *AbortedError when it
// aborted (res is then set too), or another error (rejected by the groups,
// ErrInvalid, ErrNoAdminKey, ErrCanceled). Conflict and stale-metadata
// aborts are retried first (K1, K5). ops are copied: the caller may reuse
// them at once.
func (c *Core) Start(ops []txn.Op, opts Options, done func(*Result, error)) Handle {
	return c.start(cloneOps(ops), opts, done)
}

// start is Start with ops the core may keep.
func (c *Core) start(ops []txn.Op, opts Options, done func(*Result, error)) Handle {
	c.nextHandle++
	h := c.nextHandle
	r := &request{c: c, h: h, ops: ops, opts: opts, done: done, started: c.env.Now()}
	if err := r.check(); err != nil {
		r.complete(nil, err)
		return h
	}
	c.requests[h] = r
	r.launch()
	return h
}

// Cancel tells the core the caller of h is gone: done is called at once with
// ErrCanceled (unless it was called already) and no retry starts. A
// transaction already sent still terminates — its votes are final, its
// locks must go, and the watermark must pass it (K3) — so a cancelled caller
// leaves nothing pending behind.
func (c *Core) Cancel(h Handle) {
	r := c.requests[h]
	if r == nil {
		return
	}
	r.cancel()
}

// Stats is a snapshot of the core's state.
type Stats struct {
	// Ready: the start-up query finished (W3).
	Ready bool
	// NextNonce is the nonce the next transaction takes; Watermark is the
	// watermark it states (W1): every lower nonce is terminated everywhere.
	NextNonce, Watermark uint64
	// Unfinished are the client's transactions not yet terminated and
	// proven everywhere; Waiting the transactions waiting for a nonce.
	Unfinished, Waiting int
	// Requests are the callers' transactions not yet completed.
	Requests int
	// Recoveries are the recoveries running (K4).
	Recoveries int
	// MapVersion is the metadata version of the partition map held (K1).
	MapVersion uint64
}

// Stats returns a snapshot of the core's state.
func (c *Core) Stats() Stats {
	return Stats{
		Ready: c.ready, NextNonce: c.nextNonce, Watermark: c.watermark,
		Unfinished: len(c.unfinished), Waiting: len(c.waiting), Requests: len(c.requests),
		Recoveries: len(c.recoveries), MapVersion: c.pmapVersion,
	}
}

// Idle reports whether the core has nothing left to do: no start-up query
// running, no caller's transaction, none of its own unfinished, no recovery
// running.
func (c *Core) Idle() bool {
	return c.startup == nil && len(c.requests) == 0 && len(c.unfinished) == 0 && len(c.recoveries) == 0 && len(c.waiting) == 0
}

// Map returns the partition map held and its metadata version (K1).
func (c *Core) Map() (*oracle.Map, uint64) { return c.pmap, c.pmapVersion }

// backoff draws the jittered exponential back-off before retry k ≥ 1 (K5):
// uniform in [0, min(max, base·2^(k-1))] ("full jitter": clients that
// conflicted with each other spread out instead of colliding again).
func (c *Core) backoff(k int) time.Duration {
	t := c.cfg.Tuning
	ceil := t.BackoffMax
	if k < 1 {
		k = 1
	}
	if k-1 < 30 {
		if d := t.BackoffBase << (k - 1); d > 0 && d < ceil {
			ceil = d
		}
	}
	return time.Duration(c.rng.Int64N(int64(ceil) + 1))
}

// quorum returns f+1 for group g.
func (c *Core) quorum(g bft.GroupID) int {
	q, _ := c.cfg.Keys.Quorum(g)
	return q
}

// groupSigs turns the signatures the group client returned with a result
// into a certificate part: exactly f+1 (VerifyCertificate wants no more) of
// distinct replicas, in increasing replica order. The group client verified
// each over SignBytes(result) (K2); nil if fewer than f+1 are usable.
func (c *Core) groupSigs(g bft.GroupID, sigs []client.Signed) *txn.GroupSigs {
	q := c.quorum(g)
	out := txn.GroupSigs{Group: g, Sigs: make([]txn.ReplicaSig, 0, q)}
	sorted := slices.Clone(sigs)
	slices.SortFunc(sorted, func(a, b client.Signed) int { return int(a.Replica) - int(b.Replica) })
	for _, s := range sorted {
		if len(out.Sigs) == q {
			break
		}
		if !auth.ValidSignatureSize(len(s.Signature)) {
			continue
		}
		if n := len(out.Sigs); n > 0 && out.Sigs[n-1].Replica == s.Replica {
			continue
		}
		var rs txn.ReplicaSig
		rs.Replica = s.Replica
		rs.Sig = s.Signature
		out.Sigs = append(out.Sigs, rs)
	}
	if len(out.Sigs) < q {
		return nil
	}
	return &out
}

// decode decodes a group's result to a call about transaction id, checking
// that it is about id and g (f+1 matching replies from a group vouch for it;
// anything else means more than f faulty replicas or a broken Env).
func (c *Core) decode(g bft.GroupID, id txn.TxnID, res client.Result) (*txn.Result, error) {
	if res.Err != nil {
		return nil, res.Err
	}
	out, err := txn.DecodeResult(res.Value)
	if err != nil {
		c.anomaly("malformed_result", "group", g, "txn", id, "err", err)
		return nil, fmt.Errorf("%w: group %d: %w", errAnomaly, g, err)
	}
	if out.Kind != txn.ResultQuery && (out.ID != id || out.Group != g) {
		c.anomaly("wrong_result", "group", g, "txn", id, "result", out.String())
		return nil, fmt.Errorf("%w: group %d answered about %s at group %d", errAnomaly, g, out.ID, out.Group)
	}
	return out, nil
}

// errAnomaly marks an answer no correct group gives.
var errAnomaly = errors.New("coord: anomalous answer")

func (c *Core) anomaly(kind string, args ...any) {
	c.cfg.Metrics.anomaly(kind)
	c.cfg.Logger.Warn("coord: "+kind, args...)
}

// noteRecent remembers a finished recovery; entries older than a few grace
// periods are dropped on the way.
func (c *Core) noteRecent(id txn.TxnID) {
	now := c.env.Now()
	horizon := 8 * c.cfg.Tuning.RecoveryGrace
	if len(c.recent) > 256 {
		for k, t := range c.recent {
			if now.Sub(t) > horizon {
				delete(c.recent, k)
			}
		}
	}
	c.recent[id] = now
}

func cloneOps(ops []txn.Op) []txn.Op {
	n := 0
	for i := range ops {
		n += len(ops[i].Key) + len(ops[i].End) + len(ops[i].Value)
	}
	buf := make([]byte, 0, n)
	cp := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		buf = append(buf, b...)
		return buf[len(buf)-len(b) : len(buf) : len(buf)]
	}
	out := make([]txn.Op, len(ops))
	for i := range ops {
		op := ops[i]
		op.Key, op.End, op.Value = cp(op.Key), cp(op.End), cp(op.Value)
		op.Digests = slices.Clone(op.Digests)
		out[i] = op
	}
	return out
}
