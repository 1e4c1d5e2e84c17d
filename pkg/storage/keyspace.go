package storage

import (
	"fmt"
)

// Keyspace names a disjoint part of the store. Its value is the one-byte
// prefix in front of every key of the keyspace; the values are part of the
// on-disk format and of the state digest, so they never change.
type Keyspace byte

// The exported keyspaces. UserData, Metadata, TxnRecords and ReplyCache are
// replicated (digested, exported in checkpoints, replaced by
// InstallCheckpoint); BFTState is local to the replica.
const (
	// BFTState holds replica-local protocol state: the PBFT log, hard state,
	// the last executed sequence number.
	BFTState Keyspace = 0x02
	// UserData holds application rows.
	UserData Keyspace = 0x10
	// Metadata holds schema and placement descriptors.
	Metadata Keyspace = 0x11
	// TxnRecords holds pending transactions, votes and outcomes.
	TxnRecords Keyspace = 0x12
	// ReplyCache holds the last reply to each client.
	ReplyCache Keyspace = 0x13
)

// Internal keyspaces and the layout of the replicated span.
//
// The replicated span [replicatedSpanStart, replicatedSpanEnd) holds the four
// replicated keyspaces and, after them, ksReplicatedMeta, whose only key is
// the persisted digest. Installing a checkpoint replaces the whole span in one
// atomic ingestion, so the digest is replaced together with the data it
// covers.
const (
	// ksLocal holds the engine's replica-local records (the format marker).
	ksLocal Keyspace = 0x01
	// ksReplicatedMeta holds the persisted digest of the replicated span.
	ksReplicatedMeta Keyspace = 0x1f

	replicatedSpanStart = byte(UserData)
	replicatedDataEnd   = byte(ReplyCache) + 1 // exclusive end of the digested data
	replicatedSpanEnd   = byte(ksReplicatedMeta) + 1
)

var (
	formatKey = []byte{byte(ksLocal), 'f', 'o', 'r', 'm', 'a', 't'}
	digestKey = []byte{byte(ksReplicatedMeta), 'd', 'i', 'g', 'e', 's', 't'}

	// formatVersion identifies the key layout and the digest construction
	// (1: LtHash expanded with BLAKE2X; 2: with SHA-256 and AES-256-CTR).
	formatVersion = []byte{2}

	replicatedDataLower = []byte{replicatedSpanStart}
	replicatedDataUpper = []byte{replicatedDataEnd}
	replicatedSpanLower = []byte{replicatedSpanStart}
	replicatedSpanUpper = []byte{replicatedSpanEnd}
)

// ReplicatedKeyspaces returns the replicated keyspaces in key order.
func ReplicatedKeyspaces() []Keyspace {
	return []Keyspace{UserData, Metadata, TxnRecords, ReplyCache}
}

// Valid reports whether ks is one of the exported keyspaces.
func (ks Keyspace) Valid() bool {
	switch ks {
	case BFTState, UserData, Metadata, TxnRecords, ReplyCache:
		return true
	}
	return false
}

// Replicated reports whether ks is covered by the digest and by checkpoint
// streams.
func (ks Keyspace) Replicated() bool {
	switch ks {
	case UserData, Metadata, TxnRecords, ReplyCache:
		return true
	}
	return false
}

// String returns the keyspace's name.
func (ks Keyspace) String() string {
	switch ks {
	case BFTState:
		return "bft-state"
	case UserData:
		return "user-data"
	case Metadata:
		return "metadata"
	case TxnRecords:
		return "txn-records"
	case ReplyCache:
		return "reply-cache"
	case ksLocal:
		return "local"
	case ksReplicatedMeta:
		return "replicated-meta"
	}
	return fmt.Sprintf("keyspace(%#02x)", byte(ks))
}

// AppendKey appends the engine key of (ks, key) — the keyspace prefix
// followed by key — to dst and returns the extended slice.
func AppendKey(dst []byte, ks Keyspace, key []byte) []byte {
	dst = append(dst, byte(ks))
	return append(dst, key...)
}

// MakeKey returns the engine key of (ks, key) in a new slice.
func MakeKey(ks Keyspace, key []byte) []byte {
	return AppendKey(make([]byte, 0, 1+len(key)), ks, key)
}

// ParseKey splits an engine key into its exported keyspace and the caller's
// key. The returned key aliases engineKey.
func ParseKey(engineKey []byte) (Keyspace, []byte, error) {
	if len(engineKey) == 0 {
		return 0, nil, fmt.Errorf("storage: parse key: %w", ErrEmptyKey)
	}
	ks := Keyspace(engineKey[0])
	if !ks.Valid() {
		return 0, nil, fmt.Errorf("storage: parse key: %w: prefix %#02x", ErrInvalidKeyspace, engineKey[0])
	}
	if len(engineKey) == 1 {
		return 0, nil, fmt.Errorf("storage: parse key in %s: %w", ks, ErrEmptyKey)
	}
	return ks, engineKey[1:], nil
}

// checkKeyspace reports an error unless ks is an exported keyspace.
func checkKeyspace(ks Keyspace) error {
	if !ks.Valid() {
		return fmt.Errorf("%w: %#02x", ErrInvalidKeyspace, byte(ks))
	}
	return nil
}

// checkKey reports an error unless key is a valid key.
func checkKey(key []byte) error {
	switch {
	case len(key) == 0:
		return ErrEmptyKey
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: %d bytes (max %d)", ErrKeyTooLarge, len(key), MaxKeySize)
	}
	return nil
}

// checkValue reports an error unless value is a valid value.
func checkValue(value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrValueTooLarge, len(value), MaxValueSize)
	}
	return nil
}

// checkEntry validates a (keyspace, key, value) element.
func checkEntry(ks Keyspace, key, value []byte) error {
	if err := checkKeyspace(ks); err != nil {
		return err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	return checkValue(value)
}
