package txn

import (
	"bytes"
	"fmt"
)

// Limits bound what one transaction may ask of a group (T4: limits against
// abusive clients). Every replica of every group must use the same limits:
// Validate checks them, and a call one replica refuses and another accepts
// would split a group's answer.
type Limits struct {
	// MaxOps bounds the operations of a transaction.
	MaxOps int
	// MaxKeyBytes bounds a key or range bound.
	MaxKeyBytes int
	// MaxValueBytes bounds a value.
	MaxValueBytes int
	// MaxTxnBytes bounds a transaction's encoding.
	MaxTxnBytes int
	// MaxRangeLimit bounds the limit of a read-range or cmp-range.
	MaxRangeLimit int
	// MaxResultBytes bounds the read results one group returns for a
	// transaction; a transaction whose results would exceed it votes abort
	// ("result too large") — a deterministic vote, never a refusal (T5).
	MaxResultBytes int
	// Window is P: the nonces [w, w+P) an owner may have recorded at a
	// group (E2, W2), so at most P pending transactions per owner.
	Window uint64
	// MaxNamed bounds the pending transactions a reply names (a queued
	// metadata transaction may wait for many): the first delivered are
	// named; clients recover them and ask again (K4). Abort records keep
	// what their vote named (E1), so a record holds at most MaxNamed
	// encodings of MaxTxnBytes each.
	MaxNamed int
}

// DefaultLimits returns the limits replicas and clients use unless the
// deployment says otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxOps:         1024,
		MaxKeyBytes:    4 << 10,
		MaxValueBytes:  256 << 10,
		MaxTxnBytes:    512 << 10,
		MaxRangeLimit:  10000,
		MaxResultBytes: 4 << 20,
		Window:         1024,
		MaxNamed:       4,
	}
}

// Valid reports an error if a limit is not positive.
func (l Limits) Valid() error {
	if l.MaxOps < 1 || l.MaxKeyBytes < 1 || l.MaxValueBytes < 0 || l.MaxTxnBytes < 1 ||
		l.MaxRangeLimit < 1 || l.MaxResultBytes < 1 || l.Window < 1 || l.MaxNamed < 1 {
		return fmt.Errorf("%w: %+v", ErrLimits, l)
	}
	return nil
}

// Check checks a transaction against the limits and the rules that do not
// depend on any state (T1, T2, T4): well-formed operations, a 32-byte owner,
// a watermark at most the nonce, strictly increasing groups, and limits. It
// does not check the encoding's size (CheckEncoded does).
func (l Limits) Check(t *Txn) error {
	if len(t.Owner) != OwnerSize {
		return fmt.Errorf("%w: owner id of %d bytes, want %d", ErrInvalid, len(t.Owner), OwnerSize)
	}
	if t.Watermark > t.Nonce {
		// The watermark says every lower nonce is terminated everywhere,
		// which cannot include the transaction itself.
		return fmt.Errorf("%w: watermark %d above nonce %d", ErrInvalid, t.Watermark, t.Nonce)
	}
	if len(t.Groups) == 0 {
		return fmt.Errorf("%w: no groups", ErrInvalid)
	}
	for i := 1; i < len(t.Groups); i++ {
		if t.Groups[i].Group <= t.Groups[i-1].Group {
			return fmt.Errorf("%w: groups not strictly increasing", ErrInvalid)
		}
	}
	if len(t.Ops) == 0 {
		return fmt.Errorf("%w: no operations", ErrInvalid)
	}
	if len(t.Ops) > l.MaxOps {
		return fmt.Errorf("%w: %d operations, at most %d", ErrTooLarge, len(t.Ops), l.MaxOps)
	}
	meta, data := false, false
	for i := range t.Ops {
		op := &t.Ops[i]
		if err := l.checkOp(op); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if op.Meta && op.Kind.IsUpdate() {
			meta = true
		}
		if !op.Meta {
			data = true
		}
	}
	if meta && data {
		// A metadata transaction involves every group and queues behind
		// data transactions (M4); mixing data operations into it would make
		// every schema change a cross-group data transaction too.
		return fmt.Errorf("%w: a metadata transaction cannot carry data operations", ErrInvalid)
	}
	return nil
}

func (l Limits) checkOp(op *Op) error {
	if !op.Kind.valid() {
		return fmt.Errorf("%w: unknown kind %d", ErrInvalid, op.Kind)
	}
	if len(op.Key) > l.MaxKeyBytes || len(op.End) > l.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, at most %d", ErrTooLarge, max(len(op.Key), len(op.End)), l.MaxKeyBytes)
	}
	if len(op.Value) > l.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, at most %d", ErrTooLarge, len(op.Value), l.MaxValueBytes)
	}
	if op.Absent && op.Kind != OpCmp {
		return fmt.Errorf("%w: %s cannot be absent", ErrInvalid, op.Kind)
	}
	if op.Value != nil && (!op.Kind.hasValue() || op.Absent) {
		return fmt.Errorf("%w: %s carries no value", ErrInvalid, op.Kind)
	}
	if !op.Kind.IsRange() {
		if len(op.Key) == 0 {
			return fmt.Errorf("%w: empty key", ErrInvalid)
		}
		if op.End != nil || op.Limit != 0 || op.Digests != nil {
			return fmt.Errorf("%w: %s has no range, limit or digests", ErrInvalid, op.Kind)
		}
		return nil
	}
	if op.End != nil && bytes.Compare(op.End, op.Key) <= 0 {
		return fmt.Errorf("%w: range end does not sort after its start", ErrInvalid)
	}
	if op.Limit == 0 || int64(op.Limit) > int64(l.MaxRangeLimit) {
		return fmt.Errorf("%w: limit %d, want 1..%d", ErrInvalid, op.Limit, l.MaxRangeLimit)
	}
	if op.Kind == OpReadRange {
		if op.Digests != nil {
			return fmt.Errorf("%w: read-range carries no digests", ErrInvalid)
		}
		return nil
	}
	if len(op.Digests) == 0 {
		return fmt.Errorf("%w: cmp-range without digests", ErrInvalid)
	}
	for j := 1; j < len(op.Digests); j++ {
		if op.Digests[j].Group <= op.Digests[j-1].Group {
			return fmt.Errorf("%w: cmp-range digest groups not strictly increasing", ErrInvalid)
		}
	}
	return nil
}

// CheckEncoded decodes a transaction encoding and checks it (Check) and its
// size.
func (l Limits) CheckEncoded(enc []byte) (*Txn, error) {
	if len(enc) > l.MaxTxnBytes {
		return nil, fmt.Errorf("%w: transaction of %d bytes, at most %d", ErrTooLarge, len(enc), l.MaxTxnBytes)
	}
	t, err := Decode(enc)
	if err != nil {
		return nil, err
	}
	if err := l.Check(t); err != nil {
		return nil, err
	}
	return t, nil
}
