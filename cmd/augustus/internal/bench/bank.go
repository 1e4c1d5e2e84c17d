package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// The bank workload (--workload bank): --items accounts spread over the groups (4-byte item
// keys with the suffix "$acct", so they never meet the A–D items), each
// holding "balance:tag". A transfer reads two accounts in one read-only
// transaction, then moves a random amount between them in one update
// guarded by cmp on both values read (txntest's bank, DESIGN.md §6's
// shape): the total never changes.
//
// The history (--history, --check) is pkg/txn/txntest/history's register
// model: every write's value is its tag, unique per key — in fact unique
// across processes, so that the histories of several bench processes
// against one cluster merge into one checkable history:
//
//   - tag = keyTag << 40 | counter: keyTag is 1 + the writing client
//     key's index in cluster.json (two processes never share a client key,
//     `augustus txn --help`), or 2^16 + 16 bits of its SHA-256 for a key
//     cluster.json does not list; counter is a hybrid clock, max(last + 1,
//     wall-clock microseconds mod 2^40), so a later process with the same
//     key continues above an earlier one;
//   - process ids start at --process-base: the correct callers, then the
//     Byzantine callers, then the --load workers, then the final total
//     read (the run prints the range).
//
// A cmp guard that held is recorded as the read it is (history's doc), so
// every committed transfer is r(a) r(b) w(a) w(b). The --load step records
// its writes as blind writes: it must run before any transfer (of any
// process) starts.

// BankInitial is every account's balance after --load.
const BankInitial = 1000

// bankFlags are the bank's own flags.
type bankFlags struct {
	history      string
	check        bool
	checkHistory []string
	processBase  int
}

func (f *bankFlags) Check(workload string) error {
	switch {
	case f.processBase < 0:
		return fmt.Errorf("--process-base %d: must not be negative", f.processBase)
	case (f.history != "" || f.check) && workload != "bank":
		return fmt.Errorf("--history and --check record the bank workload's register history: use --workload bank")
	}
	return nil
}

// runInstead runs --check-history: check the files and run nothing else.
func (f *bankFlags) runInstead(stdout io.Writer) (bool, error) {
	if len(f.checkHistory) == 0 {
		return false, nil
	}
	return true, runCheckHistory(stdout, f.checkHistory)
}

func init() {
	register(&Spec{
		Names: []string{"bank"}, Order: 40, Family: FamilyTxn,
		Help: `"bank" moves money between --items accounts: read two accounts, then one
update guarded by cmp on both; --load (re)sets every balance; the total is
checked in one transaction at the end; --history FILE writes the run's history
(pkg/txn/txntest/history text format) and --check runs the Elle checker on it;
several bench processes against one cluster take their own client keys and
--process-base, and --check-history FILE (repeated) merges and checks their
files.
`,
		Example: `  augustus bench --dir ./c --workload bank --load --items 100 --history h.txt --check`,
		Flags: func(fs *pflag.FlagSet) WorkloadFlags {
			f := &bankFlags{}
			fs.StringVar(&f.history, "history", "", "bank: write the run's history to this file (history text format)")
			fs.BoolVar(&f.check, "check", false, "bank: check the run's history with the Elle checker (txn.md X1) and fail on any anomaly")
			fs.StringArrayVar(&f.checkHistory, "check-history", nil, "check this history file with the Elle checker and exit, running nothing (repeat the flag to merge several processes' files)")
			fs.IntVar(&f.processBase, "process-base", 0, "bank: the first history process id (give each bench process against one cluster its own range; the run prints the range it used)")
			return f
		},
		newTxn: func(env *txnEnv, _ string, f WorkloadFlags) (txnWorkload, error) {
			return newBank(env, f.(*bankFlags))
		},
	})
}

// bank is the bank workload in one bench process.
type bank struct {
	env      *txnEnv
	f        *bankFlags
	ks       *keySpace
	items    int
	vsize    int
	rec      *history.Recorder // nil: no history kept
	base     int
	ownTag   int64
	tags     *tagSource
	keyTags  map[string]int64 // Byzantine keys' tag bases, by name
	maxProc  int
	loadProc int
}

// errBankNotLoaded: a transfer read an absent account.
var errBankNotLoaded = errors.New("bank: an account does not exist: load the bank first (--load, same --items)")

