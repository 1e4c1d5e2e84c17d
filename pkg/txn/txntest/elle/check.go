package elle

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Model is the consistency model checked.
type Model uint8

const (
	// StrictSerializable (the default): dependency edges plus real-time
	// edges must be acyclic. This is the Augustus guarantee (txn.md X1).
	StrictSerializable Model = iota
	// Serializable: real-time edges are left out.
	Serializable
)

// DefaultCycleSearchBudget bounds the work (edge relaxations) spent on one
// anomaly class in one strongly connected component.
const DefaultCycleSearchBudget = 1 << 22

// Options tunes Check; the zero value checks strict serializability.
type Options struct {
	Model Model
	// CycleSearchBudget overrides DefaultCycleSearchBudget.
	CycleSearchBudget int
}

// ErrUncheckable is wrapped by Check's errors: the history breaks an
// assumption of the workload (a value written twice to one key, a key used
// both as a list and as a register, a malformed op), so nothing sound can be
// inferred from it. This is a bug in the test harness, not an anomaly.
var ErrUncheckable = errors.New("elle: history cannot be checked")

// wref is what the checker knows of one value written to one key.
type wref struct {
	op     int32 // the OK or Info op that wrote it, or -1
	failOp int32 // a Fail op that wrote it, or -1
	last   bool  // it is op's final write to the key
	final  int64 // op's final write to the key
}

// writerRef is one non-failed op's writes to one key, in program order.
type writerRef struct {
	op   int32
	vals []int64
}

// extRead is a transaction's view of a key before its own writes: the
// version it observed (Elle's "external read", §4.1.1).
type extRead struct {
	op int32
	// list: prior is the version read before the op's own appends; full is
	// that read as returned.
	prior, full []int64
	// register: the value read (or nil), and the op's final write after it.
	isNil  bool
	val    int64
	writes bool
	final  int64
}

type readRef struct{ op, m int32 }

// keyState gathers everything about one key.
type keyState struct {
	name    string
	list    bool // list-append key (else register, or only nil reads)
	reg     bool
	writes  map[int64]wref
	writers []writerRef // history order
	reads   []readRef   // every read of an OK op with a known result
	ext     []extRead   // one per OK op that read the key before writing it
	longest []int64     // list: the longest read, the version order
}

// checker holds one run of Check.
type checker struct {
	h      history.History
	opts   Options
	keyIdx map[string]int32
	keys   []*keyState
	// node maps an op to its graph node (-1: not in the graph); ops maps a
	// node back to its op. The graph holds OK ops and the Info ops whose
	// writes were observed (they committed).
	node []int32
	ops  []int32
	raw  []rawEdge
	// observed marks Info ops whose writes a committed read observed.
	observed  []bool
	anomalies []Anomaly
	reported  map[string]bool // summaries of non-cycle anomalies, to report each once
	res       Result
}

// Check infers version orders and dependencies from the history and
// reports every anomaly it can show (see the package comment). The error is
// non-nil only for histories that cannot be checked (ErrUncheckable).
func Check(h history.History, opts Options) (*Result, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUncheckable, err)
	}
	if opts.CycleSearchBudget <= 0 {
		opts.CycleSearchBudget = DefaultCycleSearchBudget
	}
	c := &checker{h: h, opts: opts, keyIdx: make(map[string]int32), observed: make([]bool, len(h)),
		reported: make(map[string]bool)}
	if err := c.classifyKeys(); err != nil {
		return nil, err
	}
	if err := c.scan(); err != nil {
		return nil, err
	}
	for _, ks := range c.keys {
		if ks.list {
			c.checkListReads(ks)
		} else {
			c.checkRegisterReads(ks)
		}
	}
	c.assignNodes()
	for k, ks := range c.keys {
		if ks.list {
			c.listEdges(int32(k), ks)
		} else {
			c.registerEdges(int32(k), ks)
		}
	}
	if opts.Model == StrictSerializable {
		c.realTimeEdges()
	}
	// Per-read anomalies in history order (stable: within one op, in the
	// order found).
	slices.SortStableFunc(c.anomalies, func(a, b Anomaly) int { return cmp.Compare(a.Txns[0], b.Txns[0]) })
	g := buildGraph(len(c.ops), c.raw)
	c.raw = nil
	c.res.Txns, c.res.Edges = len(c.ops), len(g.dst)
	c.findCycles(g)
	c.res.Anomalies = c.anomalies
	return &c.res, nil
}

