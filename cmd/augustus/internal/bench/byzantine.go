package bench

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// Byzantine callers (--byzantine PCT; the paper's Fig. 5, attack (a.2) of
// §3.4): each has its own client key and, like txntest's ByzClient
// "abandon", builds transactions with pkg/txn's constructors and sends each
// to every group it involves through a raw pkg/bft/client per group — in
// its own signed envelopes, so the groups record it as the owner's (T3) —
// collects the votes and never terminates it. As in the paper, Byzantine
// callers send multi-group transactions only, of the workload's shape, and
// keep at most --byz-pending of them unterminated at a time (the paper: one,
// "allowed to submit only one transaction at a time"), and only then send
// the next. A caller learns that this process's correct callers terminated
// one (K4) from their client's observer (recoveryWatch: the harness lets
// the adversary it simulates know at no cost to the cluster, as the
// paper's clients knew); other terminations (by another bench process, or
// a recovery that learned no outcome) it learns by asking its groups (a
// watermark query, W3, which uses no nonce) every --byz-poll (30s). The
// polls are the harness's bookkeeping, not the attack: each is a PBFT call in
// an envelope of its own, and with 96 Byzantine callers polling every 2s they
// cost the correct callers about 5 % of their throughput, as much as the
// abandoned transactions and their recoveries together (measured
// 2026-11-26, docs/benchmarks/txn.md); in a single bench process the
// observer already hears of every recovery, so a poll only serves runs
// where another process recovers. Correct
// callers that conflict with an abandoned transaction are told its
// encoding (E3) and finish it after the recovery grace (K4): the work that
// costs them throughput.
//
// Before and after each run every Byzantine key's leftovers are finished by
// a correct client with that key (coord's start-up, W3: it resumes what the
// key left pending or unproven), so that runs start from a clean cluster
// and a key's window (P nonces, E2) never fills across runs.

// byzRunStats sums the Byzantine callers of one run (warm-up included).
type byzRunStats struct {
	Callers int `json:"callers"`
	// Abandoned transactions, of which CommitVoted got a commit vote from
	// at least one group (so they held locks there until recovered).
	Abandoned   int64 `json:"abandoned"`
	CommitVoted int64 `json:"commit_voted"`
	// SeenTerminated were found terminated in every group by the callers'
	// polls, MeanTerminationMs after their votes.
	SeenTerminated    int64   `json:"seen_terminated"`
	MeanTerminationMs float64 `json:"mean_termination_ms"`
	SendErrors        int64   `json:"send_errors"`
	Polls             int64   `json:"polls"`
	// WindowFull counts callers that stopped because their window (P)
	// would overflow.
	WindowFull int `json:"window_full"`
	// LeftPending were not seen terminated when the run ended; the
	// clean-up finished them, except LeftUnfinished.
	LeftPending    int `json:"left_pending"`
	LeftUnfinished int `json:"left_unfinished"`
}

// byzantineKeys picks n client keys for Byzantine callers: the names of
// --byzantine-clients, else the listed clients other than the bench's own,
// else (open client policy) fresh keys.
func byzantineKeys(c *cluster.Cluster, o *Options, own ed25519.PrivateKey, n int) ([]namedKey, error) {
	if n == 0 {
		return nil, nil
	}
	ownPub := auth.EncodePublicKey(auth.PublicKeyOf(own))
	var names []string
	if o.txn.byzClients != "" {
		for _, s := range strings.Split(o.txn.byzClients, ",") {
			names = append(names, strings.TrimSpace(s))
		}
	} else {
		for _, cl := range c.Clients {
			if cl.PublicKey != ownPub {
				names = append(names, cl.Name)
			}
		}
	}
	var out []namedKey
	for _, name := range names {
		if len(out) == n {
			break
		}
		k, err := cluster.LoadClientKey(o.dir, name)
		if err != nil {
			return nil, fmt.Errorf("Byzantine caller key %q: %w", name, err)
		}
		if auth.EncodePublicKey(auth.PublicKeyOf(k)) == ownPub {
			return nil, fmt.Errorf("--byzantine-clients: %q is the bench's own client key", name)
		}
		out = append(out, namedKey{name: name, key: k})
	}
	for len(out) < n && c.ClientPolicy == cluster.PolicyOpen {
		k, err := auth.GenerateKey()
		if err != nil {
			return nil, err
		}
		out = append(out, namedKey{name: fmt.Sprintf("generated-%d", len(out)), key: k})
	}
	if len(out) < n {
		return nil, fmt.Errorf("--byzantine: %d Byzantine callers need %d client keys of their own, and cluster.json lists %d besides the bench's (augustus init --clients %d, or --byzantine-clients)",
			n, n, len(out), n+1)
	}
	return out, nil
}