func newBank(e *txnEnv, f *bankFlags) (*bank, error) {
	s := &bank{env: e, f: f, base: f.processBase, tags: e.tags, keyTags: map[string]int64{}}
	if f.check && !e.t.load {
		return nil, errors.New("--check needs --load in the same run: the history must hold the writes of the initial balances (to check several processes together, merge their --history files with --check-history)")
	}
	if f.history != "" || f.check {
		s.rec = history.NewRecorder(func() int64 { return time.Now().UnixNano() })
	}
	s.ownTag = keyTag(e.c, e.key)
	for _, nk := range e.byzKeys {
		s.keyTags[nk.name] = keyTag(e.c, nk.key)
	}
	s.loadProc = f.processBase + e.o.clients
	s.maxProc = s.loadProc + e.t.loadClients // the final total read
	return s, nil
}

func (s *bank) Setup(runs []RunConfig) error {
	e := s.env
	s.items = e.t.items
	if s.items == 0 {
		s.items = 100
	}
	if s.items < 2 || s.items > e.limits.MaxOps {
		return fmt.Errorf("--items %d: the bank needs 2..%d accounts (its total is read in one transaction)", s.items, e.limits.MaxOps)
	}
	s.vsize = e.o.size
	var err error
	if s.ks, err = newKeySpace(e.pmap, s.items, 0, []byte("$acct")); err != nil {
		return err
	}
	return checkRuns(s.ks, 2, runs) // the two accounts of a transfer
}

func (s *bank) info() txnInfo { return txnInfo{shape: "transfer", items: s.items, valueSize: s.vsize} }

func (s *bank) mixRow(rc RunConfig) string {
	return fmt.Sprintf("%d%% multi-group, %d%% Byzantine callers", rc.MultiGroupPct, rc.ByzantinePct)
}

// sampleOps is a transfer's update of two accounts of one group.
func (s *bank) sampleOps() []txn.Op {
	gen := &txnGen{ks: s.ks, reads: 2, rng: rand.New(rand.NewPCG(1, 2))}
	return s.updateOps(gen.next(), [2][]byte{encodeBankValue(1000, 1<<40), encodeBankValue(1000, 1<<40)}, 1<<40)
}

func (s *bank) NewCaller(rc RunConfig, i int) (Caller, error) {
	return &bankCaller{s: s, idx: i, gen: &txnGen{ks: s.ks, reads: 2, multiPct: rc.MultiGroupPct,
		rng: rand.New(rand.NewPCG(s.env.seed, uint64(rc.MultiGroupPct)<<40|uint64(rc.ByzantinePct)<<32|uint64(i)))}}, nil
}

func (s *bank) Classify(err error) (Class, string) {
	if errors.Is(err, errBankNotLoaded) {
		return Failed, "not_loaded"
	}
	return classifyTxn(err)
}

type bankCaller struct {
	s   *bank
	idx int
	gen *txnGen
}

func (c *bankCaller) Do(ctx context.Context) Outcome {
	gt := c.gen.next()
	return Outcome{Err: c.s.transfer(ctx, c.idx, gt, c.gen.rng), Groups: len(gt.groups)}
}

// keyTag is the tag base of a client key (see the file comment).
func keyTag(c *cluster.Cluster, key ed25519.PrivateKey) int64 {
	pub := auth.EncodePublicKey(auth.PublicKeyOf(key))
	for i, cl := range c.Clients {
		if cl.PublicKey == pub {
			return int64(1 + i)
		}
	}
	h := sha256.Sum256(key.Public().(ed25519.PublicKey))
	return 1<<16 + int64(h[0])<<8 + int64(h[1])
}

// tagSource hands out tags: per key tag base, a hybrid clock (see the
// file comment). Safe for concurrent use.
type tagSource struct {
	mu   sync.Mutex
	last map[int64]int64
}

func newTagSource() *tagSource { return &tagSource{last: map[int64]int64{}} }

const tagCounterBits = 40

// next returns the next tag of key tag base kt.
func (ts *tagSource) next(kt int64) int64 {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := time.Now().UnixMicro() & (1<<tagCounterBits - 1)
	c := max(ts.last[kt]+1, now)
	ts.last[kt] = c
	return kt<<tagCounterBits | c&(1<<tagCounterBits-1)
}

// encodeBankValue writes a balance with the unique tag of the write.
func encodeBankValue(balance int, tag int64) []byte {
	return []byte(strconv.Itoa(balance) + ":" + strconv.FormatInt(tag, 10))
}

func decodeBankValue(v []byte) (balance int, tag int64, err error) {
	a, bs, ok := strings.Cut(string(v), ":")
	if !ok {
		return 0, 0, fmt.Errorf("bank: balance %q without a tag", v)
	}
	if balance, err = strconv.Atoi(a); err != nil {
		return 0, 0, fmt.Errorf("bank: balance %q: %w", v, err)
	}
	if tag, err = strconv.ParseInt(bs, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("bank: balance %q: %w", v, err)
	}
	return balance, tag, nil
}

