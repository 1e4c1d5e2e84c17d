package txn

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Reserved metadata keys. Keys of the metadata keyspace that start with 0x00
// belong to the system: transactions may read and compare them, but only the
// partition map may be written, with `write`, and only by a metadata
// transaction (M1, M3); the version key is written by the engine alone (M2).
var (
	// MetaVersionKey holds a group's metadata version, 8 bytes big-endian
	// (M2). Every metadata transaction increments it in every group.
	MetaVersionKey = []byte("\x00version")
	// MetaPartitionsKey holds the partition map (M1, M3), encoded by
	// pkg/txn/oracle.
	MetaPartitionsKey = []byte("\x00partitions")
)

// IsReservedMetaKey reports whether a metadata key belongs to the system.
func IsReservedMetaKey(key []byte) bool { return len(key) > 0 && key[0] == 0 }

// EncodeVersion encodes a metadata version as stored under MetaVersionKey.
func EncodeVersion(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// DecodeVersion decodes a value stored under MetaVersionKey.
func DecodeVersion(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: metadata version of %d bytes, want 8", ErrMalformed, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// Router maps keys to groups: pkg/txn/oracle's partition maps implement it.
// Clients route with it (K1) and groups check the declared set with it (T5),
// through the same InvolvedGroups.
type Router interface {
	// KeyGroup returns the group that holds key.
	KeyGroup(key []byte) bft.GroupID
	// AppendRangeGroups appends to dst, in increasing order without
	// duplicates, every group that holds part of [start, end) (end nil:
	// unbounded) — under range partitioning the groups whose ranges meet
	// it, under hash partitioning every group of the hashed range.
	AppendRangeGroups(dst []bft.GroupID, start, end []byte) []bft.GroupID
}

// InvolvedGroups returns, in increasing order, the groups the data operations
// of ops involve under r (T5). Metadata operations involve no group by
// themselves: they run at every declared group.
func InvolvedGroups(ops []Op, r Router) []bft.GroupID {
	var gs []bft.GroupID
	for i := range ops {
		op := &ops[i]
		if op.Meta {
			continue
		}
		if op.Kind.IsRange() {
			gs = r.AppendRangeGroups(gs, op.Key, op.End)
		} else {
			gs = append(gs, r.KeyGroup(op.Key))
		}
	}
	slices.Sort(gs)
	return slices.Compact(gs)
}

// Builder collects the operations of a transaction. It keeps references to
// the keys and values it is given; do not change them until the transaction
// is encoded.
type Builder struct {
	ops []Op
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

// Add appends an operation as is.
func (b *Builder) Add(op Op) *Builder { b.ops = append(b.ops, op); return b }

// Cmp compares key's committed value with value.
func (b *Builder) Cmp(key, value []byte) *Builder {
	return b.Add(Op{Kind: OpCmp, Key: key, Value: nonNil(value)})
}

// CmpAbsent succeeds iff key does not exist.
func (b *Builder) CmpAbsent(key []byte) *Builder {
	return b.Add(Op{Kind: OpCmp, Key: key, Absent: true})
}

// Read reads key.
func (b *Builder) Read(key []byte) *Builder { return b.Add(Op{Kind: OpRead, Key: key}) }

// ReadRange reads at most limit present entries of [start, end) (end nil:
// unbounded).
func (b *Builder) ReadRange(start, end []byte, limit uint32) *Builder {
	return b.Add(Op{Kind: OpReadRange, Key: nonNil(start), End: end, Limit: limit})
}

// Insert sets key to value if key is absent.
func (b *Builder) Insert(key, value []byte) *Builder {
	return b.Add(Op{Kind: OpInsert, Key: key, Value: nonNil(value)})
}

// Write sets key to value if key exists.
func (b *Builder) Write(key, value []byte) *Builder {
	return b.Add(Op{Kind: OpWrite, Key: key, Value: nonNil(value)})
}

// Delete deletes key if it exists.
func (b *Builder) Delete(key []byte) *Builder { return b.Add(Op{Kind: OpDelete, Key: key}) }

// CmpRange guards [start, end) with one RangeDigest per involved group,
// covering at most limit entries at each.
func (b *Builder) CmpRange(start, end []byte, limit uint32, digests []GroupDigest) *Builder {
	return b.Add(Op{Kind: OpCmpRange, Key: nonNil(start), End: end, Limit: limit, Digests: digests})
}

// Meta marks the last operation added as one on the metadata keyspace.
func (b *Builder) Meta() *Builder {
	if n := len(b.ops); n > 0 {
		b.ops[n-1].Meta = true
	}
	return b
}

// Ops returns the operations collected so far.
func (b *Builder) Ops() []Op { return b.ops }

// Header is what a transaction carries besides its operations and groups.
type Header struct {
	Owner     bft.ClientID
	Nonce     uint64
	Watermark uint64
}

// Build returns the transaction over the declared groups (with the metadata
// versions the client holds, K1), checked against limits.
func (b *Builder) Build(h Header, groups []GroupVersion, limits Limits) (*Txn, error) {
	t := &Txn{Ops: slices.Clone(b.ops), Groups: slices.Clone(groups), Owner: h.Owner, Nonce: h.Nonce, Watermark: h.Watermark}
	if err := limits.Check(t); err != nil {
		return nil, err
	}
	return t, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
