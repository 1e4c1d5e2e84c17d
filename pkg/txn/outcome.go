package txn

import (
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Sentinels of the typed results: errors.Is(err, ErrConflict) holds for an
// *AbortError whose reason is ReasonConflict, and so on.
var (
	// ErrAborted is matched by every *AbortError.
	ErrAborted = errors.New("txn: aborted")
	// ErrConflict: a lock conflict with a pending transaction (E3).
	ErrConflict = errors.New("txn: conflict with a pending transaction")
	// ErrCompareFailed: a comparison failed (E4).
	ErrCompareFailed = errors.New("txn: comparison failed")
	// ErrKeyExists: an insert met an existing key (E5).
	ErrKeyExists = errors.New("txn: key exists")
	// ErrKeyNotFound: a write or delete met an absent key (E5).
	ErrKeyNotFound = errors.New("txn: key not found")
	// ErrStaleMetadata: the client's metadata version is stale, or a
	// metadata change is queued (K1, M4).
	ErrStaleMetadata = errors.New("txn: stale metadata")
	// ErrWrongGroups: the declared groups are not the partition map's (T5).
	ErrWrongGroups = errors.New("txn: wrong groups")
	// ErrStaleNonce: the nonce is below the owner's watermark (E2).
	ErrStaleNonce = errors.New("txn: stale nonce")
	// ErrSecondID: another transaction holds the nonce (E2).
	ErrSecondID = errors.New("txn: second id under a nonce")
	// ErrBeyondWindow: the nonce is beyond the owner's window or abort mark
	// (E2).
	ErrBeyondWindow = errors.New("txn: nonce beyond the window")
	// ErrTerminatedEarly: terminated by a certificate or release before it
	// was delivered here (E8, E10).
	ErrTerminatedEarly = errors.New("txn: terminated before delivery")
	// ErrMapChange: a partition-map change would move data (M3).
	ErrMapChange = errors.New("txn: partition map change moves data")
	// ErrResultTooLarge: the read results exceed the group's limit.
	ErrResultTooLarge = errors.New("txn: result too large")
	// ErrQueued is matched by *QueuedError.
	ErrQueued = errors.New("txn: queued")
	// ErrRefused is matched by every *RefusalError.
	ErrRefused = errors.New("txn: refused")
	// ErrNoRecord: the group has no record of the transaction (T3).
	ErrNoRecord = errors.New("txn: no record")
)

var reasonErrors = [...]error{
	ReasonConflict:        ErrConflict,
	ReasonCompare:         ErrCompareFailed,
	ReasonKeyExists:       ErrKeyExists,
	ReasonNotFound:        ErrKeyNotFound,
	ReasonStaleMetadata:   ErrStaleMetadata,
	ReasonWrongGroups:     ErrWrongGroups,
	ReasonStaleNonce:      ErrStaleNonce,
	ReasonSecondID:        ErrSecondID,
	ReasonBeyondWindow:    ErrBeyondWindow,
	ReasonTerminatedEarly: ErrTerminatedEarly,
	ReasonMapChange:       ErrMapChange,
	ReasonTooLarge:        ErrResultTooLarge,
}

// AbortError is a group's abort vote with its typed reason.
type AbortError struct {
	Group  bft.GroupID
	Reason Reason
	// Op is the operation a comparison, precondition or map-change abort
	// names.
	Op int
	// Version is the group's metadata version (ReasonStaleMetadata).
	Version uint64
	// Named are the pending transactions to recover (K4): the conflicting
	// one (ReasonConflict) or those a queued metadata transaction waits for
	// (ReasonStaleMetadata).
	Named []Named
	// Want are the groups the partition map assigns (ReasonWrongGroups).
	Want []bft.GroupID
}

func (e *AbortError) Error() string {
	switch {
	case e.Reason.hasOp():
		return fmt.Sprintf("txn: aborted at group %d: %s at operation %d", e.Group, e.Reason, e.Op)
	case e.Reason == ReasonStaleMetadata:
		return fmt.Sprintf("txn: aborted at group %d: stale metadata (group version %d, %d blockers)", e.Group, e.Version, len(e.Named))
	case e.Reason == ReasonWrongGroups:
		return fmt.Sprintf("txn: aborted at group %d: wrong groups (want %v)", e.Group, e.Want)
	}
	return fmt.Sprintf("txn: aborted at group %d: %s", e.Group, e.Reason)
}

// Is matches ErrAborted and the reason's sentinel.
func (e *AbortError) Is(target error) bool {
	if target == ErrAborted {
		return true
	}
	return int(e.Reason) < len(reasonErrors) && reasonErrors[e.Reason] != nil && reasonErrors[e.Reason] == target
}

// QueuedError says a metadata transaction is queued behind pending data
// transactions (M4).
type QueuedError struct {
	Group bft.GroupID
	Named []Named
}

func (e *QueuedError) Error() string {
	return fmt.Sprintf("txn: queued at group %d behind %d pending transactions", e.Group, len(e.Named))
}

// Is matches ErrQueued.
func (e *QueuedError) Is(target error) bool { return target == ErrQueued }

// RefusalError is a group's refusal.
type RefusalError struct {
	Group   bft.GroupID
	Code    RefusalCode
	Message string
}

func (e *RefusalError) Error() string {
	return fmt.Sprintf("txn: refused at group %d: %s", e.Group, e.Message)
}

// Is matches ErrRefused, and ErrNoRecord for RefuseNoRecord.
func (e *RefusalError) Is(target error) bool {
	return target == ErrRefused || (target == ErrNoRecord && e.Code == RefuseNoRecord)
}
