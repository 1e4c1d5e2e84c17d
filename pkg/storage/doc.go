// Package storage is the pebble storage engine of an Augustus replica.
//
// It owns, for one replica:
//
//   - the pebble store and its on-disk directory (Open creates the directory
//     and fsyncs its parent so that a crash cannot lose the store);
//   - keyspaces: every key lives in exactly one Keyspace, a one-byte prefix in
//     front of the caller's arbitrary key bytes. UserData, Metadata,
//     TxnRecords and ReplyCache are replicated: every correct replica holds
//     the same contents at the same sequence number, they are covered by the
//     state digest and they travel in checkpoint streams. BFTState is
//     replica-local (the protocol log, hard state, the last executed sequence
//     number): it is neither digested nor exported, and installing a
//     checkpoint leaves it untouched. Two internal keyspaces hold the engine's
//     own records (a format marker, the persisted digest);
//   - atomic write batches (Batch, Engine.Commit), point reads, ordered range
//     scans and consistent snapshots (Snapshot);
//   - the state digest: an LtHash (Digest) over every (keyspace, key, value)
//     element of the replicated keyspaces, updated incrementally inside the
//     same pebble batch as the writes it covers, persisted, and recomputable
//     by a full scan. Its 32-byte Sum is what PBFT checkpoints carry;
//   - checkpoint streams for state transfer: Snapshot.Export cuts the
//     replicated keyspaces into bounded, deterministic, self-contained Chunks
//     with a versioned binary encoding; Engine.InstallCheckpoint replaces the
//     replicated keyspaces with a stream's content atomically and crash-safely,
//     after checking the stream against the digest of a checkpoint certificate.
//
// # Limits
//
// Keys must be non-empty and at most MaxKeySize bytes; values at most
// MaxValueSize bytes (an empty value is a value: a key set to an empty value
// is present). An encoded chunk is at most MaxChunkSize bytes and holds at
// most MaxChunkEntries entries. Scans take
// half-open bounds [start, end) inside one keyspace; nil means the start or
// end of the keyspace.
//
// # Range deletions
//
// Batch.DeleteRange is allowed on BFTState only (the replica prunes its log by
// sequence-number range). It is refused on replicated keyspaces with
// ErrReplicatedRangeDelete, because the digest needs the old value of every
// deleted element and a range tombstone does not name them: callers delete
// replicated keys one by one.
//
// # Row cache
//
// Point reads of replicated keys through an indexed batch (Batch.Get, the
// transaction engine's reads) are answered from a row cache when it holds
// the key: committed values of keys read or written lately, kept outside the
// Go heap (rowcache.go; Options.RowCacheSize). Every change of the committed
// replicated state updates it under the same lock that moves the state's
// generation, so a read from it is the read pebble would give.
//
// # Concurrency
//
// Engine and Snapshot are safe for concurrent use; a Batch is not. Commits
// that touch replicated keyspaces are serialized by the engine (the digest
// update reads old values and must see every earlier commit); commits that
// touch only BFTState take no engine lock and do no digest work. Close waits
// for in-flight calls, including running Exports, to return.
//
// # Crash model
//
// A batch committed with sync=true is durable when Commit returns. Batches are
// atomic: after a crash a batch is either wholly present or wholly absent, and
// the persisted digest always matches the contents because it is written in
// the same batch. Local I/O errors are reported and must stop the replica: the
// engine does not try to continue past a failed fsync.
//
// The tests check this with real processes killed by SIGKILL and in-process
// with pebble's vfs.NewCrashableMem and MemFS.CrashClone (pebble v2's
// successor of NewStrictMem and ResetToSyncedState): a crash clone keeps only
// what was fsynced, directory entries included.
//
// # Cost
//
// The digest costs one element expansion (SHA-256 then 2 KiB of AES-256-CTR
// keystream, about 1 µs on the reference machine, see
// docs/benchmarks/storage.md) per inserted or deleted element and two per
// overwrite, and each replicated commit rewrites the 2 KiB digest
// record: commit many writes per batch, as the executor does (one batch per
// PBFT batch).
//
// # Imports
//
// This package imports no other Augustus package (see
// internal/archtest): it is the bottom layer, used by
// pkg/txn/partition through the replica's Application.
package storage

const (
	// MaxKeySize is the largest key, in bytes, excluding the keyspace prefix.
	MaxKeySize = 64 << 10
	// MaxValueSize is the largest value, in bytes.
	MaxValueSize = 32 << 20
	// MaxChunkSize is the largest encoded checkpoint chunk UnmarshalChunk
	// accepts. It leaves room for one entry of the largest key and value.
	MaxChunkSize = 64 << 20
	// MaxChunkEntries is the most entries a checkpoint chunk may hold, which
	// bounds the memory a decoded chunk takes beyond its encoding.
	MaxChunkEntries = 1 << 16
)
