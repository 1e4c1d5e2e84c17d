package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// defaultStagingFileSize is the target size of a staged sstable.
const defaultStagingFileSize = 64 << 20

// InstallCheckpoint replaces the contents of the replicated keyspaces with the
// checkpoint stream that next yields (io.EOF after the last chunk), provided
// the stream's state digests to expectedSum; BFTState is left untouched.
//
// The stream is checked as it arrives — chunks numbered from 0, entries valid
// and in strictly increasing (keyspace, key) order across the whole stream, a
// Final chunk last — and staged as sstables in a directory inside the store.
// Only when the digest of everything received matches expectedSum is the
// staged state ingested, in one atomic step that also replaces the persisted
// digest: each staged sstable carries a range tombstone over its part of the
// replicated span, so the old contents vanish exactly when the new appear.
// A crash before that step leaves the old state (Open removes the staging
// directory), a crash after it the new one.
//
// A stream that does not verify is rejected with an error wrapping
// ErrDigestMismatch, ErrChunkOrder or ErrInvalidChunk and changes nothing;
// the caller can retry with another peer. Errors from next are returned
// wrapped. Open snapshots keep seeing the state they were taken at. Commits to
// replicated keyspaces wait while the ingestion runs; a replica does not
// execute during state transfer anyway.
func (e *Engine) InstallCheckpoint(ctx context.Context, next func() (Chunk, error), expectedSum [SumSize]byte) error {
	err := e.installCheckpoint(ctx, next, expectedSum)
	switch {
	case err == nil:
		e.metrics.install("installed")
	case errors.Is(err, ErrDigestMismatch), errors.Is(err, ErrChunkOrder), errors.Is(err, ErrInvalidChunk):
		e.metrics.install("rejected")
	default:
		e.metrics.install("failed")
	}
	return err
}

func (e *Engine) installCheckpoint(ctx context.Context, next func() (Chunk, error), expectedSum [SumSize]byte) error {
	e.installMu.Lock()
	defer e.installMu.Unlock()
	if err := e.acquire(); err != nil {
		return err
	}
	wopts := e.popts.MakeWriterOptions(0, e.db.TableFormat())
	e.release()

	st, err := newStager(e.fs, e.fs.PathJoin(e.dir, stagingDirName), wopts, e.stagingFileSize())
	if err != nil {
		return fmt.Errorf("storage: install checkpoint: %w", err)
	}
	defer st.cleanup()

	digest, err := receive(ctx, next, st)
	if err != nil {
		return fmt.Errorf("storage: install checkpoint: %w", err)
	}
	if got := digest.Sum(); got != expectedSum {
		return fmt.Errorf("storage: install checkpoint: %w: stream digests to %x, expected %x",
			ErrDigestMismatch, got[:8], expectedSum[:8])
	}
	if err := st.finish(digest); err != nil {
		return fmt.Errorf("storage: install checkpoint: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: install checkpoint: %w", err)
	}
	if err := e.ingest(ctx, st.paths, digest); err != nil {
		return fmt.Errorf("storage: install checkpoint: %w", err)
	}
	e.metrics.wroteBytes(st.bytes)
	return nil
}

func (e *Engine) stagingFileSize() int64 {
	if e.opts.stagingFileSize > 0 {
		return e.opts.stagingFileSize
	}
	return defaultStagingFileSize
}

// receive validates the stream, stages its entries and returns their digest.
func receive(ctx context.Context, next func() (Chunk, error), st *stager) (Digest, error) {
	var digest Digest
	h := newElementHasher()
	var key, prev []byte
	var index uint64
	final := false
	for {
		if err := ctx.Err(); err != nil {
			return Digest{}, err
		}
		c, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Digest{}, fmt.Errorf("next chunk %d: %w", index, err)
		}
		if final {
			return Digest{}, fmt.Errorf("%w: chunk %d after the final chunk", ErrChunkOrder, c.Index)
		}
		if c.Index != index {
			return Digest{}, fmt.Errorf("%w: chunk %d where chunk %d was expected", ErrChunkOrder, c.Index, index)
		}
		if len(c.Entries) > MaxChunkEntries {
			return Digest{}, fmt.Errorf("%w: chunk %d has %d entries (max %d)", ErrInvalidChunk, c.Index, len(c.Entries), MaxChunkEntries)
		}
		for i := range c.Entries {
			ent := &c.Entries[i]
			if err := validateEntry(ent); err != nil {
				return Digest{}, fmt.Errorf("%w: chunk %d entry %d: %w", ErrInvalidChunk, c.Index, i, err)
			}
			key = AppendKey(key[:0], ent.Keyspace, ent.Key)
			if prev != nil && bytes.Compare(prev, key) >= 0 {
				return Digest{}, fmt.Errorf("%w: chunk %d entry %d: key %q in %s does not follow the previous key",
					ErrChunkOrder, c.Index, i, truncKey(ent.Key), ent.Keyspace)
			}
			if err := st.add(key, ent.Value); err != nil {
				return Digest{}, err
			}
			digest.addLanes(h.expand(ent.Keyspace, ent.Key, ent.Value))
			key, prev = prev, key
		}
		final = c.Final
		index++
	}
	if !final {
		return Digest{}, fmt.Errorf("%w: stream ended after %d chunks without the final chunk", ErrChunkOrder, index)
	}
	return digest, nil
}

