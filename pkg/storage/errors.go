package storage

import "errors"

var (
	// ErrNotFound is returned by Get when the key is absent.
	ErrNotFound = errors.New("storage: not found")
	// ErrClosed is returned by every call on a closed Engine or Snapshot, or
	// on a closed Batch.
	ErrClosed = errors.New("storage: closed")
	// ErrInvalidKeyspace is returned when a keyspace is not one of the
	// exported keyspaces, or not allowed where it is used.
	ErrInvalidKeyspace = errors.New("storage: invalid keyspace")
	// ErrEmptyKey is returned when a key is empty.
	ErrEmptyKey = errors.New("storage: empty key")
	// ErrKeyTooLarge is returned when a key exceeds MaxKeySize.
	ErrKeyTooLarge = errors.New("storage: key too large")
	// ErrValueTooLarge is returned when a value exceeds MaxValueSize.
	ErrValueTooLarge = errors.New("storage: value too large")
	// ErrInvalidRange is returned when a range's start sorts after its end.
	ErrInvalidRange = errors.New("storage: invalid range")
	// ErrInvalidArgument is returned for other malformed arguments.
	ErrInvalidArgument = errors.New("storage: invalid argument")
	// ErrBatchCommitted is returned when a batch is written to or committed
	// again after a commit, without Reset.
	ErrBatchCommitted = errors.New("storage: batch already committed")
	// ErrForeignBatch is returned when a batch is committed to an engine
	// other than the one that created it.
	ErrForeignBatch = errors.New("storage: batch belongs to another engine")
	// ErrNotIndexed is returned by reads on a batch made by NewBatch rather
	// than NewIndexedBatch.
	ErrNotIndexed = errors.New("storage: batch is not indexed")
	// ErrReplicatedRangeDelete is returned by Batch.DeleteRange on a
	// replicated keyspace: the digest needs every deleted element.
	ErrReplicatedRangeDelete = errors.New("storage: range delete on a replicated keyspace")
	// ErrStopScan may be returned by a Scan callback to end the scan early
	// without an error.
	ErrStopScan = errors.New("storage: stop scan")
	// ErrInvalidChunk is returned for a checkpoint chunk that does not decode
	// or whose content is not allowed (keyspace, sizes, order inside it).
	ErrInvalidChunk = errors.New("storage: invalid checkpoint chunk")
	// ErrChunkOrder is returned by InstallCheckpoint for chunks out of
	// sequence, keys out of order or duplicated across chunks, chunks after
	// the final chunk, or a stream that ends without its final chunk.
	ErrChunkOrder = errors.New("storage: checkpoint stream out of order")
	// ErrDigestMismatch is returned by InstallCheckpoint when the digest of
	// the received state differs from the expected one; nothing is applied.
	ErrDigestMismatch = errors.New("storage: checkpoint digest mismatch")
	// ErrCorrupt is returned when the store's own records are missing or
	// inconsistent (for example the persisted digest does not match the
	// contents).
	ErrCorrupt = errors.New("storage: corrupt store")
	// ErrIncompatibleFormat is returned by Open for a store written in a
	// format this version does not read.
	ErrIncompatibleFormat = errors.New("storage: incompatible store format")
)
