package history

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Outcome is how a transaction attempt ended.
type Outcome uint8

const (
	// OK: committed; reads are known.
	OK Outcome = iota + 1
	// Fail: certainly not committed; no write of it may ever be observed.
	Fail
	// Info: indeterminate; it may have committed at any time after its
	// invocation, and its reads are unknown.
	Info
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Fail:
		return "fail"
	case Info:
		return "info"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Kind is the kind of a micro-operation.
type Kind uint8

const (
	// KindAppend appends Value to the list at Key (list-append workload).
	KindAppend Kind = iota + 1
	// KindWrite sets the register at Key to Value (register workload).
	KindWrite
	// KindRead reads Key; Result says what was observed.
	KindRead
)

func (k Kind) String() string {
	switch k {
	case KindAppend:
		return "append"
	case KindWrite:
		return "w"
	case KindRead:
		return "r"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Result is what a read observed.
type Result uint8

const (
	// ResultUnknown: the read's result is not known (the op is not OK, or
	// the result was not recorded).
	ResultUnknown Result = iota
	// ResultNil: the key was absent (a register never written; for a list
	// key, the same as the empty list).
	ResultNil
	// ResultValue: a register read returned Value.
	ResultValue
	// ResultList: a list read returned List (possibly empty).
	ResultList
)

// Never is the completion time of an op that never completed.
const Never int64 = math.MaxInt64

// MicroOp is one operation of a transaction.
type MicroOp struct {
	Kind Kind
	Key  string
	// Value is the value written (append, write) or, for a register read
	// with ResultValue, the value read.
	Value int64
	// Result is what a read observed (reads only).
	Result Result
	// List is the list a read returned, with ResultList.
	List []int64
}

// Append is append(key, v).
func Append(key string, v int64) MicroOp { return MicroOp{Kind: KindAppend, Key: key, Value: v} }

// Write is w(key, v).
func Write(key string, v int64) MicroOp { return MicroOp{Kind: KindWrite, Key: key, Value: v} }

// Read is r(key) with its result not (yet) known: the invocation form.
func Read(key string) MicroOp { return MicroOp{Kind: KindRead, Key: key} }

// ReadList is r(key) -> [vs...].
func ReadList(key string, vs ...int64) MicroOp {
	if vs == nil {
		vs = []int64{}
	}
	return MicroOp{Kind: KindRead, Key: key, Result: ResultList, List: vs}
}

// ReadValue is r(key) -> v.
func ReadValue(key string, v int64) MicroOp {
	return MicroOp{Kind: KindRead, Key: key, Result: ResultValue, Value: v}
}

// ReadNil is r(key) -> nil.
func ReadNil(key string) MicroOp { return MicroOp{Kind: KindRead, Key: key, Result: ResultNil} }

// IsWrite says whether the micro-op writes (append or write).
func (m MicroOp) IsWrite() bool { return m.Kind == KindAppend || m.Kind == KindWrite }

// Equal compares two micro-ops, results included.
func (m MicroOp) Equal(o MicroOp) bool {
	if m.Kind != o.Kind || m.Key != o.Key || m.Result != o.Result {
		return false
	}
	switch {
	case m.Kind != KindRead || m.Result == ResultValue:
		return m.Value == o.Value
	case m.Result == ResultList:
		return slices.Equal(m.List, o.List)
	}
	return true
}

// Op is one transaction attempt by one process.
type Op struct {
	Process int
	// Invoke and Complete are the invocation and completion times; Complete
	// is Never for an op that never completed.
	Invoke, Complete int64
	Outcome          Outcome
	// Txn holds the micro-operations in program order.
	Txn []MicroOp
}

// History is a sequence of ops; an op's index in it names it (T<index> in
// the checkers' reports).
type History []Op

// ErrInvalid is wrapped by Validate's errors.
var ErrInvalid = errors.New("history: invalid op")

// Validate checks what every checker assumes of an op's shape: a known
// outcome and micro-op kinds, completion not before invocation, a
// completion time for OK and Fail ops, and read results only of the shape
// their kind allows. It does not check values (that is the checkers' job).
func (h History) Validate() error {
	for i := range h {
		if err := h[i].validate(); err != nil {
			return fmt.Errorf("T%d: %w", i, err)
		}
	}
	return nil
}

func (op *Op) validate() error {
	switch op.Outcome {
	case OK, Fail, Info:
	default:
		return fmt.Errorf("%w: unknown outcome %d", ErrInvalid, op.Outcome)
	}
	if op.Complete < op.Invoke {
		return fmt.Errorf("%w: completes at %d before its invocation at %d", ErrInvalid, op.Complete, op.Invoke)
	}
	if op.Complete == Never && op.Outcome != Info {
		return fmt.Errorf("%w: an op with outcome %s must have a completion time", ErrInvalid, op.Outcome)
	}
	for j, m := range op.Txn {
		switch m.Kind {
		case KindAppend, KindWrite:
			if m.Result != ResultUnknown || m.List != nil {
				return fmt.Errorf("%w: micro-op %d: a write carries a read result", ErrInvalid, j)
			}
		case KindRead:
			if m.Result > ResultList {
				return fmt.Errorf("%w: micro-op %d: unknown read result %d", ErrInvalid, j, m.Result)
			}
			if (m.Result == ResultList) != (m.List != nil) {
				return fmt.Errorf("%w: micro-op %d: list result and list disagree", ErrInvalid, j)
			}
			if m.Result != ResultValue && m.Value != 0 {
				return fmt.Errorf("%w: micro-op %d: a value on a read without a value result", ErrInvalid, j)
			}
		default:
			return fmt.Errorf("%w: micro-op %d: unknown kind %d", ErrInvalid, j, m.Kind)
		}
	}
	return nil
}

// Clone returns a deep copy (tests mutate copies of histories).
func (h History) Clone() History {
	out := make(History, len(h))
	for i, op := range h {
		out[i] = op
		out[i].Txn = make([]MicroOp, len(op.Txn))
		for j, m := range op.Txn {
			if m.List != nil {
				m.List = slices.Clone(m.List)
			}
			out[i].Txn[j] = m
		}
	}
	return out
}
