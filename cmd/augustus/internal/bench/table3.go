package bench

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/spf13/pflag"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// Workloads A, B, C and D: the paper's Table 3 micro-benchmarks (issue
// 15):
//
//	type  reads  writes  key  value   items (paper)
//	A     4      4       4 B  4 B     3M
//	B     2      2       4 B  1 KiB   1M
//	C     8      0       4 B  4 B     3M
//	D     4      0       4 B  1 KiB   1M
//
// Keys are 4 bytes, spread evenly over the key space above the reserved
// metadata prefix (0x00), so that a range map — what `augustus init --groups
// N` writes, oracle.FromCluster reads — gives every group an equal,
// contiguous slice of the items. A multi-group transaction involves exactly
// two groups, as in the paper ("multi-partition transactions involved two
// partitions"), with its reads and its writes dealt alternately to them, so
// that each group of an update transaction gets a write.
//
// Two shapes (--shape):
//   - "paper" (the default): Table 3 exactly, one transaction of `reads`
//     read operations and `writes` write operations; the values written are
//     fresh. One round trip; a write of an absent item aborts ("not found",
//     so the database must be loaded first).
//   - "guarded": the BFT Derby shape (DESIGN.md §6): one read-only
//     transaction reads every item, then one update transaction writes the
//     `writes` items guarded by cmp on the values read (it aborts with
//     "comparison failed" if one changed in between). The pair counts as one
//     transaction in the throughput.

// Shapes of --shape.
const (
	shapePaper   = "paper"
	shapeGuarded = "guarded"
)

// txnShape is one row of Table 3.
type txnShape struct {
	name          string
	reads, writes int
	valueSize     int
	paperItems    int
}

var txnShapes = map[string]txnShape{
	"A": {name: "A", reads: 4, writes: 4, valueSize: 4, paperItems: 3_000_000},
	"B": {name: "B", reads: 2, writes: 2, valueSize: 1024, paperItems: 1_000_000},
	"C": {name: "C", reads: 8, writes: 0, valueSize: 4, paperItems: 3_000_000},
	"D": {name: "D", reads: 4, writes: 0, valueSize: 1024, paperItems: 1_000_000},
}

// Default --items of the workloads with 4-byte values (A, C) and with 1
// KiB values (B, D). The paper's databases are 3M and 1M items; these load
// in about a minute on the 2-core machine of docs/benchmarks/txn.md.
const (
	defaultItemsSmall = 1_000_000
	defaultItemsLarge = 100_000
)

// table3Flags are the flags of A–D.
type table3Flags struct{ shape string }

func (f *table3Flags) Check(workload string) error {
	if f.shape != shapePaper && f.shape != shapeGuarded {
		return fmt.Errorf("--shape %q: want %q or %q", f.shape, shapePaper, shapeGuarded)
	}
	if _, ok := txnShapes[workload]; !ok && f.shape != shapePaper {
		return fmt.Errorf("--shape %q: the %s workload has a shape of its own; --shape is for A, B, C and D", f.shape, workload)
	}
	return nil
}

func init() {
	register(&Spec{
		Names: []string{"A", "B", "C", "D"}, Order: 30, Family: FamilyTxn,
		Help: `A, B, C and D are the paper's Table 3 micro-benchmarks (A: 4 reads and 4 writes
per transaction with 4-byte values; B: 2 and 2 with 1 KiB values; C: 8 reads;
D: 4 reads of 1 KiB values), over --items items with 4-byte keys spread evenly
over the cluster's range map; a multi-group transaction spans exactly two
groups. --shape paper (default) sends each as one transaction of reads and
blind writes, as Table 3 lists them; --shape guarded reads first and then
writes under cmp guards on the values read (the BFT Derby shape).
`,
		Example: `  augustus init --dir ./c --groups 2 --clients 16 && augustus start --dir ./c --app txn &
  augustus bench --dir ./c --workload A --load --items 100000 --multi-group 0,20,100 --clients 32 --duration 20s
  augustus bench --dir ./c --workload A --items 100000 --multi-group 20 --byzantine 0,10,20,30
  augustus bench --dir ./c --workload A --items 100000 --multi-group 20 --rate 500 --clients 64`,
		Flags: func(fs *pflag.FlagSet) WorkloadFlags {
			f := &table3Flags{}
			fs.StringVar(&f.shape, "shape", shapePaper, `A–D: "paper" (one transaction of reads and writes, Table 3) or "guarded" (read, then writes under cmp guards)`)
			return f
		},
		newTxn: func(env *txnEnv, name string, f WorkloadFlags) (txnWorkload, error) {
			return &table3{env: env, shape: txnShapes[name], form: f.(*table3Flags).shape}, nil
		},
	})
}

