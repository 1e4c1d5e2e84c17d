package lockmgr

import (
	"errors"
	"fmt"
)

// Mode is the kind of a lock (Table 2 of the paper, txn.md L1–L3). The zero
// Mode is invalid, so a Lock left unset is rejected rather than read as R.
type Mode uint8

const (
	// R is a read lock on one key (cmp, read, and every present key of a
	// read-range or cmp-range, txn.md L5). R–R share; R–W conflict (L1).
	R Mode = iota + 1
	// W is a write lock on one key (write, insert, delete). It conflicts with
	// R and W of other holders (L1).
	W
	// SR is a structural read lock on the span [Start, End) a read-range or
	// cmp-range covers. SR–SR share; SR conflicts with an SW of another
	// holder on a key inside the span (L2).
	SR
	// SW is a structural write lock on the one key an insert or delete
	// touches. SW–SW share; SW conflicts with an SR of another holder whose
	// span contains the key (L2).
	SW
)

func (m Mode) String() string {
	switch m {
	case R:
		return "R"
	case W:
		return "W"
	case SR:
		return "SR"
	case SW:
		return "SW"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Lock is one lock of a request.
//
// For R, W and SW, Start is the key and End must be empty. For SR, the span
// is [Start, End) in bytewise key order; the empty Start is the smallest key.
// An empty End (nil or zero length) means the span is unbounded above: no key
// sorts below the empty key, so an empty upper bound could only mean an empty
// span, and reading it as +infinity keeps the meaning when an encoding does
// not tell nil from empty. A read-range chunk that stopped early at lastKey
// (txn.md T1) covers [Start, lastKey] and is passed as
// [Start, lastKey+"\x00"), the smallest key after lastKey. A bounded span
// with Start >= End covers no key and takes no lock.
//
// The Table copies what it keeps: the caller may reuse Start and End after
// the call returns.
type Lock struct {
	Mode       Mode
	Start, End []byte
}

func (l Lock) String() string {
	switch {
	case l.Mode != SR:
		return fmt.Sprintf("%s(%q)", l.Mode, l.Start)
	case len(l.End) == 0:
		return fmt.Sprintf("SR[%q, +inf)", l.Start)
	default:
		return fmt.Sprintf("SR[%q, %q)", l.Start, l.End)
	}
}

// Holder names a transaction that holds locks. Order is its delivery order,
// which the engine derives from the PBFT sequence number and the position
// of the call in the batch; it is unique per holder and is the order in
// which conflicts are reported (txn.md E3).
type Holder struct {
	ID    [32]byte
	Order uint64
}

func (h Holder) String() string { return fmt.Sprintf("%x@%d", h.ID[:4], h.Order) }

// Errors. A lock conflict is not an error: Acquire and Conflicts report it
// as the list of conflicting holders, a result every correct replica
// computes identically (an abort vote, txn.md E3). The errors below are
// misuse by the caller or, for ErrInconsistent, a local fault (E11, E12).
var (
	// ErrInvalidLock: a Lock with an unknown Mode, or an End on a lock that
	// is not SR. The engine builds locks from validated operations (L5), so
	// this is a bug in the caller.
	ErrInvalidLock = errors.New("lockmgr: invalid lock")
	// ErrHolderExists: the holder already holds locks. A transaction
	// acquires once (E1 answers a re-delivery from its record).
	ErrHolderExists = errors.New("lockmgr: holder already holds locks")
	// ErrOrderTaken: another holder has the same delivery order, which the
	// engine guarantees cannot happen; conflict reports would be ambiguous.
	ErrOrderTaken = errors.New("lockmgr: delivery order already used by another holder")
	// ErrInconsistent: Restore met two holders with conflicting locks, so
	// the persisted pending records cannot all be true (E11): a local fault.
	ErrInconsistent = errors.New("lockmgr: restored lock sets conflict")
)

// ConflictError is returned by Restore when the restored holder conflicts
// with holders already in the table. It unwraps to ErrInconsistent.
type ConflictError struct {
	Holder    Holder
	Conflicts []Holder // in delivery order
}

func (e *ConflictError) Error() string {
	if len(e.Conflicts) == 0 {
		return fmt.Sprintf("%v: holder %v", ErrInconsistent, e.Holder)
	}
	return fmt.Sprintf("%v: holder %v conflicts with %d holder(s), first %v",
		ErrInconsistent, e.Holder, len(e.Conflicts), e.Conflicts[0])
}

func (e *ConflictError) Unwrap() error { return ErrInconsistent }

// validate checks one lock of a request.
func validate(i int, l Lock) error {
	switch l.Mode {
	case R, W, SW:
		if len(l.End) != 0 {
			return fmt.Errorf("%w: lock %d: %s with an end key", ErrInvalidLock, i, l.Mode)
		}
	case SR:
	default:
		return fmt.Errorf("%w: lock %d: %v", ErrInvalidLock, i, l.Mode)
	}
	return nil
}
