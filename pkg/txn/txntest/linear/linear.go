package linear

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// Verdict is porcupine's answer for one key.
type Verdict string

const (
	// Linearizable: a linearization exists.
	Linearizable Verdict = "linearizable"
	// Illegal: no linearization exists.
	Illegal Verdict = "illegal"
	// Unknown: the search timed out.
	Unknown Verdict = "unknown"
)

// KeyResult is the verdict for one key.
type KeyResult struct {
	Key     string
	Verdict Verdict
	// Ops counts the operations checked on the key.
	Ops  int
	info porcupine.LinearizationInfo
}

// Result is the verdict per key, in key order.
type Result struct {
	Keys []KeyResult
	// Skipped counts the ops left out other than Fail ones: those that are
	// not single-key register operations, and Info reads.
	Skipped int
}

// Ok says that every key is linearizable (an unknown verdict is not ok).
func (r *Result) Ok() bool {
	for _, k := range r.Keys {
		if k.Verdict != Linearizable {
			return false
		}
	}
	return true
}

// String is one line per key that is not linearizable, or "linearizable".
func (r *Result) String() string {
	var lines []string
	for _, k := range r.Keys {
		if k.Verdict != Linearizable {
			lines = append(lines, fmt.Sprintf("%s: %s (%d ops)", k.Key, k.Verdict, k.Ops))
		}
	}
	if len(lines) == 0 {
		return "linearizable"
	}
	return strings.Join(lines, "\n")
}

// Visualize writes porcupine's HTML visualization of key's check (its
// longest partial linearizations): open it in a browser to see where the
// search got stuck.
func (r *Result) Visualize(key string, w io.Writer) error {
	for _, k := range r.Keys {
		if k.Key == key {
			if err := porcupine.Visualize(model, k.info, w); err != nil {
				return fmt.Errorf("linear: visualize %q: %w", key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("linear: no key %q in the result", key)
}

// ErrUncheckable is wrapped by Check's errors.
var ErrUncheckable = errors.New("linear: history cannot be checked")

// register is the model's state: the key's value, or nil.
type register struct {
	val   int64
	isNil bool
}

func (r register) String() string {
	if r.isNil {
		return "nil"
	}
	return fmt.Sprint(r.val)
}

type opKind uint8

const (
	opRead opKind = iota + 1
	opWrite
	opCAS
)

// input is one operation's call: for a read, out is the value returned;
// for a compare-and-set, expect is the value compared.
type input struct {
	kind   opKind
	expect register
	val    int64
	maybe  bool // an Info op: it may not have taken effect
	out    register
	txn    int // history index, for the visualization
}

var model = porcupine.Model{
	Init: func() any { return register{isNil: true} },
	Step: func(state, in, _ any) (bool, any) {
		s, op := state.(register), in.(input)
		switch op.kind {
		case opRead:
			return s == op.out, s
		case opWrite:
			return true, register{val: op.val}
		}
		if s == op.expect {
			return true, register{val: op.val}
		}
		return op.maybe, s // an Info CAS that does not match did not happen
	},
	DescribeOperation: func(in, _ any) string {
		op := in.(input)
		var s string
		switch op.kind {
		case opRead:
			s = fmt.Sprintf("r() -> %s", op.out)
		case opWrite:
			s = fmt.Sprintf("w(%d)", op.val)
		default:
			s = fmt.Sprintf("cas(%s -> %d)", op.expect, op.val)
		}
		if op.maybe {
			s += " (info)"
		}
		return fmt.Sprintf("T%d: %s", op.txn, s)
	},
	DescribeState: func(state any) string { return state.(register).String() },
}

// operation turns one op into a register operation on one key; ok is
// false if it is not one (or says nothing: a Fail op, an Info read).
func operation(i int, op *history.Op) (key string, o porcupine.Operation, ok bool) {
	if op.Outcome == history.Fail || len(op.Txn) == 0 {
		return "", o, false
	}
	key = op.Txn[0].Key
	in := input{txn: i, maybe: op.Outcome == history.Info}
	var read, wrote bool
	for _, m := range op.Txn {
		if m.Key != key || m.Kind == history.KindAppend || m.Kind == history.KindRead && m.Result == history.ResultList {
			return "", o, false
		}
		switch {
		case m.Kind == history.KindWrite:
			wrote, in.val = true, m.Value
		case wrote || read || m.Result == history.ResultUnknown:
			// a read after the op's own write, a repeated read, or an
			// unknown result: nothing more to learn here
		default:
			read = true
			in.expect = register{val: m.Value, isNil: m.Result == history.ResultNil}
		}
	}
	switch {
	case wrote && read:
		in.kind = opCAS
	case wrote:
		in.kind = opWrite
	case read && op.Outcome == history.OK:
		in.kind, in.out = opRead, in.expect
	default:
		return "", o, false
	}
	o = porcupine.Operation{ClientId: op.Process, Input: in, Call: op.Invoke, Return: op.Complete}
	if op.Outcome == history.Info {
		o.Return = math.MaxInt64 // it may take effect any time after its invocation
	}
	return key, o, true
}

// Check checks every key's single-key register operations for
// linearizability, each key with at most timeout (0: no limit) of search.
func Check(h history.History, timeout time.Duration) (*Result, error) {
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUncheckable, err)
	}
	res := &Result{}
	perKey := make(map[string][]porcupine.Operation)
	var keys []string
	clients := make(map[int]int) // process → dense id (the visualization wants them)
	for i := range h {
		key, o, ok := operation(i, &h[i])
		if !ok {
			if h[i].Outcome != history.Fail {
				res.Skipped++
			}
			continue
		}
		if _, seen := clients[o.ClientId]; !seen {
			clients[o.ClientId] = len(clients)
		}
		o.ClientId = clients[o.ClientId]
		if _, seen := perKey[key]; !seen {
			keys = append(keys, key)
		}
		perKey[key] = append(perKey[key], o)
	}
	slices.Sort(keys)
	for _, key := range keys {
		ops := perKey[key]
		verdict, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
		kr := KeyResult{Key: key, Ops: len(ops), info: info}
		switch verdict {
		case porcupine.Ok:
			kr.Verdict = Linearizable
		case porcupine.Illegal:
			kr.Verdict = Illegal
		default:
			kr.Verdict = Unknown
		}
		res.Keys = append(res.Keys, kr)
	}
	return res, nil
}