// byzCaller is one Byzantine caller.
type byzCaller struct {
	b    *txnEnv
	w    abandoner
	name string
	key  ed25519.PrivateKey
	id   bft.ClientID
	// idx is the caller's index among all the callers of its run: the
	// correct ones come first (the bank's history process ids).
	idx     int
	conns   map[bft.GroupID]*client.Client
	rng     *rand.Rand
	version uint64
	first   uint64 // the first nonce of the run; also the watermark it states
	nonce   uint64
	out     []abandoned
	stats   byzRunStats
	termSum time.Duration
	// every is the poll interval (--byz-poll).
	every time.Duration
	// wake receives the ids of its abandoned transactions the correct
	// callers terminated (recoveryWatch).
	wake chan txn.TxnID
}

// abandoned is a transaction left pending after its votes.
type abandoned struct {
	id     txn.TxnID
	nonce  uint64
	groups []bft.GroupID
	voted  time.Time
}

// recoveryWatch is the correct callers' client's observer (coord.Observer):
// when it decides another owner's transaction (K4), it wakes the Byzantine
// caller that abandoned it. Safe for concurrent use; it never blocks the
// client.
type recoveryWatch struct {
	mu     sync.Mutex
	owners map[txn.TxnID]*byzCaller
}

func newRecoveryWatch() *recoveryWatch {
	return &recoveryWatch{owners: map[txn.TxnID]*byzCaller{}}
}

// watch registers id, abandoned by bc, before it is sent.
func (w *recoveryWatch) watch(id txn.TxnID, bc *byzCaller) {
	w.mu.Lock()
	w.owners[id] = bc
	w.mu.Unlock()
}

// forget drops id (terminated, or the caller is done with it).
func (w *recoveryWatch) forget(id txn.TxnID) {
	w.mu.Lock()
	delete(w.owners, id)
	w.mu.Unlock()
}

func (w *recoveryWatch) Sent(txn.TxnID, *txn.Txn)   {}
func (w *recoveryWatch) Finished(txn.TxnID, uint64) {}
func (w *recoveryWatch) Decided(id txn.TxnID, _ txn.Decision, recovered bool) {
	if !recovered {
		return
	}
	w.mu.Lock()
	bc := w.owners[id]
	delete(w.owners, id)
	w.mu.Unlock()
	if bc == nil {
		return
	}
	select {
	case bc.wake <- id:
	default: // the caller has a wake-up pending already; its poll finds the rest
	}
}

