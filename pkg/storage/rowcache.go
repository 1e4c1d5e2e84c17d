package storage

import (
	"sync"
	"sync/atomic"

	"github.com/VictoriaMetrics/fastcache"
	"github.com/cockroachdb/pebble/v2"
)

// The row cache: committed values of replicated keys, in memory.
//
// A point read through pebble costs a seek in every memtable and every level
// (a merging iterator; the Bloom filters of lsmTuning only spare the data
// blocks of sstables that lack the key): about 10 µs on this machine kind,
// and a replica of the transaction engine makes a dozen per transaction
// (the items it reads, the committed values its blind writes replace, its
// owner's state, the metadata version). Point reads were 27 % of a replica's
// CPU on workload A (docs/benchmarks/txn.md). The row cache answers a read
// of a key it holds from memory instead, as RocksDB's row cache does. It is
// a fastcache (VictoriaMetrics): buckets of ring buffers outside the Go
// heap, so that its entries cost the garbage collector nothing — a map of
// entries with pointers, tried first, made the collector's marking take 7 %
// of a replica's CPU more than the cache saved. The oldest entries of a
// full bucket are overwritten; a value of 64 KiB or more is not cached.
//
// It holds only what the committed replicated state holds, never more:
//
//   - Entries enter from reads (Batch.Get fills a key it read from pebble
//     and the batch had not written) and from commits (a committed batch's
//     replicated writes are written through; a delete drops the key). The
//     cache holds no absent keys: most absent keys read are new ones
//     (records, nonces), never read twice.
//   - Every change of the committed replicated state moves Engine.replGen
//     under the cache's lock, together with the change's update of the
//     cache (commitReplicated, rowsApplied), or with clearing it (a failed apply,
//     a checkpoint ingestion). A fill carries the generation its value was
//     read under and is dropped if the generation moved: a value read
//     before a commit can never be cached after the commit's update.
//   - A batch reads its own writes through pebble: Get consults the cache
//     only for keys the batch has not written (Batch.wrote).
//
// So a hit returns the committed value as of the hit's generation, which is
// what a read through the batch's pebble iterator would return, and the
// digest update (applyDelta, under commitMu, which every change holds) may
// take a written key's committed value from the cache as well.
type rowCache struct {
	// mu makes each operation and the moves of the generation one step
	// (fastcache locks its buckets itself, but a fill's check of the
	// generation and its write must not interleave with a commit's update).
	mu sync.Mutex
	c  *fastcache.Cache
	// scratch holds peek's value (callers hold commitMu).
	scratch []byte
}

// DefaultRowCacheSize is the row cache size used when Options.RowCacheSize
// is 0.
const DefaultRowCacheSize = 64 << 20

// MinRowCacheSize is the least row cache: fastcache rounds smaller sizes up
// to it.
const MinRowCacheSize = 32 << 20

func newRowCache(max int64) *rowCache {
	return &rowCache{c: fastcache.New(int(max))}
}

// lookup returns a copy of key's cached committed value and the generation
// of the replicated state it is the value of.
func (c *rowCache) lookup(gen *atomic.Uint64, key []byte) (val []byte, g uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if val, ok = c.c.HasGet(nil, key); !ok {
		return nil, 0, false
	}
	if val == nil {
		val = []byte{} // an empty value is a value
	}
	return val, gen.Load(), true
}

// peek returns key's cached committed value: the digest update's lookup.
// The caller holds commitMu and must not keep the value past its next peek.
func (c *rowCache) peek(key []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.c.HasGet(c.scratch[:0], key)
	if ok {
		c.scratch = v
	}
	return v, ok
}

// fill caches val as key's committed value, read under generation g, unless
// the state changed since.
func (c *rowCache) fill(gen *atomic.Uint64, g uint64, key, val []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen.Load() != g {
		return
	}
	c.c.Set(key, val)
}

// apply moves the generation and writes the replicated writes of b, which
// was applied, through to the cache: a set key takes its new value, a
// deleted key leaves. Writing costs no allocation (fastcache copies into its
// own chunks), and the keys a commit writes are read again soon: a record
// and its nonce when the owner's watermark passes them (W1), an owner's
// state by its next transaction, an item by a later read or blind write. A
// batch it cannot read (it was read whole before it was applied) empties
// the cache instead.
func (c *rowCache) apply(gen *atomic.Uint64, b *pebble.Batch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen.Add(1)
	r := b.Reader()
	for {
		kind, key, val, ok, err := r.Next()
		if err != nil {
			c.c.Reset()
			return
		}
		if !ok {
			return
		}
		if len(key) == 0 || !Keyspace(key[0]).Replicated() {
			continue
		}
		// Set replaces the entry; a value too large for the cache is not
		// stored, and the old entry must not stay either.
		c.c.Del(key)
		if kind == pebble.InternalKeyKindSet {
			c.c.Set(key, val)
		}
	}
}

// clear moves the generation and empties the cache: the replicated state
// changed in a way the cache cannot follow key by key.
func (c *rowCache) clear(gen *atomic.Uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gen.Add(1)
	c.c.Reset()
}

// close gives the cache's memory back; the engine is closed (no batch reads
// it any more).
func (c *rowCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Reset()
}

// bytes returns the memory the cache's entries take.
func (c *rowCache) bytes() int64 {
	var st fastcache.Stats
	c.c.UpdateStats(&st)
	return int64(st.BytesSize)
}
