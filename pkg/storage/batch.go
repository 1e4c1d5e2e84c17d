package storage

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Batch collects writes that Engine.Commit applies atomically. A Batch is not
// safe for concurrent use. After a commit it accepts no writes until Reset;
// Close releases it.
type Batch struct {
	e       *Engine
	b       *pebble.Batch
	indexed bool
	// replicated is set once the batch writes a replicated keyspace: only
	// such batches pay for the digest update.
	replicated bool
	committed  bool
	// poisoned is set when pebble failed to apply the batch: its pebble
	// batch must not be reused.
	poisoned bool
	count    int

	// pointIt is an iterator over the (indexed) batch kept open between
	// point reads of replicated keyspaces: pebble's Get builds and tears
	// down a whole iterator stack per call, which cost the transaction
	// engine about a fifth of a replica's CPU (docs/benchmarks/storage.md).
	// It is valid while the committed replicated state has not changed
	// since it was opened (pointGen == Engine.replGen); the batch's own
	// later writes are brought into its view with SetOptions (pointLen is
	// the batch length it last saw). Other keyspaces (BFTState, written by
	// other goroutines' commits) are read with pebble's Get as before.
	pointIt  *pebble.Iterator
	pointGen uint64
	pointLen int

	// olds remembers the committed values the batch's reads (point reads
	// and scans) of replicated keys returned, for the commit's digest update
	// (oldvalues.go).
	olds oldValues
	// written holds a hash of every replicated key an indexed batch wrote,
	// so that Get asks the row cache (rowcache.go) only for keys whose value
	// the batch did not change. A collision only sends a read to pebble.
	written map[uint64]struct{}
}

// keySeed keys the hashes of Batch.written.
var keySeed = maphash.MakeSeed()

// noteWrite records a write of the engine key k (indexed batches of an
// engine with a row cache).
func (b *Batch) noteWrite(k []byte) {
	if !b.indexed || b.e.rows == nil {
		return
	}
	if b.written == nil {
		b.written = make(map[uint64]struct{})
	}
	b.written[maphash.Bytes(keySeed, k)] = struct{}{}
}

// wrote reports whether the batch may have written the engine key k.
func (b *Batch) wrote(k []byte) bool {
	if len(b.written) == 0 {
		return false
	}
	_, ok := b.written[maphash.Bytes(keySeed, k)]
	return ok
}

// NewBatch returns an empty write-only batch.
func (e *Engine) NewBatch() *Batch {
	return &Batch{e: e, b: e.db.NewBatch()}
}

// NewIndexedBatch returns an empty batch that can also be read: its Get and
// Scan see the batch's own writes over the engine's committed state (as of
// each read). It costs more per write than NewBatch.
func (e *Engine) NewIndexedBatch() *Batch {
	return &Batch{e: e, b: e.db.NewIndexedBatch(), indexed: true}
}

func (b *Batch) writable() error {
	switch {
	case b.b == nil:
		return fmt.Errorf("storage: batch: %w", ErrClosed)
	case b.committed:
		return ErrBatchCommitted
	}
	return nil
}

// Set sets key in ks to value. The batch copies key and value.
func (b *Batch) Set(ks Keyspace, key, value []byte) error {
	if err := b.writable(); err != nil {
		return err
	}
	if err := checkEntry(ks, key, value); err != nil {
		return fmt.Errorf("storage: batch set: %w", err)
	}
	op := b.b.SetDeferred(1+len(key), len(value))
	op.Key[0] = byte(ks)
	copy(op.Key[1:], key)
	copy(op.Value, value)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: batch set in %s: %w", ks, err)
	}
	if ks.Replicated() {
		b.replicated = true
		b.noteWrite(op.Key)
	}
	b.count++
	return nil
}

// Delete deletes key from ks; deleting an absent key is not an error.
func (b *Batch) Delete(ks Keyspace, key []byte) error {
	if err := b.writable(); err != nil {
		return err
	}
	if err := checkKeyspace(ks); err != nil {
		return fmt.Errorf("storage: batch delete: %w", err)
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("storage: batch delete in %s: %w", ks, err)
	}
	op := b.b.DeleteDeferred(1 + len(key))
	op.Key[0] = byte(ks)
	copy(op.Key[1:], key)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: batch delete in %s: %w", ks, err)
	}
	if ks.Replicated() {
		b.replicated = true
		b.noteWrite(op.Key)
	}
	b.count++
	return nil
}

