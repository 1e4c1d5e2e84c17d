package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/txn/lockmgr"
)

// The engine's names for the lock table's types (pkg/txn/lockmgr owns the
// compatibility rules of Table 2, L1–L4 and L6; the engine builds the lock
// sets, L5).
type (
	lock   = lockmgr.Lock
	holder = lockmgr.Holder
)

const (
	modeR  = lockmgr.R
	modeW  = lockmgr.W
	modeSR = lockmgr.SR
	modeSW = lockmgr.SW
)

// acquire grants every lock or returns the conflicting holders in delivery
// order (L6, E3). A lock table error is a bug or a local fault, never a vote.
func (e *Engine) acquire(h holder, locks []lock) ([]holder, error) {
	c, err := e.locks.Acquire(h, locks)
	if err != nil {
		return nil, fmt.Errorf("partition: acquire locks of %x: %w", h.ID[:4], err)
	}
	return c, nil
}

// conflicts returns the holders other than id whose locks conflict with
// locks, in delivery order.
func (e *Engine) conflicts(id [32]byte, locks []lock) ([]holder, error) {
	c, err := e.locks.Conflicts(id, locks)
	if err != nil {
		return nil, fmt.Errorf("partition: lock conflicts of %x: %w", id[:4], err)
	}
	return c, nil
}
