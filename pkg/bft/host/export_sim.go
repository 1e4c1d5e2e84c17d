package host

import (
	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// LoadRestored reads from e what a restarting loop restores (New does the
// same): the hard state, the log records, the last executed seq and the
// client table. The simulator's durability checker (P1) compares it with
// what the replica sent before its crash.
func LoadRestored(e *storage.Engine) (*bft.Restored, error) { return loadRestored(e) }