// DeleteRange deletes every key of ks in [start, end); nil means the start or
// end of the keyspace. It is allowed on BFTState only: on a replicated
// keyspace it returns ErrReplicatedRangeDelete (see the package comment).
func (b *Batch) DeleteRange(ks Keyspace, start, end []byte) error {
	if err := b.writable(); err != nil {
		return err
	}
	if err := checkKeyspace(ks); err != nil {
		return fmt.Errorf("storage: batch delete range: %w", err)
	}
	if ks.Replicated() {
		return fmt.Errorf("storage: batch delete range in %s: %w", ks, ErrReplicatedRangeDelete)
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return fmt.Errorf("storage: batch delete range in %s: %w: start %q > end %q",
			ks, ErrInvalidRange, truncKey(start), truncKey(end))
	}
	endLen := 1 + len(end)
	if end == nil {
		endLen = 1
	}
	op := b.b.DeleteRangeDeferred(1+len(start), endLen)
	op.Key[0] = byte(ks)
	copy(op.Key[1:], start)
	if end == nil {
		op.Value[0] = byte(ks) + 1
	} else {
		op.Value[0] = byte(ks)
		copy(op.Value[1:], end)
	}
	if err := op.Finish(); err != nil {
		return fmt.Errorf("storage: batch delete range in %s: %w", ks, err)
	}
	b.count++
	return nil
}

// Count returns the number of writes in the batch.
func (b *Batch) Count() int { return b.count }

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool { return b.count == 0 }

// Get reads key in ks through an indexed batch: the batch's own writes, then
// the engine's committed state. It returns ErrNotIndexed on other batches.
func (b *Batch) Get(ks Keyspace, key []byte) ([]byte, error) {
	if err := b.readable(); err != nil {
		return nil, err
	}
	defer b.e.release()
	if !ks.Replicated() {
		return get(b.b, ks, key)
	}
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
	}
	buf := getKeyBuf()
	defer putKeyBuf(buf)
	*buf = AppendKey((*buf)[:0], ks, key)
	// A key the batch has not written reads the committed state: the row
	// cache has it if it was read or written lately.
	cacheable := b.e.rows != nil && !b.wrote(*buf)
	if cacheable {
		if v, gen, ok := b.e.rows.lookup(&b.e.replGen, *buf); ok {
			b.e.metrics.rowCacheHit()
			b.olds.read(gen, b.count, ks, key, v, true)
			return v, nil // lookup's copy
		}
		b.e.metrics.rowCacheMiss()
	}
	it, err := b.pointIter()
	if err != nil {
		return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
	}
	// The default comparer's prefix of a key is the whole key, so this is
	// an exact lookup (as pebble's Get does).
	if !it.SeekPrefixGE(*buf) {
		if err := it.Error(); err != nil {
			return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
		}
		b.olds.read(b.pointGen, b.count, ks, key, nil, false)
		return nil, ErrNotFound
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, fmt.Errorf("storage: get in %s: %w", ks, err)
	}
	b.olds.read(b.pointGen, b.count, ks, key, v, true)
	if cacheable {
		b.e.rows.fill(&b.e.replGen, b.pointGen, *buf, v)
	}
	return cloneValue(v), nil
}

// pointIter returns the batch's cached point-read iterator, opening it if
// there is none or the committed replicated state changed since it was
// opened, and refreshing its view of the batch's own writes. The caller
// holds the engine (readable).
func (b *Batch) pointIter() (*pebble.Iterator, error) {
	gen := b.e.replGen.Load()
	if b.pointIt != nil && b.pointGen != gen {
		if err := b.closePointIter(); err != nil {
			return nil, err
		}
	}
	if b.pointIt == nil {
		it, err := b.b.NewIter(nil)
		if err != nil {
			return nil, err
		}
		b.e.snapMu.Lock()
		if b.e.pointIters == nil { // the engine is closing
			b.e.snapMu.Unlock()
			_ = it.Close()
			return nil, ErrClosed
		}
		b.e.pointIters[b] = it
		b.e.snapMu.Unlock()
		b.pointIt, b.pointGen, b.pointLen = it, gen, b.b.Len()
		return it, nil
	}
	if n := b.b.Len(); n != b.pointLen {
		b.pointIt.SetOptions(&pebble.IterOptions{})
		b.pointLen = n
	}
	return b.pointIt, nil
}

// closePointIter closes the cached point-read iterator, unless the engine's
// Close already did.
func (b *Batch) closePointIter() error {
	if b.pointIt == nil {
		return nil
	}
	it := b.pointIt
	b.pointIt = nil
	b.e.snapMu.Lock()
	_, open := b.e.pointIters[b]
	delete(b.e.pointIters, b)
	b.e.snapMu.Unlock()
	if !open {
		return nil
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("storage: close batch iterator: %w", err)
	}
	return nil
}