// table3 is workload A, B, C or D.
type table3 struct {
	env   *txnEnv
	shape txnShape
	// form is --shape.
	form  string
	ks    *keySpace
	items int
	vsize int
}

func (w *table3) Setup(runs []RunConfig) error {
	e := w.env
	w.items = e.t.items
	if w.items == 0 {
		w.items = defaultItemsSmall
		if w.shape.valueSize > 4 {
			w.items = defaultItemsLarge
		}
	}
	w.vsize = w.shape.valueSize
	if e.o.size > 0 {
		w.vsize = e.o.size
	}
	// B and D keep their 1 KiB items apart from A's and C's small ones.
	offset := uint32(0)
	if w.shape.valueSize > 4 {
		offset = 1
	}
	var err error
	if w.ks, err = newKeySpace(e.pmap, w.items, offset, nil); err != nil {
		return err
	}
	return checkRuns(w.ks, w.shape.reads+w.shape.writes, runs)
}

// checkRuns checks that the key space can serve every interval's mix, and
// the Byzantine callers' multi-group transactions.
func checkRuns(ks *keySpace, keysPerTxn int, runs []RunConfig) error {
	for _, rc := range runs {
		if err := checkGen(ks, keysPerTxn, rc.MultiGroupPct); err != nil {
			return err
		}
		if rc.ByzantinePct > 0 {
			if err := checkGen(ks, keysPerTxn, 100); err != nil {
				return fmt.Errorf("--byzantine %d: Byzantine callers send multi-group transactions: %w", rc.ByzantinePct, err)
			}
		}
	}
	return nil
}

func (w *table3) info() txnInfo { return txnInfo{shape: w.form, items: w.items, valueSize: w.vsize} }

func (w *table3) mixRow(rc RunConfig) string {
	return fmt.Sprintf("%d%% multi-group, %d%% Byzantine callers", rc.MultiGroupPct, rc.ByzantinePct)
}

func (w *table3) sampleOps() []txn.Op {
	gen := &txnGen{ks: w.ks, reads: w.shape.reads, writes: w.shape.writes, rng: rand.New(rand.NewPCG(1, 2))}
	return paperOps(w.ks, gen.next(), w.vsize, 0)
}

// Load inserts every item with a value of the workload's size; items that
// exist already are left as they are.
func (w *table3) Load(ctx context.Context) (*LoadResult, error) {
	e := w.env
	batch := e.loadBatchSize(w.vsize)
	spans := loadUnits(w.ks, batch)
	fmt.Fprintf(e.stderr, "bench: loading %d items (%d-byte values) in %d transactions of up to %d inserts, %d in flight\n",
		w.items, w.vsize, len(spans), batch, e.t.loadClients)
	units := make([]func() []txn.KV, len(spans))
	for i, u := range spans {
		units[i] = func() []txn.KV {
			kvs := make([]txn.KV, 0, u.hi-u.lo)
			for it := u.lo; it < u.hi; it++ {
				kvs = append(kvs, txn.KV{Key: w.ks.key(it), Value: benchValue(w.vsize, uint64(it))})
			}
			return kvs
		}
	}
	return e.loadKVs(ctx, units, w.items, "items", batch)
}

func (w *table3) NewCaller(rc RunConfig, i int) (Caller, error) {
	return &table3Caller{w: w, gen: &txnGen{ks: w.ks, reads: w.shape.reads, writes: w.shape.writes, multiPct: rc.MultiGroupPct,
		rng: rand.New(rand.NewPCG(w.env.seed, uint64(rc.MultiGroupPct)<<40|uint64(rc.ByzantinePct)<<32|uint64(i)))}}, nil
}

func (w *table3) Classify(err error) (Class, string) { return classifyTxn(err) }