// ingest atomically replaces the replicated span with the staged sstables
// and installs digest as the engine's digest.
func (e *Engine) ingest(ctx context.Context, paths []string, digest Digest) error {
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	// The replicated span changes (or may have): invalidate every batch's
	// cached point-read iterator (Batch.pointIter) and the row cache.
	defer e.rowsChanged()
	if err := e.db.Ingest(ctx, paths); err != nil {
		// An ingestion either happens whole or not at all; re-read the
		// persisted digest so memory follows whichever it was.
		if d, rerr := readDigest(e.db); rerr == nil {
			e.digest = d
		}
		return fmt.Errorf("ingest: %w", err)
	}
	e.digest = digest
	return nil
}

// stager writes a checkpoint's entries into sstables that together cover the
// replicated span [replicatedSpanStart, replicatedSpanEnd) without overlap:
// file i holds a range tombstone over [start_i, start_{i+1}) and the entries
// in that range, where start_0 is the span's start, start_{i+1} is the first
// key of file i+1, and the last file ends at the span's end and also holds
// the new persisted digest. A range tombstone in an ingested sstable deletes
// older keys but not the sstable's own, which share its sequence number.
type stager struct {
	fs     vfs.FS
	dir    string
	wopts  sstable.WriterOptions
	target int64

	w       *sstable.Writer
	start   []byte // range tombstone start of the open file
	written int64  // key and value bytes in the open file
	bytes   int64  // key and value bytes in all files
	paths   []string
}

func newStager(fs vfs.FS, dir string, wopts sstable.WriterOptions, target int64) (*stager, error) {
	if err := fs.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear staging directory: %w", err)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create staging directory: %w", err)
	}
	return &stager{fs: fs, dir: dir, wopts: wopts, target: target}, nil
}

func (st *stager) open(start []byte) error {
	path := st.fs.PathJoin(st.dir, fmt.Sprintf("%06d.sst", len(st.paths)))
	f, err := st.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create staged sstable: %w", err)
	}
	st.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), st.wopts)
	st.start = append(st.start[:0], start...)
	st.written = 0
	st.paths = append(st.paths, path)
	return nil
}

// close ends the open file with a range tombstone up to end.
func (st *stager) close(end []byte) error {
	w := st.w
	st.w = nil
	if err := w.DeleteRange(st.start, end); err != nil {
		_ = w.Close()
		return fmt.Errorf("write staged sstable: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("finish staged sstable: %w", err)
	}
	return nil
}

// add stages the engine key k with value v; keys arrive in increasing order.
func (st *stager) add(k, v []byte) error {
	switch {
	case st.w == nil:
		if err := st.open(replicatedSpanLower); err != nil {
			return err
		}
	case st.written >= st.target:
		if err := st.close(k); err != nil {
			return err
		}
		if err := st.open(k); err != nil {
			return err
		}
	}
	if err := st.w.Set(k, v); err != nil {
		return fmt.Errorf("write staged sstable: %w", err)
	}
	n := int64(len(k) + len(v))
	st.written += n
	st.bytes += n
	return nil
}

// finish writes the digest into the last file and closes it.
func (st *stager) finish(d Digest) error {
	if st.w == nil {
		if err := st.open(replicatedSpanLower); err != nil {
			return err
		}
	}
	if err := st.w.Set(digestKey, d.Bytes()); err != nil {
		return fmt.Errorf("write staged sstable: %w", err)
	}
	st.bytes += int64(len(digestKey) + DigestSize)
	return st.close(replicatedSpanUpper)
}

// cleanup closes an unfinished file and removes the staging directory (after
// a successful ingestion the store holds its own links to the files).
func (st *stager) cleanup() {
	if st.w != nil {
		_ = st.w.Close()
		st.w = nil
	}
	_ = st.fs.RemoveAll(st.dir)
}
