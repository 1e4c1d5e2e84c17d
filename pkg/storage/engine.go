package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// FS is the filesystem; nil means the operating system's. Tests use
	// vfs.NewMem or vfs.NewCrashableMem.
	FS vfs.FS
	// Metrics receives the engine's metrics; nil records nothing.
	Metrics *Metrics
	// Logger receives pebble's log output (info at debug level); nil
	// discards it.
	Logger *slog.Logger
	// CacheSize is the block cache size in bytes; 0 means DefaultCacheSize.
	CacheSize int64
	// MemTableSize is the memtable size in bytes; 0 means
	// DefaultMemTableSize.
	MemTableSize uint64
	// RowCacheSize bounds the row cache (rowcache.go: committed values of
	// replicated keys that indexed batches read or commits wrote) in bytes;
	// 0 means DefaultRowCacheSize and a negative size turns it off.
	RowCacheSize int64
	// VerifyDigestOnOpen makes Open recompute the digest by a full scan and
	// fail with ErrCorrupt if it differs from the persisted one.
	VerifyDigestOnOpen bool
	// ReadOnly opens an existing store without writing to it (saved
	// checkpoints are opened so).
	ReadOnly bool
	// NoSync makes every sync of the write-ahead log a no-op (durability
	// mode "none" of cluster.json): a synced commit or SyncWAL still hands
	// the log to the operating system before it returns, so a process crash
	// loses nothing, but a power cut loses the log's tail. Sstables, the
	// manifest and directories are synced as always.
	NoSync bool

	// stagingFileSize is the target size of the sstables InstallCheckpoint
	// stages; 0 means defaultStagingFileSize. Tests lower it.
	stagingFileSize int64
	// noCompactions turns pebble's automatic compactions off (tests of the
	// compaction gauges).
	noCompactions bool
}

// DefaultCacheSize is the block cache size used when Options.CacheSize is 0.
const DefaultCacheSize = 64 << 20

// DefaultMemTableSize is the memtable size used when Options.MemTableSize is
// 0: four times pebble's default, for the reason given at lsmTuning.
const DefaultMemTableSize = 16 << 20

// lsmTuning turns off pebble's tombstone-density compactions and puts a
// Bloom filter on every level; with DefaultMemTableSize it is where a
// replica's store departs from pebble's defaults, which are not made for
// the replicated workload.
//
// A replica deletes most of what it writes within seconds: the transaction
// engine's records, nonces and pending entries go when the owner's
// watermark passes them (txn.md W2), and the ordering log is truncated at
// each stable checkpoint. A flush drops such a key's value but must keep its
// tombstone, so every flushed table is dense with tombstones, and pebble's
// tombstone-density heuristic picked it for a compaction of its own into the
// bottom level. Data keys are written uniformly at random, so each such
// compaction overlapped, and rewrote, the whole bottom level: at 3M items,
// 16 MB to merge in well under 1 MB, and compactions wrote 20 times what
// flushes did (augustus_storage_compacted_bytes_total against
// augustus_storage_flushed_bytes_total). The ordinary L0 compactions drop
// those tombstones at the bottom level all the same, so the heuristic is
// off; and a 16 MiB memtable makes them a quarter as frequent. Measured at
// 3M items, 2 groups, workload A at 100 % multi-group (60 s intervals,
// docs/benchmarks/txn.md, 2026-11-26): cluster CPU per transaction 6.0 →
// 4.5–4.7 ms. A larger memtable (32 MiB) was no better: point reads search
// it, and it fills with the deleted keys' entries.
//
// Every level's sstables carry a Bloom filter of their keys (bloomBitsPerKey
// bits per key, about 1 % false positives). Most point reads of a replica
// are for keys that do not exist: a new transaction's record (txn.md E1)
// and nonce entry (E2), the pending entry it is about to write, and the
// blind writes whose committed value the digest needs (applyDelta). Without
// a filter each such read searches the index and a data block of every
// sstable whose key span covers the key, in every L0 sublevel and level;
// with one it reads the filter block, which the block cache keeps. Pebble's
// default is no filter. Measured on one group at 1M items, workload A at 0 %
// multi-group, six interleaved pairs of 30 s intervals (2026-11-26, about
// 16:40, docs/benchmarks/txn.md): cluster CPU per transaction 1.40 → 1.32
// ms, lower with the filters in all six pairs. They cost about
// bloomBitsPerKey/8 bytes per key on disk and in the cache, and some
// hashing in flushes and compactions. Tables written before keep their absence of a filter until a
// compaction rewrites them.
func lsmTuning(o *pebble.Options) {
	o.Experimental.TombstoneDenseCompactionThreshold = -1
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	}
}