type table3Caller struct {
	w   *table3
	gen *txnGen
}

func (c *table3Caller) Do(ctx context.Context) Outcome {
	gt := c.gen.next()
	out := c.w.doTxn(ctx, gt)
	out.Groups = len(gt.groups)
	return out
}

// doTxn runs one A–D transaction in the chosen shape.
func (w *table3) doTxn(ctx context.Context, gt genTxn) Outcome {
	e := w.env
	seq := uint64(e.tags.next(0))
	if w.form == shapePaper || len(gt.writes) == 0 {
		res, err := e.do(ctx, coord.Ops(paperOps(w.ks, gt, w.vsize, seq)), coord.Options{})
		return Outcome{Err: err, Absent: countAbsent(res, len(gt.reads))}
	}
	res, err := e.do(ctx, coord.Ops(guardedReadOps(w.ks, gt)), coord.Options{})
	if err != nil {
		return Outcome{Err: err}
	}
	absent := countAbsent(res, len(gt.reads)+len(gt.writes))
	vals := make([][]byte, len(gt.writes))
	present := make([]bool, len(gt.writes))
	for j := range gt.writes {
		r := res.Ops[len(gt.reads)+j]
		vals[j], present[j] = r.Value, r.Present
	}
	// The guarded update is not retried by the library: a retry after a
	// conflict would compare against values that may be stale; the caller
	// starts over with a fresh read instead.
	_, err = e.do(ctx, coord.Ops(guardedWriteOps(w.ks, gt, vals, present, w.vsize, seq)), coord.Options{MaxRetries: -1})
	return Outcome{Err: err, Absent: absent}
}

// abandonOps is a Byzantine caller's transaction: a multi-group one of
// the workload's shape, in the paper's form.
func (w *table3) abandonOps(_ context.Context, bc *byzCaller) ([]txn.Op, bool) {
	gen := &txnGen{ks: w.ks, reads: w.shape.reads, writes: w.shape.writes, multiPct: 100, rng: bc.rng}
	return paperOps(w.ks, gen.next(), w.vsize, uint64(w.env.tags.next(0))), true
}

// countAbsent counts the reads among the first n operations that found no
// value.
func countAbsent(res *coord.Result, n int) int {
	if res == nil || !res.Committed {
		return 0
	}
	k := 0
	for i := 0; i < n && i < len(res.Ops); i++ {
		if !res.Ops[i].Present {
			k++
		}
	}
	return k
}

// paperOps are the operations of a transaction of the "paper" shape.
func paperOps(ks *keySpace, t genTxn, valueSize int, seq uint64) []txn.Op {
	ops := make([]txn.Op, 0, len(t.reads)+len(t.writes))
	for _, it := range t.reads {
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: ks.key(it)})
	}
	for j, it := range t.writes {
		ops = append(ops, txn.Op{Kind: txn.OpWrite, Key: ks.key(it), Value: benchValue(valueSize, seq+uint64(j))})
	}
	return ops
}

// guardedReadOps are the first transaction of the "guarded" shape: a read
// of every item (the reads, then the items to write).
func guardedReadOps(ks *keySpace, t genTxn) []txn.Op {
	ops := make([]txn.Op, 0, len(t.reads)+len(t.writes))
	for _, it := range t.reads {
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: ks.key(it)})
	}
	for _, it := range t.writes {
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: ks.key(it)})
	}
	return ops
}

// guardedWriteOps are the second: for each item written, cmp on the value
// read (cmp absent if it was absent) and the write.
func guardedWriteOps(ks *keySpace, t genTxn, read [][]byte, present []bool, valueSize int, seq uint64) []txn.Op {
	ops := make([]txn.Op, 0, 2*len(t.writes))
	for j, it := range t.writes {
		k := ks.key(it)
		if present[j] {
			ops = append(ops, txn.Op{Kind: txn.OpCmp, Key: k, Value: read[j]})
		} else {
			ops = append(ops, txn.Op{Kind: txn.OpCmp, Key: k, Absent: true})
		}
	}
	for j, it := range t.writes {
		ops = append(ops, txn.Op{Kind: txn.OpWrite, Key: ks.key(it), Value: benchValue(valueSize, seq+uint64(j))})
	}
	return ops
}
