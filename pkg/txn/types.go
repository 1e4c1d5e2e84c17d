package txn

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
)

// TxnID identifies a transaction: the SHA-256 of a domain tag (the cluster id
// and "txn") and the transaction's canonical encoding (txn.md T2).
type TxnID [32]byte

// String prints a short hex prefix.
func (id TxnID) String() string { return hex.EncodeToString(id[:4]) }

// OpKind is the kind of an operation (txn.md T1, Table 1 of the paper plus
// cmp-range).
type OpKind uint8

// The operations. Their values are part of the canonical encoding.
const (
	// OpCmp compares the committed value of Key with Value (equality), or,
	// with Absent, succeeds iff Key does not exist. It returns nothing.
	OpCmp OpKind = 1 + iota
	// OpRead returns the value of Key or "absent"; an absent read still
	// locks Key.
	OpRead
	// OpReadRange returns the present entries of [Key, End) in key order, at
	// most Limit; it stopped early iff it returned Limit entries.
	OpReadRange
	// OpInsert sets Key to Value if Key is absent.
	OpInsert
	// OpWrite sets Key to Value if Key exists.
	OpWrite
	// OpDelete deletes Key if it exists.
	OpDelete
	// OpCmpRange succeeds at a group iff the RangeDigest of the group's
	// present entries of [Key, End) equals the digest it carries for that
	// group (SQL range guards). At most Limit entries are compared: a range
	// holding more fails.
	OpCmpRange
)