// classifyKeys interns every key and decides its workload: appends and
// list results make a list key; writes and value results a register key.
func (c *checker) classifyKeys() error {
	for i := range c.h {
		for _, m := range c.h[i].Txn {
			k, ok := c.keyIdx[m.Key]
			if !ok {
				k = int32(len(c.keys))
				c.keyIdx[m.Key] = k
				c.keys = append(c.keys, &keyState{name: m.Key, writes: make(map[int64]wref)})
			}
			ks := c.keys[k]
			switch {
			case m.Kind == history.KindAppend || m.Kind == history.KindRead && m.Result == history.ResultList:
				ks.list = true
			case m.Kind == history.KindWrite || m.Kind == history.KindRead && m.Result == history.ResultValue:
				ks.reg = true
			}
			if ks.list && ks.reg {
				return fmt.Errorf("%w: key %q is used both as a list (append, list reads) and as a register (write, value reads) (T%d)",
					ErrUncheckable, m.Key, i)
			}
		}
	}
	return nil
}

// txnKey tracks one op's micro-ops on one key, for internal consistency
// and its external read.
type txnKey struct {
	key      int32
	own      []int64 // values the op wrote to the key so far
	base     []int64 // list: the version observed before own appends
	haveBase bool
	readSeen bool // register: an external read happened
	readNil  bool
	readVal  int64
	broken   bool  // internal anomaly reported: stop checking this key
	ext      int32 // index into keys[key].ext, or -1
}

// scan walks every op once: indexes writes, checks internal consistency
// and records external reads.
func (c *checker) scan() error {
	var tks []txnKey
	for i := range c.h {
		op := &c.h[i]
		tks = tks[:0]
		for j, m := range op.Txn {
			k := c.keyIdx[m.Key]
			t := -1
			for x := range tks {
				if tks[x].key == k {
					t = x
					break
				}
			}
			if t < 0 {
				var own []int64 // reuse the buffer of an earlier op's entry
				if len(tks) < cap(tks) {
					own = tks[:len(tks)+1][len(tks)].own[:0]
				}
				tks = append(tks, txnKey{key: k, ext: -1, own: own})
				t = len(tks) - 1
			}
			tk, ks := &tks[t], c.keys[k]
			if m.IsWrite() {
				if err := c.indexWrite(ks, int32(i), op.Outcome, m.Value); err != nil {
					return err
				}
				tk.own = append(tk.own, m.Value)
				continue
			}
			if op.Outcome != history.OK || m.Result == history.ResultUnknown || tk.broken {
				continue
			}
			ks.reads = append(ks.reads, readRef{op: int32(i), m: int32(j)})
			if ks.list {
				c.listRead(int32(i), tk, ks, m)
			} else {
				c.registerRead(int32(i), tk, ks, m)
			}
		}
		for x := range tks {
			tk := &tks[x]
			if len(tk.own) == 0 {
				continue
			}
			ks := c.keys[tk.key]
			final := tk.own[len(tk.own)-1]
			if tk.ext >= 0 {
				ks.ext[tk.ext].writes, ks.ext[tk.ext].final = true, final
			}
			if op.Outcome == history.Fail {
				continue
			}
			for _, v := range tk.own {
				w := ks.writes[v]
				w.final, w.last = final, v == final
				ks.writes[v] = w
			}
			ks.writers = append(ks.writers, writerRef{op: int32(i), vals: slices.Clone(tk.own)})
		}
	}
	return nil
}

// indexWrite records that op wrote v. Values are unique per key (the
// workload's promise, which is what makes version orders recoverable): at
// most one OK or Info op may write a value; Fail ops may repeat it (a
// client may retry a refused write with the same value).
func (c *checker) indexWrite(ks *keyState, op int32, o history.Outcome, v int64) error {
	w, ok := ks.writes[v]
	if !ok {
		w = wref{op: -1, failOp: -1}
	}
	if o == history.Fail {
		if w.failOp < 0 {
			w.failOp = op
		}
	} else {
		if w.op >= 0 {
			return fmt.Errorf("%w: value %d is written to key %q by T%d and by T%d; values must be unique per key",
				ErrUncheckable, v, ks.name, w.op, op)
		}
		w.op = op
	}
	ks.writes[v] = w
	return nil
}

// listRead checks one list read of an OK op against the op's own earlier
// reads and appends of the key, and records the op's external read: the
// read minus the op's own appends, which must end it.
func (c *checker) listRead(op int32, tk *txnKey, ks *keyState, m history.MicroOp) {
	l := m.List // nil for a nil result: the empty list
	if !tk.haveBase {
		if len(l) < len(tk.own) || !slices.Equal(l[len(l)-len(tk.own):], tk.own) {
			c.internal(op, ks.name, fmt.Sprintf("%s read %s=%s after appending %s, which the read does not end with",
				txnName(int(op)), ks.name, fmtList(l), fmtList(tk.own)))
			tk.broken = true
			return
		}
		tk.base, tk.haveBase = l[:len(l)-len(tk.own)], true
		tk.ext = int32(len(ks.ext))
		ks.ext = append(ks.ext, extRead{op: op, prior: tk.base, full: l})
		return
	}
	if want := append(slices.Clip(tk.base), tk.own...); !slices.Equal(l, want) {
		c.internal(op, ks.name, fmt.Sprintf("%s read %s=%s, but its earlier read and its own appends make it %s",
			txnName(int(op)), ks.name, fmtList(l), fmtList(want)))
		tk.broken = true
	}
}