// finishOwner runs a correct client with key until everything the key left
// unfinished (pending, or unproven, W2) is terminated and proven, and
// returns the key's next nonce, the metadata version and what is still
// unfinished.
func (b *txnEnv) finishOwner(ctx context.Context, key ed25519.PrivateKey) (next, version uint64, unfinished int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cl, err := coord.NewClient(ctx, coord.ClientConfig{
		Cluster: b.c, Key: key, Map: b.pmap, GroupTimeout: 500 * time.Millisecond, DrainTimeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(b.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("finish the Byzantine key's transactions: %w", err)
	}
	defer cl.Close()
	for {
		st := cl.Stats()
		if st.Unfinished == 0 || ctx.Err() != nil {
			return st.NextNonce, st.MapVersion, st.Unfinished, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling the client's state
		}
	}
}

// startByzantine prepares n Byzantine callers (history processes after the
// nCorrect correct ones).
func (b *txnEnv) startByzantine(ctx context.Context, w abandoner, n, nCorrect int) ([]*byzCaller, error) {
	var out []*byzCaller
	fail := func(err error) ([]*byzCaller, error) {
		for _, bc := range out {
			bc.close()
		}
		return nil, err
	}
	for j := range n {
		nk := b.byzKeys[j]
		next, version, _, err := b.finishOwner(ctx, nk.key)
		if err != nil {
			return fail(err)
		}
		bc := &byzCaller{b: b, name: nk.name, key: nk.key, id: bft.ClientID(nk.key.Public().(ed25519.PublicKey)),
			idx: nCorrect + j, every: b.t.byzPoll, conns: map[bft.GroupID]*client.Client{}, version: version, first: next, nonce: next,
			wake: make(chan txn.TxnID, 1), w: w, rng: rand.New(rand.NewPCG(b.seed^0xb42, uint64(j)))}
		out = append(out, bc)
		for _, g := range b.c.Groups {
			gc, err := client.New(ctx, client.Config{Cluster: b.c, Group: bft.GroupID(g.ID), Key: nk.key, Timeout: 500 * time.Millisecond,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				return fail(fmt.Errorf("Byzantine caller %s: connect to group %d: %w", nk.name, g.ID, err))
			}
			bc.conns[bft.GroupID(g.ID)] = gc
		}
	}
	return out, nil
}

func (bc *byzCaller) close() {
	for _, gc := range bc.conns {
		_ = gc.Close()
	}
	// What it left pending is the clean-up's (finishOwner), not the
	// correct callers': stop watching it.
	for _, a := range bc.out {
		bc.b.recovered.forget(a.id)
	}
}

// run abandons transactions until ctx ends.
func (bc *byzCaller) run(ctx context.Context) {
	window := bc.b.limits.Window
	for ctx.Err() == nil {
		if len(bc.out) < bc.b.t.byzPending {
			if bc.nonce+1 >= bc.first+window {
				// The groups would abort it beyond the window (E2): the key
				// is spent for this run.
				bc.stats.WindowFull = 1
				<-ctx.Done()
				return
			}
			bc.abandonOne(ctx)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case id := <-bc.wake:
			bc.terminated(id)
		case <-time.After(bc.every):
			bc.poll(ctx)
		}
	}
}

// terminated records that the correct callers terminated the abandoned
// transaction id (recoveryWatch).
func (bc *byzCaller) terminated(id txn.TxnID) {
	bc.keepOut(func(a abandoned) bool { return a.id != id })
}

// keepOut keeps the abandoned transactions pending says are still pending,
// and counts the others as seen terminated by others.
func (bc *byzCaller) keepOut(pending func(abandoned) bool) {
	keep := bc.out[:0]
	for _, a := range bc.out {
		if pending(a) {
			keep = append(keep, a)
			continue
		}
		bc.stats.SeenTerminated++
		bc.termSum += time.Since(a.voted)
		bc.b.recovered.forget(a.id)
	}
	bc.out = keep
}

// abandonOne sends one transaction to every group it involves and leaves
// it there after the votes.
func (bc *byzCaller) abandonOne(ctx context.Context) {
	b := bc.b
	ops, ok := bc.w.abandonOps(ctx, bc)
	if !ok {
		return
	}
	groups := txn.InvolvedGroups(ops, b.pmap)
	gv := make([]txn.GroupVersion, len(groups))
	for i, g := range groups {
		gv[i] = txn.GroupVersion{Group: g, Version: bc.version}
	}
	bld := txn.NewBuilder()
	for _, op := range ops {
		bld.Add(op)
	}
	t, err := bld.Build(txn.Header{Owner: bc.id, Nonce: bc.nonce, Watermark: bc.first}, gv, b.limits)
	if err != nil {
		bc.stats.SendErrors++
		return
	}
	enc := t.Encode()
	id := txn.ID(b.c.ClusterID, enc)
	b.recovered.watch(id, bc)
	call := txn.NewTxnCall(enc, nil)
	bc.nonce++
	var wg sync.WaitGroup
	var commit, failed atomic.Int64
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, b.o.callTimeout)
			defer cancel()
			v, err := bc.conns[g].Invoke(cctx, call)
			if err != nil {
				failed.Add(1)
				return
			}
			if r, err := txn.DecodeResult(v); err == nil && r.Kind == txn.ResultVote && r.Decision == txn.Commit {
				commit.Add(1)
			}
		}()
	}
	wg.Wait()
	bc.stats.Abandoned++
	if commit.Load() > 0 {
		bc.stats.CommitVoted++
	}
	if failed.Load() > 0 {
		bc.stats.SendErrors++
	}
	bc.out = append(bc.out, abandoned{id: id, nonce: t.Nonce, groups: groups, voted: time.Now()})
}