// bloomBitsPerKey is the size of lsmTuning's Bloom filters: 10 bits per key
// give about 1 % false positives (pebble's and RocksDB's usual choice).
const bloomBitsPerKey = 10

// stagingDirName is the directory, inside the store's directory, where
// InstallCheckpoint stages sstables. Open removes it.
const stagingDirName = "checkpoint-staging"

// Engine is one replica's store. It is safe for concurrent use.
type Engine struct {
	db      *pebble.DB
	fs      vfs.FS
	dir     string
	popts   *pebble.Options
	metrics *Metrics
	opts    Options

	// closeMu is held for reading by every call that uses db, and for
	// writing by Close.
	closeMu sync.RWMutex
	closed  bool

	// commitMu serializes the writers of the replicated span (commits that
	// touch replicated keyspaces, checkpoint ingestion) and guards what they
	// share.
	commitMu sync.Mutex
	digest   Digest         // digest of the committed replicated state
	hasher   *elementHasher // expansion scratch for commits
	ops      []replOp       // per-commit scratch

	// installMu allows one InstallCheckpoint at a time (they share the
	// staging directory).
	installMu sync.Mutex

	snapMu sync.Mutex
	snaps  map[*Snapshot]struct{}
	// pointIters holds the open cached point-read iterators, by batch
	// (Batch.pointIter), so that Close closes them (under snapMu). Close
	// reads the iterators here, never the batches' fields, which their
	// own goroutines change.
	pointIters map[*Batch]*pebble.Iterator

	// replGen counts changes of the committed replicated state (replicated
	// commits and checkpoint ingestions): a batch's cached point-read
	// iterator is valid while replGen has not moved since it was opened.
	replGen atomic.Uint64
	// rows caches committed values of replicated keys (rowcache.go); nil
	// when Options.RowCacheSize is negative. Every move of replGen goes
	// through it (rowsApplied, rowsChanged).
	rows *rowCache
	// deltaSeeks counts the committed values the digest updates had to seek
	// (those the batch's own reads did not give, oldvalues.go); for tests.
	deltaSeeks atomic.Uint64
}

// Open opens the store in dir, creating it if needed. A new directory is
// created with its missing parents, and each parent is fsynced so that the
// new directory entry survives a crash.
func Open(dir string, opts Options) (*Engine, error) {
	if dir == "" {
		return nil, fmt.Errorf("storage: open: %w: empty directory", ErrInvalidArgument)
	}
	if opts.CacheSize < 0 {
		return nil, fmt.Errorf("storage: open %s: %w: cache size %d", dir, ErrInvalidArgument, opts.CacheSize)
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if opts.Metrics != nil {
		fs = syncCountingFS{FS: fs, m: opts.Metrics}
	}
	if opts.NoSync {
		// Outside the counter: the syncs it drops are not counted.
		fs = noSyncWALFS{FS: fs}
	}
	if !opts.ReadOnly {
		if err := createDir(fs, dir); err != nil {
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
		if err := fs.RemoveAll(fs.PathJoin(dir, stagingDirName)); err != nil {
			return nil, fmt.Errorf("storage: open %s: remove checkpoint staging: %w", dir, err)
		}
	}

	cacheSize := opts.CacheSize
	if cacheSize == 0 {
		cacheSize = DefaultCacheSize
	}
	cache := pebble.NewCache(cacheSize)
	defer cache.Unref()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	popts := &pebble.Options{
		FS:                 fs,
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{logger},
		ReadOnly:           opts.ReadOnly,
	}
	popts.MemTableSize = DefaultMemTableSize
	if opts.MemTableSize != 0 {
		popts.MemTableSize = opts.MemTableSize
	}
	lsmTuning(popts)
	popts.DisableAutomaticCompactions = opts.noCompactions
	popts.EnsureDefaults()
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	e := &Engine{
		db:      db,
		fs:      fs,
		dir:     dir,
		popts:   popts,
		metrics: opts.Metrics,
		opts:    opts,
		hasher:  newElementHasher(),
		snaps:   make(map[*Snapshot]struct{}),

		pointIters: make(map[*Batch]*pebble.Iterator),
	}
	switch rows := opts.RowCacheSize; {
	case rows == 0:
		e.rows = newRowCache(DefaultRowCacheSize)
	case rows > 0:
		e.rows = newRowCache(rows)
	}
	if err := e.loadOrInit(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	if opts.VerifyDigestOnOpen {
		if err := e.VerifyDigest(); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("storage: open %s: %w", dir, err)
		}
	}
	opts.Metrics.attach(e)
	return e, nil
}

// createDir creates dir and its missing parents, fsyncing the parent of each
// directory it creates.
func createDir(fs vfs.FS, dir string) error {
	var missing []string
	for d := dir; ; {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		missing = append(missing, d)
		parent := fs.PathDir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	// missing runs from dir up to the topmost created directory.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := syncDir(fs, fs.PathDir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close directory %s: %w", dir, err)
	}
	return nil
}

// loadOrInit reads the format marker and the persisted digest, or writes them
// into a new store.
func (e *Engine) loadOrInit() error {
	v, err := getCopy(e.db, formatKey)
	switch {
	case errors.Is(err, ErrNotFound) && e.opts.ReadOnly:
		return fmt.Errorf("%w: no format marker in a store opened read-only", ErrCorrupt)
	case errors.Is(err, ErrNotFound):
		// A new store: the marker and the empty digest go in one synced
		// batch, before any other write, so a store with data always has
		// both.
		if err := e.checkSpanEmpty(); err != nil {
			return err
		}
		b := e.db.NewBatch()
		defer b.Close()
		var zero Digest
		if err := b.Set(formatKey, formatVersion, nil); err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
		if err := b.Set(digestKey, zero.Bytes(), nil); err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
		if err := e.db.Apply(b, pebble.Sync); err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
		e.digest = zero
		return nil
	case err != nil:
		return fmt.Errorf("read format marker: %w", err)
	case !bytes.Equal(v, formatVersion):
		return fmt.Errorf("%w: version %x, this build reads %x (the store was written by another build of Augustus: open it with that build, or re-create the cluster's data with augustus init)", ErrIncompatibleFormat, v, formatVersion)
	}
	d, err := readDigest(e.db)
	if err != nil {
		return err
	}
	e.digest = d
	return nil
}

func (e *Engine) checkSpanEmpty() error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: replicatedSpanLower, UpperBound: replicatedSpanUpper})
	if err != nil {
		return err
	}
	nonEmpty := it.First()
	if err := it.Close(); err != nil {
		return err
	}
	if nonEmpty {
		return fmt.Errorf("%w: replicated data without a format marker", ErrCorrupt)
	}
	return nil
}