// registerRead is listRead for registers: a read after the op's own write
// must return that write, and two reads before it must agree.
func (c *checker) registerRead(op int32, tk *txnKey, ks *keyState, m history.MicroOp) {
	isNil := m.Result == history.ResultNil
	switch {
	case len(tk.own) > 0:
		if last := tk.own[len(tk.own)-1]; isNil || m.Value != last {
			c.internal(op, ks.name, fmt.Sprintf("%s read %s=%s after writing %d", txnName(int(op)), ks.name, fmtReg(isNil, m.Value), last))
			tk.broken = true
		}
	case tk.readSeen:
		if isNil != tk.readNil || m.Value != tk.readVal {
			c.internal(op, ks.name, fmt.Sprintf("%s read %s=%s after reading %s=%s", txnName(int(op)), ks.name,
				fmtReg(isNil, m.Value), ks.name, fmtReg(tk.readNil, tk.readVal)))
			tk.broken = true
		}
	default:
		tk.readSeen, tk.readNil, tk.readVal = true, isNil, m.Value
		tk.ext = int32(len(ks.ext))
		ks.ext = append(ks.ext, extRead{op: op, isNil: isNil, val: m.Value})
	}
}

func (c *checker) internal(op int32, key, text string) {
	c.report(Anomaly{Class: Internal, Txns: []int{int(op)}, Key: key}, text)
}

// report adds a non-cycle anomaly; the explanation lists its transactions.
func (c *checker) report(a Anomaly, text string) {
	a.Summary = string(a.Class) + ": " + text
	if c.reported[a.Summary] {
		return
	}
	c.reported[a.Summary] = true
	var sb strings.Builder
	sb.WriteString(a.Summary)
	for _, t := range a.Txns {
		fmt.Fprintf(&sb, "\n  %s: %s", txnName(t), c.h[t])
	}
	a.Explanation = sb.String()
	c.anomalies = append(c.anomalies, a)
}

// valueRead checks one value a committed transaction read: written by
// nobody (garbage), only by failed transactions (G1a), or by an Info op,
// which therefore committed.
func (c *checker) valueRead(reader int32, ks *keyState, v int64) {
	w, ok := ks.writes[v]
	switch {
	case !ok:
		c.report(Anomaly{Class: GarbageRead, Txns: []int{int(reader)}, Key: ks.name},
			fmt.Sprintf("%s read %d from %s, a value no transaction wrote", txnName(int(reader)), v, ks.name))
	case w.op < 0:
		c.report(Anomaly{Class: G1a, Txns: []int{int(reader), int(w.failOp)}, Key: ks.name},
			fmt.Sprintf("%s read %d from %s, written only by %s, which failed", txnName(int(reader)), v, ks.name, txnName(int(w.failOp))))
	default:
		c.markObserved(w.op)
	}
}

// markObserved notes that a committed transaction read a write of op: an
// Info op is then known to have committed (Elle §4.2: indeterminate
// transactions whose effects are visible are committed).
func (c *checker) markObserved(op int32) {
	if c.h[op].Outcome == history.Info {
		c.observed[op] = true
	}
}

// assignNodes puts the OK ops and the observed Info ops in the graph.
func (c *checker) assignNodes() {
	c.node = make([]int32, len(c.h))
	for i := range c.h {
		c.node[i] = -1
		if o := c.h[i].Outcome; o == history.OK || o == history.Info && c.observed[i] {
			c.node[i] = int32(len(c.ops))
			c.ops = append(c.ops, int32(i))
		}
	}
}

// writerNode is the graph node of the op that wrote v to the key, or -1
// (nobody, only failed ops).
func (c *checker) writerNode(ks *keyState, v int64) int32 {
	if w, ok := ks.writes[v]; ok && w.op >= 0 {
		return c.node[w.op]
	}
	return -1
}

func (c *checker) edge(from, to int32, kind EdgeKind, why why, key int32, a, b int64) {
	if from == to {
		return
	}
	c.raw = append(c.raw, rawEdge{from: from, to: to, kind: kind, why: why, key: key, a: a, b: b})
}

func fmtList(l []int64) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, v := range l {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, v)
	}
	sb.WriteByte(']')
	return sb.String()
}

func fmtReg(isNil bool, v int64) string {
	if isNil {
		return "nil"
	}
	return fmt.Sprint(v)
}