// Scan is Engine.Scan through an indexed batch (see Get).
func (b *Batch) Scan(ks Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error {
	if err := b.readable(); err != nil {
		return err
	}
	defer b.e.release()
	if !ks.Replicated() {
		return scan(b.b, ks, start, end, limit, fn)
	}
	// The first entries returned are remembered like point reads
	// (oldvalues.go): a long range read rarely precedes writes of what it
	// read, and copying it all would cost more than the seeks it might save.
	// The generation is taken before the iterator is opened, so a commit in
	// between only makes the memo look older than it is.
	gen, writes, n := b.e.replGen.Load(), b.count, 0
	return scan(b.b, ks, start, end, limit, func(key, value []byte) error {
		if n < maxScanMemo {
			b.olds.read(gen, writes, ks, key, value, true)
			n++
		}
		return fn(key, value)
	})
}

// readable acquires the engine for a read through the batch.
func (b *Batch) readable() error {
	switch {
	case b.b == nil:
		return fmt.Errorf("storage: batch: %w", ErrClosed)
	case !b.indexed:
		return ErrNotIndexed
	}
	return b.e.acquire()
}

// Reset empties the batch for reuse, also after a commit.
func (b *Batch) Reset() {
	if b.b == nil {
		return
	}
	// An iterator error is the engine's to report on its next read; the
	// reset batch starts without one.
	_ = b.closePointIter()
	if b.poisoned {
		_ = b.b.Close()
		if b.indexed {
			b.b = b.e.db.NewIndexedBatch()
		} else {
			b.b = b.e.db.NewBatch()
		}
	} else {
		b.b.Reset()
	}
	b.replicated, b.committed, b.poisoned, b.count = false, false, false, 0
	b.olds.reset()
	clear(b.written)
}

// Close releases the batch. Writes after Close return ErrClosed.
func (b *Batch) Close() error {
	if b.b == nil {
		return nil
	}
	itErr := b.closePointIter()
	var err error
	if !b.poisoned {
		err = b.b.Close()
	}
	b.b = nil
	b.olds = oldValues{}
	if err != nil {
		return fmt.Errorf("storage: close batch: %w", err)
	}
	return itErr
}

// Commit applies b atomically. With sync, the batch is durable when Commit
// returns; without, a crash may lose it (and every later batch) but never
// part of it. If b writes a replicated keyspace, the digest is updated in the
// same pebble batch. Committing an empty batch does nothing. After Commit,
// successful or not, b accepts no writes until Reset.
func (e *Engine) Commit(b *Batch, sync bool) error {
	if b == nil || b.e != e {
		return ErrForeignBatch
	}
	if err := b.writable(); err != nil {
		return err
	}
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	b.committed = true
	// The batch is read-only from here (Reset makes it writable again);
	// its cached iterator would only pin memtables.
	if err := b.closePointIter(); err != nil {
		return err
	}
	if b.count == 0 {
		return nil
	}
	start := time.Now()
	wo := pebble.NoSync
	if sync {
		wo = pebble.Sync
	}
	var err error
	size := b.b.Len()
	if b.replicated {
		size, err = e.commitReplicated(b, wo)
	} else if err = e.db.Apply(b.b, wo); err != nil {
		b.poisoned = true
	}
	if err != nil {
		return fmt.Errorf("storage: commit: %w", err)
	}
	e.metrics.commitDone(start, size)
	return nil
}

// replOp is one write of a batch to a replicated keyspace. key is the engine
// key; key and value alias the batch's representation.
type replOp struct {
	key, value []byte
	del        bool
	pos        int // among the batch's writes
}

// commitReplicated computes the digest delta of b against the committed
// state, appends the new digest to b and applies it, all under commitMu so
// that no other writer of the replicated span interleaves.
// It returns the size of the applied batch.
func (e *Engine) commitReplicated(b *Batch, wo *pebble.WriteOptions) (int, error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	next := e.digest
	if err := e.applyDelta(&next, b); err != nil {
		return 0, err
	}
	op := b.b.SetDeferred(len(digestKey), DigestSize)
	copy(op.Key, digestKey)
	next.putBytes(op.Value)
	if err := op.Finish(); err != nil {
		return 0, err
	}
	size := b.b.Len()
	// Whether or not Apply succeeds, the committed replicated state may have
	// changed: every batch's cached point-read iterator is invalidated (by
	// the move of replGen), and the row cache follows the change.
	if err := e.db.Apply(b.b, wo); err != nil {
		e.rowsChanged()
		b.poisoned = true
		// The batch may or may not be visible (an fsync can fail after the
		// memtable took it); the persisted digest is in the same batch, so
		// re-reading it keeps the in-memory digest consistent either way.
		if d, rerr := readDigest(e.db); rerr == nil {
			e.digest = d
		}
		return 0, err
	}
	e.rowsApplied(b.b)
	e.digest = next
	return size, nil
}

// applyDelta updates d by the effect of the replicated writes of b on the
// committed state. For every key b writes, only its committed value and its
// value after the batch matter: the first is subtracted, the second added.
func (e *Engine) applyDelta(d *Digest, batch *Batch) error {
	b := batch.b
	ops := e.ops[:0]
	defer func() {
		clear(ops) // drop references to the batch
		if cap(ops) <= 1<<14 {
			e.ops = ops[:0]
		} else {
			e.ops = nil
		}
	}()
	r := b.Reader()
	sorted := true
	// pos is the position of each write among the batch's writes (Batch.count
	// counts them in the same order), for the memo of its reads.
	pos := -1
	for {
		kind, ukey, value, ok, err := r.Next()
		if err != nil {
			return fmt.Errorf("read batch: %w", err)
		}
		if !ok {
			break
		}
		pos++
		if len(ukey) == 0 || !Keyspace(ukey[0]).Replicated() {
			continue
		}
		var del bool
		switch kind {
		case pebble.InternalKeyKindSet:
		case pebble.InternalKeyKindDelete:
			del = true
		default:
			return fmt.Errorf("%w: unexpected %s in a replicated keyspace", ErrCorrupt, kind)
		}
		if n := len(ops); n > 0 && bytes.Compare(ops[n-1].key, ukey) >= 0 {
			sorted = false
		}
		ops = append(ops, replOp{key: ukey, value: value, del: del, pos: pos})
	}
	if !sorted {
		// Stable: among writes of one key, the last one wins.
		slices.SortStableFunc(ops, func(a, b replOp) int { return bytes.Compare(a.key, b.key) })
	}

	// The committed values the batch's reads saw, if the committed state is
	// still the one they were read from (the caller holds commitMu, which
	// every change of it holds); the others are sought with an iterator
	// opened on the first need.
	gen := e.replGen.Load()
	var seek committedSeeker
	defer func() { _ = seek.close() }() // on the error returns
	for i := 0; i < len(ops); {
		j := i
		for j+1 < len(ops) && bytes.Equal(ops[j+1].key, ops[i].key) {
			j++
		}
		first, last := &ops[i], &ops[j] // the stable sort kept the batch's order
		i = j + 1
		ks, key := Keyspace(last.key[0]), last.key[1:]
		old, found, known := batch.olds.lookup(gen, last.key, first.pos)
		if !known && e.rows != nil {
			// Under commitMu the row cache holds exactly committed values.
			old, found = e.rows.peek(last.key)
			known = found
		}
		if !known {
			var err error
			if old, found, err = seek.get(e, last.key); err != nil {
				return fmt.Errorf("read old value in %s: %w", ks, err)
			}
		}
		if found {
			if !last.del && bytes.Equal(old, last.value) {
				continue
			}
			d.subLanes(e.hasher.expand(ks, key, old))
		}
		if !last.del {
			d.addLanes(e.hasher.expand(ks, key, last.value))
		}
	}
	if err := seek.close(); err != nil {
		return fmt.Errorf("read old values: %w", err)
	}
	return nil
}

// committedSeeker reads committed values of the replicated span for
// applyDelta, through an iterator opened on the first read. The zero value
// is ready; close is idempotent.
type committedSeeker struct{ it *pebble.Iterator }

// get returns key's committed value (an engine key), or found false.
func (s *committedSeeker) get(e *Engine, key []byte) (val []byte, found bool, err error) {
	if s.it == nil {
		if s.it, err = e.db.NewIter(&pebble.IterOptions{LowerBound: replicatedDataLower, UpperBound: replicatedDataUpper}); err != nil {
			return nil, false, err
		}
	}
	e.deltaSeeks.Add(1)
	// A prefix seek, the default comparer's prefix being the whole key: an
	// exact lookup that the sstables' Bloom filters (lsmTuning) answer
	// without a block read when the key is absent, as it is for every key
	// the batch creates.
	if !s.it.SeekPrefixGE(key) || !bytes.Equal(s.it.Key(), key) {
		return nil, false, s.it.Error()
	}
	val, err = s.it.ValueAndErr()
	return val, err == nil, err
}

func (s *committedSeeker) close() error {
	if s.it == nil {
		return nil
	}
	it := s.it
	s.it = nil
	return it.Close()
}

// SyncWAL makes every batch committed before the call durable: it appends an
// empty log record to the write-ahead log and syncs it. Pebble's WAL is one
// sequential file written in commit order, so the sync covers every earlier
// commit, synced or not. It is the group commit of a replica that commits
// many batches without sync and syncs once for all of them (pkg/bft/host).
func (e *Engine) SyncWAL() error {
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	start := time.Now()
	if err := e.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("storage: sync WAL: %w", err)
	}
	e.metrics.syncDone(start)
	return nil
}