// poll asks the groups of the abandoned transactions whether they are
// terminated there: a record in state terminated, or no record (deleted
// after its termination, W2).
func (bc *byzCaller) poll(ctx context.Context) {
	from := bc.out[0].nonce
	var gs []bft.GroupID
	for _, a := range bc.out {
		from = min(from, a.nonce)
		gs = append(gs, a.groups...)
	}
	slices.Sort(gs)
	gs = slices.Compact(gs)
	// open[g][nonce]: still pending (or unknown) at g.
	open := map[bft.GroupID]map[uint64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := bc.queryGroup(ctx, g, from)
			mu.Lock()
			open[g] = st
			mu.Unlock()
		}()
	}
	wg.Wait()
	bc.stats.Polls++
	bc.keepOut(func(a abandoned) bool {
		for _, g := range a.groups {
			if open[g] == nil || open[g][a.nonce] {
				return true
			}
		}
		return false
	})
}

// queryGroup returns the nonces from `from` that group g does not show
// terminated (nil if the query failed: all unknown). Nonces past a
// truncated reply's last record are unknown too.
func (bc *byzCaller) queryGroup(ctx context.Context, g bft.GroupID, from uint64) map[uint64]bool {
	cctx, cancel := context.WithTimeout(ctx, bc.b.o.callTimeout)
	defer cancel()
	v, err := bc.conns[g].Invoke(cctx, txn.NewQueryCall(from))
	if err != nil {
		return nil
	}
	r, err := txn.DecodeResult(v)
	if err != nil || r.Kind != txn.ResultQuery || r.Query == nil {
		return nil
	}
	open := map[uint64]bool{}
	for _, rec := range r.Query.Records {
		if rec.State != txn.StateTerminated {
			open[rec.Nonce] = true
		}
	}
	if r.Query.More {
		for _, a := range bc.out {
			if a.nonce >= r.Query.Next {
				open[a.nonce] = true
			}
		}
	}
	return open
}

// finishByzantine stops the callers, finishes what they left and sums
// their statistics.
func (b *txnEnv) finishByzantine(ctx context.Context, byzs []*byzCaller) *byzRunStats {
	s := &byzRunStats{Callers: len(byzs)}
	var termSum time.Duration
	for _, bc := range byzs {
		bc.close()
		st := bc.stats
		s.Abandoned += st.Abandoned
		s.CommitVoted += st.CommitVoted
		s.SeenTerminated += st.SeenTerminated
		s.SendErrors += st.SendErrors
		s.Polls += st.Polls
		s.WindowFull += st.WindowFull
		s.LeftPending += len(bc.out)
		termSum += bc.termSum
		if _, _, left, err := b.finishOwner(ctx, bc.key); err != nil || left > 0 {
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(b.stderr, "bench: Byzantine caller %s: clean-up: %v\n", bc.name, err)
			}
			s.LeftUnfinished += max(left, len(bc.out))
		}
	}
	if s.SeenTerminated > 0 {
		s.MeanTerminationMs = float64(termSum.Milliseconds()) / float64(s.SeenTerminated)
	}
	return s
}