// readDigest reads the persisted digest from r.
func readDigest(r pebbleReader) (Digest, error) {
	v, err := getCopy(r, digestKey)
	if errors.Is(err, ErrNotFound) {
		return Digest{}, fmt.Errorf("%w: persisted digest missing", ErrCorrupt)
	}
	if err != nil {
		return Digest{}, fmt.Errorf("read persisted digest: %w", err)
	}
	d, err := ParseDigest(v)
	if err != nil {
		return Digest{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d, nil
}

// Close closes the engine and every snapshot still open. It waits for
// in-flight calls to return. Calls after Close return ErrClosed.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.closed = true
	e.metrics.detach(e)
	e.snapMu.Lock()
	snaps := make([]*Snapshot, 0, len(e.snaps))
	for s := range e.snaps {
		snaps = append(snaps, s)
	}
	e.snaps = nil
	iters := make([]*pebble.Iterator, 0, len(e.pointIters))
	for _, it := range e.pointIters {
		iters = append(iters, it)
	}
	e.pointIters = nil
	e.snapMu.Unlock()
	var firstErr error
	for _, s := range snaps {
		if err := s.release(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, it := range iters {
		if err := it.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := e.db.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if e.rows != nil {
		// fastcache's chunks live outside the Go heap: only Reset gives
		// them back (to its pool, for the next engine of the process).
		e.rows.close()
	}
	if firstErr != nil {
		return fmt.Errorf("storage: close: %w", firstErr)
	}
	return nil
}

// acquire guards a call that uses db against Close; release must follow.
func (e *Engine) acquire() error {
	e.closeMu.RLock()
	if e.closed {
		e.closeMu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (e *Engine) release() { e.closeMu.RUnlock() }

// Get returns a copy of the value of key in ks, or ErrNotFound.
func (e *Engine) Get(ks Keyspace, key []byte) ([]byte, error) {
	if err := e.acquire(); err != nil {
		return nil, err
	}
	defer e.release()
	return get(e.db, ks, key)
}

// Scan calls fn for each key of ks in [start, end), in increasing key order,
// stopping after limit keys if limit > 0. A nil start or end means the start
// or end of the keyspace. The slices passed to fn are valid only during the
// call. If fn returns ErrStopScan the scan ends and Scan returns nil; any
// other error ends the scan and is returned as is.
func (e *Engine) Scan(ks Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error {
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	return scan(e.db, ks, start, end, limit, fn)
}

// Digest returns the digest of the committed replicated state.
func (e *Engine) Digest() (Digest, error) {
	if err := e.acquire(); err != nil {
		return Digest{}, err
	}
	defer e.release()
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.digest, nil
}

// Sum returns the Sum of the digest of the committed replicated state: the
// value a checkpoint at this state carries.
func (e *Engine) Sum() ([SumSize]byte, error) {
	d, err := e.Digest()
	if err != nil {
		return [SumSize]byte{}, err
	}
	return d.Sum(), nil
}

// RecomputeDigest computes the digest of the replicated state by a full scan
// of a fresh snapshot. It is for verification; Digest is the cheap way.
func (e *Engine) RecomputeDigest() (Digest, error) {
	s, err := e.NewSnapshot()
	if err != nil {
		return Digest{}, err
	}
	defer s.Close()
	return s.RecomputeDigest()
}

// VerifyDigest recomputes the digest of a fresh snapshot and compares it with
// the digest persisted in the same snapshot; it returns ErrCorrupt if they
// differ.
func (e *Engine) VerifyDigest() error {
	s, err := e.NewSnapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := s.RecomputeDigest()
	if err != nil {
		return err
	}
	if d != s.digest {
		return fmt.Errorf("%w: persisted digest %s, contents digest to %s", ErrCorrupt, s.digest, d)
	}
	return nil
}

// pebbleReader is what pebble's DB, Snapshot and indexed Batch share.
type pebbleReader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// keyBufPool holds buffers for engine keys built on read paths.
var keyBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

func getKeyBuf() *[]byte { return keyBufPool.Get().(*[]byte) }

func putKeyBuf(b *[]byte) {
	if cap(*b) > 4<<10 {
		return
	}
	*b = (*b)[:0]
	keyBufPool.Put(b)
}

// getCopy returns a copy of the value of the engine key k, or ErrNotFound.
func getCopy(r pebbleReader, k []byte) ([]byte, error) {
	v, closer, err := r.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := cloneValue(v)
	if err := closer.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// cloneValue copies a value pebble returned, which is valid only until its
// iterator or closer moves on; an empty value stays non-nil.
func cloneValue(v []byte) []byte {
	out := bytes.Clone(v)
	if out == nil {
		out = []byte{}
	}
	return out
}

func get(r pebbleReader, ks Keyspace, key []byte) ([]byte, error) {
	if err := checkKeyspace(ks); err != nil {
		return nil, fmt.Errorf("storage: get: %w", err)
	}
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
	}
	buf := getKeyBuf()
	*buf = AppendKey((*buf)[:0], ks, key)
	v, err := getCopy(r, *buf)
	putKeyBuf(buf)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
	}
	return v, err
}

func scan(r pebbleReader, ks Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error {
	if err := checkKeyspace(ks); err != nil {
		return fmt.Errorf("storage: scan: %w", err)
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return fmt.Errorf("storage: scan %s: %w: start %q > end %q", ks, ErrInvalidRange, truncKey(start), truncKey(end))
	}
	lower, upper := getKeyBuf(), getKeyBuf()
	defer putKeyBuf(lower)
	defer putKeyBuf(upper)
	*lower = AppendKey((*lower)[:0], ks, start)
	if end == nil {
		*upper = append((*upper)[:0], byte(ks)+1)
	} else {
		*upper = AppendKey((*upper)[:0], ks, end)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: *lower, UpperBound: *upper})
	if err != nil {
		return fmt.Errorf("storage: scan %s: %w", ks, err)
	}
	n := 0
	var fnErr error
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return fmt.Errorf("storage: scan %s: %w", ks, err)
		}
		if fnErr = fn(it.Key()[1:], v); fnErr != nil {
			break
		}
		n++
		if limit > 0 && n >= limit {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("storage: scan %s: %w", ks, err)
	}
	if fnErr != nil && !errors.Is(fnErr, ErrStopScan) {
		return fnErr
	}
	return nil
}

// truncKey shortens a key for error messages.
func truncKey(k []byte) []byte {
	if len(k) > 32 {
		return k[:32]
	}
	return k
}

// pebbleLogger adapts slog to pebble's logger.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble", "fatal", true)
	panic("storage: pebble fatal: " + msg)
}

// rowsApplied moves replGen after b, a batch of replicated writes, was
// applied, and brings the row cache up to date with b's writes (under the
// cache's lock, so that no read of the old state can be cached after it).
func (e *Engine) rowsApplied(b *pebble.Batch) {
	if e.rows == nil {
		e.replGen.Add(1)
		return
	}
	e.rows.apply(&e.replGen, b)
}

// rowsChanged moves replGen after the committed replicated state changed, or
// may have, in a way the row cache cannot follow key by key (a failed apply,
// a checkpoint ingestion), and empties the cache.
func (e *Engine) rowsChanged() {
	if e.rows == nil {
		e.replGen.Add(1)
		return
	}
	e.rows.clear(&e.replGen)
}
