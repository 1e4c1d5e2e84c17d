package history

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Recorder errors.
var (
	// ErrBadHandle: Complete was given a handle this recorder did not issue.
	ErrBadHandle = errors.New("history: unknown handle")
	// ErrCompleted: the op was already completed.
	ErrCompleted = errors.New("history: op already completed")
	// ErrMismatch: the completed micro-ops do not match the invoked ones.
	ErrMismatch = errors.New("history: completion does not match invocation")
)

// Handle names one invoked op of a Recorder.
type Handle struct{ i int }

// Recorder collects a history from concurrent clients. Harnesses call
// Invoke just before a transaction is sent and Complete once its outcome is
// known; both read the clock under the recorder's lock, so the recorded times
// are consistent with the order of the calls. It is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	now  func() int64
	ops  []Op
	done []bool
}

// NewRecorder returns a recorder that stamps invocations and completions
// with now(): the simulator's clock, or for process-level tests for example
// func() int64 { return time.Now().UnixNano() }.
func NewRecorder(now func() int64) *Recorder { return &Recorder{now: now} }

// Invoke records that process starts the transaction txn (its reads
// without results) and returns the handle to complete it with.
func (r *Recorder) Invoke(process int, txn ...MicroOp) Handle {
	ops := make([]MicroOp, len(txn))
	for i, m := range txn {
		m.Result, m.List = ResultUnknown, nil
		if m.Kind == KindRead {
			m.Value = 0
		}
		ops[i] = m
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Process: process, Invoke: r.now(), Complete: Never, Outcome: Info, Txn: ops})
	r.done = append(r.done, false)
	return Handle{i: len(r.ops)}
}

// Complete records the outcome of an invoked op. For OK, observed must be
// the invoked micro-ops with every read's result filled in. For Fail and
// Info, observed may be nil: read results of a transaction that did not
// certainly commit mean nothing, and are dropped.
func (r *Recorder) Complete(h Handle, outcome Outcome, observed []MicroOp) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := h.i - 1
	if i < 0 || i >= len(r.ops) {
		return ErrBadHandle
	}
	if r.done[i] {
		return fmt.Errorf("T%d: %w", i, ErrCompleted)
	}
	op := &r.ops[i]
	switch outcome {
	case OK:
		if len(observed) != len(op.Txn) {
			return fmt.Errorf("T%d: %w: %d micro-ops, invoked with %d", i, ErrMismatch, len(observed), len(op.Txn))
		}
		txn := make([]MicroOp, len(observed))
		for j, m := range observed {
			inv := op.Txn[j]
			if m.Kind != inv.Kind || m.Key != inv.Key || (m.IsWrite() && m.Value != inv.Value) {
				return fmt.Errorf("T%d: %w: micro-op %d is %s, invoked as %s", i, ErrMismatch, j, m, inv)
			}
			if m.Kind == KindRead && m.Result == ResultUnknown {
				return fmt.Errorf("T%d: %w: micro-op %d of an OK op has no result", i, ErrMismatch, j)
			}
			if m.List != nil {
				m.List = slices.Clone(m.List)
			}
			txn[j] = m
		}
		op.Txn = txn
	case Fail, Info:
		if observed != nil && len(observed) != len(op.Txn) {
			return fmt.Errorf("T%d: %w: %d micro-ops, invoked with %d", i, ErrMismatch, len(observed), len(op.Txn))
		}
	default:
		return fmt.Errorf("T%d: %w: unknown outcome %d", i, ErrMismatch, outcome)
	}
	op.Outcome = outcome
	op.Complete = r.now()
	r.done[i] = true
	return nil
}

// History returns a copy of the history so far, in invocation order. Ops
// not yet completed appear as Info ops that never completed.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History(r.ops).Clone()
}