// String returns the operation's name as txn.md writes it.
func (k OpKind) String() string {
	switch k {
	case OpCmp:
		return "cmp"
	case OpRead:
		return "read"
	case OpReadRange:
		return "read-range"
	case OpInsert:
		return "insert"
	case OpWrite:
		return "write"
	case OpDelete:
		return "delete"
	case OpCmpRange:
		return "cmp-range"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

func (k OpKind) valid() bool { return k >= OpCmp && k <= OpCmpRange }

// IsRange reports whether the operation covers a key range.
func (k OpKind) IsRange() bool { return k == OpReadRange || k == OpCmpRange }

// IsUpdate reports whether the operation changes the store.
func (k OpKind) IsUpdate() bool { return k == OpInsert || k == OpWrite || k == OpDelete }

// hasValue reports whether the operation carries a value (cmp carries one
// unless Absent).
func (k OpKind) hasValue() bool { return k == OpCmp || k == OpInsert || k == OpWrite }

// GroupDigest is the digest a cmp-range carries for one group.
type GroupDigest struct {
	Group  bft.GroupID
	Digest [32]byte
}

// Op is one operation of a transaction.
type Op struct {
	Kind OpKind
	// Meta selects the metadata keyspace (M1) instead of user data.
	// Metadata is replicated in every group, so a metadata operation runs at
	// every group the transaction declares. Updates of metadata make the
	// transaction a metadata transaction (M4, M5).
	Meta bool
	// Key is the key of a point operation (non-empty) and the start of a
	// range (possibly empty: the first key).
	Key []byte
	// End is the exclusive end of a range; nil means unbounded. A non-nil
	// End sorts after Key.
	End []byte
	// Value is the value of cmp, insert and write.
	Value []byte
	// Absent makes a cmp succeed iff Key does not exist (Value is then nil).
	Absent bool
	// Limit bounds the entries of a read-range or a cmp-range (at least 1).
	Limit uint32
	// Digests are a cmp-range's digests, one per group the range involves,
	// in increasing group order.
	Digests []GroupDigest
}

// GroupVersion is one involved group with the metadata version the client
// holds for it: the transaction carries cmp(metadata-version, Version) for
// every group it involves (M2, K1).
type GroupVersion struct {
	Group   bft.GroupID
	Version uint64
}

// Txn is a short transaction (T2): its operations, the groups it involves
// with their metadata versions, its owner, the owner's nonce and the owner's
// watermark (W1).
type Txn struct {
	Ops []Op
	// Groups are the involved groups in strictly increasing order.
	Groups []GroupVersion
	// Owner is the owner's client id, its 32-byte Ed25519 public key.
	Owner bft.ClientID
	// Nonce is the owner's sequence number for the transaction.
	Nonce uint64
	// Watermark states that every transaction of the owner with a lower
	// nonce is terminated in every group (W1). It is at most Nonce.
	Watermark uint64
}

// OwnerSize is the size of an owner id.
const OwnerSize = 32

// ReadOnly reports whether the transaction has no update operation. It is
// decided on the whole transaction, never per group.
func (t *Txn) ReadOnly() bool {
	for i := range t.Ops {
		if t.Ops[i].Kind.IsUpdate() {
			return false
		}
	}
	return true
}

// WritesMetadata reports whether the transaction updates the metadata
// keyspace: it is then a metadata transaction (M1, M4, M5).
func (t *Txn) WritesMetadata() bool {
	for i := range t.Ops {
		if t.Ops[i].Meta && t.Ops[i].Kind.IsUpdate() {
			return true
		}
	}
	return false
}

// MultiGroup reports whether the transaction involves more than one group.
func (t *Txn) MultiGroup() bool { return len(t.Groups) > 1 }

// Involves reports whether g is a declared group, and its metadata version.
func (t *Txn) Involves(g bft.GroupID) (uint64, bool) {
	for _, gv := range t.Groups {
		if gv.Group == g {
			return gv.Version, true
		}
		if gv.Group > g {
			break
		}
	}
	return 0, false
}

// GroupIDs returns the declared groups.
func (t *Txn) GroupIDs() []bft.GroupID {
	out := make([]bft.GroupID, len(t.Groups))
	for i, gv := range t.Groups {
		out[i] = gv.Group
	}
	return out
}

// Kind classifies a transaction for metrics and for the protocol's paths.
type Kind uint8

// Transaction kinds.
const (
	// KindSingle: one group; the fast path of §3.5.1 (E7).
	KindSingle Kind = 1 + iota
	// KindMultiRead: several groups, read-only (E8).
	KindMultiRead
	// KindMultiUpdate: several groups with updates (E9, E10).
	KindMultiUpdate
	// KindMeta: updates the metadata keyspace (M1–M5); it involves every
	// group.
	KindMeta
)

// String names the kind (bounded metric label values).
func (k Kind) String() string {
	switch k {
	case KindSingle:
		return "single"
	case KindMultiRead:
		return "multi_read"
	case KindMultiUpdate:
		return "multi_update"
	case KindMeta:
		return "meta"
	}
	return "unknown"
}

// Kind returns the transaction's kind.
func (t *Txn) Kind() Kind {
	switch {
	case t.WritesMetadata():
		return KindMeta
	case !t.MultiGroup():
		return KindSingle
	case t.ReadOnly():
		return KindMultiRead
	}
	return KindMultiUpdate
}

// Decision is a vote or an outcome.
type Decision uint8

// Decisions. Their values are part of signed bytes.
const (
	Commit Decision = 1
	Abort  Decision = 2
)

// String returns "commit" or "abort".
func (d Decision) String() string {
	switch d {
	case Commit:
		return "commit"
	case Abort:
		return "abort"
	}
	return fmt.Sprintf("decision(%d)", uint8(d))
}

func (d Decision) valid() bool { return d == Commit || d == Abort }

// Equal reports whether two transactions are the same, treating nil and
// empty byte strings alike (the encoding does not tell them apart, except
// for a range's End, where nil means unbounded).
func (t *Txn) Equal(o *Txn) bool {
	if t.Owner != o.Owner || t.Nonce != o.Nonce || t.Watermark != o.Watermark ||
		len(t.Groups) != len(o.Groups) || len(t.Ops) != len(o.Ops) {
		return false
	}
	for i := range t.Groups {
		if t.Groups[i] != o.Groups[i] {
			return false
		}
	}
	for i := range t.Ops {
		a, b := &t.Ops[i], &o.Ops[i]
		if a.Kind != b.Kind || a.Meta != b.Meta || a.Absent != b.Absent || a.Limit != b.Limit ||
			!bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) ||
			(a.End == nil) != (b.End == nil) || !bytes.Equal(a.End, b.End) ||
			len(a.Digests) != len(b.Digests) {
			return false
		}
		for j := range a.Digests {
			if a.Digests[j] != b.Digests[j] {
				return false
			}
		}
	}
	return true
}
