package storage

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultChunkBytes is a reasonable chunk size for Export.
const DefaultChunkBytes = 1 << 20

// Export streams the snapshot's replicated keyspaces as a checkpoint stream:
// chunks numbered from 0, entries in increasing (keyspace, key) order, each
// chunk's encoding at most chunkBytes long unless a single entry is larger
// (then that entry travels alone) and at most MaxChunkEntries entries, the
// last chunk Final. The stream depends
// only on the snapshot's contents and chunkBytes, so replicas with the same
// state produce the same chunks.
//
// The chunk passed to fn, and the slices in it, are valid only during the
// call: fn must Marshal or Clone what it keeps. An error from fn, or ctx
// being done, ends the export and is returned.
func (s *Snapshot) Export(ctx context.Context, chunkBytes int, fn func(Chunk) error) error {
	if chunkBytes <= 0 || chunkBytes > MaxChunkSize {
		return fmt.Errorf("storage: export: %w: chunk size %d not in [1, %d]", ErrInvalidArgument, chunkBytes, MaxChunkSize)
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.done()
	it, err := s.s.NewIter(&pebble.IterOptions{LowerBound: replicatedDataLower, UpperBound: replicatedDataUpper})
	if err != nil {
		return fmt.Errorf("storage: export: %w", err)
	}
	x := exporter{ctx: ctx, fn: fn, limit: chunkBytes}
	x.arena = make([]byte, 0, min(chunkBytes, 1<<20))
	x.reset()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("storage: export: %w", err)
		}
		if err := x.add(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("storage: export: %w", err)
	}
	x.chunk.Final = true
	return x.emit()
}

// exporter cuts entries into chunks, reusing one chunk and one arena.
type exporter struct {
	ctx   context.Context
	fn    func(Chunk) error
	limit int
	chunk Chunk
	arena []byte
	size  int // encoded size of chunk
}

func (x *exporter) reset() {
	clear(x.chunk.Entries)
	x.chunk.Entries = x.chunk.Entries[:0]
	x.arena = x.arena[:0]
	x.size = 2 + uvarintLen(x.chunk.Index) + 1
}

// add appends an entry (engine key k, value v), emitting the current chunk
// first if the entry would overflow it. The count's varint grows with the
// entries, so size is recomputed exactly rather than estimated.
func (x *exporter) add(k, v []byte) error {
	es := encodedEntrySize(len(k)-1, len(v))
	n := len(x.chunk.Entries)
	grown := x.size + es + uvarintLen(uint64(n+1)) - uvarintLen(uint64(n))
	if n > 0 && (grown > x.limit || n == MaxChunkEntries) {
		if err := x.emit(); err != nil {
			return err
		}
		x.chunk.Index++
		x.reset()
		grown = x.size + es
	}
	start := len(x.arena)
	x.arena = append(x.arena, k[1:]...)
	x.arena = append(x.arena, v...)
	key := x.arena[start : start+len(k)-1 : start+len(k)-1]
	value := x.arena[start+len(k)-1 : len(x.arena) : len(x.arena)]
	x.chunk.Entries = append(x.chunk.Entries, Entry{Keyspace: Keyspace(k[0]), Key: key, Value: value})
	x.size = grown
	return nil
}

func (x *exporter) emit() error {
	if err := x.ctx.Err(); err != nil {
		return fmt.Errorf("storage: export: %w", err)
	}
	return x.fn(x.chunk)
}