// outcomeOf classifies a transaction's end for the history: committed,
// certainly not committed (an abort vote, a rejection), or indeterminate.
func outcomeOf(err error) history.Outcome {
	var ab *coord.AbortedError
	switch {
	case err == nil:
		return history.OK
	case errors.As(err, &ab):
		return history.Fail
	default:
		return history.Info
	}
}

func (s *bank) invoke(pid int, mops ...history.MicroOp) history.Handle {
	if s.rec == nil {
		return history.Handle{}
	}
	return s.rec.Invoke(pid, mops...)
}

func (s *bank) complete(h history.Handle, out history.Outcome, obs []history.MicroOp) {
	if s.rec == nil {
		return
	}
	if err := s.rec.Complete(h, out, obs); err != nil {
		panic(fmt.Sprintf("bank history: %v", err)) // a bug of this file
	}
}

// readAccounts reads accounts a and c in one transaction and records it.
func (s *bank) readAccounts(ctx context.Context, pid int, ka, kc []byte) (va, vc []byte, ta, tc int64, err error) {
	h := s.invoke(pid, history.Read(string(ka)), history.Read(string(kc)))
	res, err := s.env.do(ctx, coord.Ops{{Kind: txn.OpRead, Key: ka}, {Kind: txn.OpRead, Key: kc}}, coord.Options{})
	if err != nil {
		s.complete(h, outcomeOf(err), nil)
		return nil, nil, 0, 0, err
	}
	ra, rc := res.Ops[0], res.Ops[1]
	if !ra.Present || !rc.Present {
		obs := []history.MicroOp{history.ReadNil(string(ka)), history.ReadNil(string(kc))}
		if ra.Present || rc.Present {
			s.complete(h, history.Info, nil)
		} else {
			s.complete(h, history.OK, obs)
		}
		return nil, nil, 0, 0, errBankNotLoaded
	}
	_, ta, errA := decodeBankValue(ra.Value)
	_, tc, errC := decodeBankValue(rc.Value)
	if err := errors.Join(errA, errC); err != nil {
		s.complete(h, history.Info, nil)
		return nil, nil, 0, 0, err
	}
	s.complete(h, history.OK, []history.MicroOp{history.ReadValue(string(ka), ta), history.ReadValue(string(kc), tc)})
	return ra.Value, rc.Value, ta, tc, nil
}

// transferOps moves amount from a to c, guarded by cmp on both values read.
func transferOps(ka, kc, va, vc []byte, amount int, tagA, tagC int64) ([]txn.Op, error) {
	ba, _, errA := decodeBankValue(va)
	bc, _, errC := decodeBankValue(vc)
	if err := errors.Join(errA, errC); err != nil {
		return nil, err
	}
	return []txn.Op{
		{Kind: txn.OpCmp, Key: ka, Value: va}, {Kind: txn.OpCmp, Key: kc, Value: vc},
		{Kind: txn.OpWrite, Key: ka, Value: encodeBankValue(ba-amount, tagA)},
		{Kind: txn.OpWrite, Key: kc, Value: encodeBankValue(bc+amount, tagC)},
	}, nil
}

// updateOps are a transfer's update for gt's two accounts (the report's
// call size).
func (s *bank) updateOps(gt genTxn, vals [2][]byte, tag int64) []txn.Op {
	ops, _ := transferOps(s.ks.key(gt.reads[0]), s.ks.key(gt.reads[1]), vals[0], vals[1], 1, tag, tag+1)
	return ops
}

// transfer is one correct caller's transaction: read, then guarded update.
func (s *bank) transfer(ctx context.Context, idx int, gt genTxn, rng *rand.Rand) error {
	pid := s.base + idx
	ka, kc := s.ks.key(gt.reads[0]), s.ks.key(gt.reads[1])
	va, vc, ta, tc, err := s.readAccounts(ctx, pid, ka, kc)
	if err != nil {
		return err
	}
	na, nc := s.tags.next(s.ownTag), s.tags.next(s.ownTag)
	ops, err := transferOps(ka, kc, va, vc, rng.IntN(10), na, nc)
	if err != nil {
		return err
	}
	reads := []history.MicroOp{history.ReadValue(string(ka), ta), history.ReadValue(string(kc), tc)}
	writes := []history.MicroOp{history.Write(string(ka), na), history.Write(string(kc), nc)}
	h := s.invoke(pid, append(append([]history.MicroOp{}, reads...), writes...)...)
	// Not retried by the library: a retry would compare against values
	// that may be stale; the caller starts over with a fresh read.
	_, err = s.env.do(ctx, coord.Ops(ops), coord.Options{MaxRetries: -1})
	out := outcomeOf(err)
	var obs []history.MicroOp
	if out == history.OK {
		obs = append(reads, writes...)
	}
	s.complete(h, out, obs)
	return err
}

