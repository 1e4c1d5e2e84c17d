package txn

import (
	"errors"

	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

// Errors of decoding and stateless validation (T4). Their messages travel to
// clients as refusals read on f+1 matching replies, so every message built
// on them is a deterministic function of the call's bytes.
var (
	// ErrMalformed: bytes that are not a canonical encoding.
	ErrMalformed = wire.ErrMalformed
	// ErrInvalid: a well-formed encoding that breaks a rule of txn.md.
	ErrInvalid = errors.New("txn: invalid")
	// ErrTooLarge: a transaction beyond the group's Limits.
	ErrTooLarge = errors.New("txn: too large")
	// ErrSignature: a certificate, relay, proof or admin signature that
	// does not verify.
	ErrSignature = errors.New("txn: bad signature")
	// ErrNotInvolved: the receiving group is not in the declared set (T4).
	ErrNotInvolved = errors.New("txn: group not involved")
	// ErrLimits: a Limits value that is not usable.
	ErrLimits = errors.New("txn: bad limits")
	// ErrKeys: unusable key material for Keys.
	ErrKeys = errors.New("txn: bad keys")
)