// abandonOps builds a Byzantine caller's transfer between accounts of
// two groups: it reads the two accounts (through the bench's correct
// client: reads are not what it abandons) and records the update it will
// abandon as invoked and never completed (indeterminate, since a
// recoverer may commit it).
func (s *bank) abandonOps(ctx context.Context, bc *byzCaller) ([]txn.Op, bool) {
	gen := &txnGen{ks: s.ks, reads: 2, multiPct: 100, rng: bc.rng}
	gt := gen.next()
	ka, kc := s.ks.key(gt.reads[0]), s.ks.key(gt.reads[1])
	rctx, cancel := context.WithTimeout(ctx, s.env.o.callTimeout)
	defer cancel()
	va, vc, _, _, err := s.readAccounts(rctx, s.base+bc.idx, ka, kc)
	if err != nil {
		return nil, false
	}
	kt := s.keyTags[bc.name]
	na, nc := s.tags.next(kt), s.tags.next(kt)
	ops, err := transferOps(ka, kc, va, vc, bc.rng.IntN(10), na, nc)
	if err != nil {
		return nil, false
	}
	s.invoke(s.base+bc.idx, history.Read(string(ka)), history.Read(string(kc)), history.Write(string(ka), na), history.Write(string(kc), nc))
	return ops, true
}

// Load (re)sets every account to BankInitial: per batch of accounts in one
// group, a read of the batch, then one update that writes the present
// accounts and inserts the absent ones (recorded as blind writes).
func (s *bank) Load(ctx context.Context) (*LoadResult, error) {
	e := s.env
	batch := e.loadBatchSize(s.vsize)
	units := loadUnits(s.ks, batch)
	res := &LoadResult{Items: s.ks.items, Batch: batch, InFlight: e.t.loadClients}
	start := time.Now()
	work := make(chan itemSpan, len(units))
	for _, u := range units {
		work <- u
	}
	close(work)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := range e.t.loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				ins, ex, n, err := s.loadUnit(ctx, s.loadProc+w, u)
				mu.Lock()
				res.Inserted += int64(ins)
				res.Existing += int64(ex)
				res.Transactions += int64(n)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.ItemsPerSecond = float64(s.ks.items) / res.Seconds
	res.LoadAvgAfter = loadAvg()
	if firstErr != nil {
		return res, fmt.Errorf("load the bank: %w", firstErr)
	}
	fmt.Fprintf(e.stderr, "bench: bank of %d accounts set to %d each in %.1fs (%d inserted, %d reset)\n",
		s.ks.items, BankInitial, res.Seconds, res.Inserted, res.Existing)
	return res, nil
}

func (s *bank) loadUnit(ctx context.Context, pid int, u itemSpan) (inserted, existing, txns int, err error) {
	for attempt := 0; attempt < loadRetries; attempt++ {
		var reads coord.Ops
		for it := u.lo; it < u.hi; it++ {
			reads = append(reads, txn.Op{Kind: txn.OpRead, Key: s.ks.key(it)})
		}
		txns++
		res, rerr := s.env.do(ctx, reads, coord.Options{})
		if rerr != nil {
			err = rerr
			continue
		}
		var ops coord.Ops
		var mops []history.MicroOp
		ins, ex := 0, 0
		for i, it := range makeRange(u) {
			k := s.ks.key(it)
			tag := s.tags.next(s.ownTag)
			kind := txn.OpInsert
			if res.Ops[i].Present {
				kind, ex = txn.OpWrite, ex+1
			} else {
				ins++
			}
			ops = append(ops, txn.Op{Kind: kind, Key: k, Value: encodeBankValue(BankInitial, tag)})
			mops = append(mops, history.Write(string(k), tag))
		}
		h := s.invoke(pid, mops...)
		txns++
		_, err = s.env.do(ctx, ops, coord.Options{})
		out := outcomeOf(err)
		var obs []history.MicroOp
		if out == history.OK {
			obs = mops
		}
		s.complete(h, out, obs)
		if err == nil {
			return ins, ex, txns, nil
		}
		if ctx.Err() != nil {
			return 0, 0, txns, ctx.Err()
		}
	}
	return 0, 0, txns, fmt.Errorf("accounts %d..%d: no success after %d attempts: %w", u.lo, u.hi-1, loadRetries, err)
}

func makeRange(u itemSpan) []int {
	out := make([]int, 0, u.hi-u.lo)
	for it := u.lo; it < u.hi; it++ {
		out = append(out, it)
	}
	return out
}
