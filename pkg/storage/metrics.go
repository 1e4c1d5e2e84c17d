package storage

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the engine's Prometheus metrics. A nil *Metrics is valid and
// records nothing.
type Metrics struct {
	// WrittenBytes counts the bytes of committed batches (their pebble
	// representation, including the digest record) and of ingested
	// checkpoint sstables.
	WrittenBytes prometheus.Counter
	// CommitDuration observes Engine.Commit latency, fsync included.
	CommitDuration prometheus.Histogram
	// WALSyncDuration observes Engine.SyncWAL: the group commit of batches
	// committed without sync.
	WALSyncDuration prometheus.Histogram
	// Fsyncs counts fsync and fdatasync calls on the engine's files and
	// directories (WAL, sstables, manifest, staging), whoever issued them.
	Fsyncs prometheus.Counter
	// CheckpointInstalls counts InstallCheckpoint calls by result:
	// "installed", "rejected" (the stream was invalid or its digest did not
	// match) or "failed" (a local error or cancellation).
	CheckpointInstalls *prometheus.CounterVec
	// RowCacheHits and RowCacheMisses count the point reads of replicated
	// keys that the row cache answered, and those it sent to pebble
	// (rowcache.go).
	RowCacheHits, RowCacheMisses prometheus.Counter

	// lsm is the open engine whose compaction state the gauges
	// augustus_storage_compaction_debt_bytes and
	// augustus_storage_compactions_running read on each scrape (nil while
	// no engine is open: the gauges read 0).
	lsm atomic.Pointer[Engine]
	// closed holds the LSM counters of the engines closed before the open
	// one (pebble counts from each open), so the counters stay monotonic
	// across a restore that reopens the store within the process.
	closedMu sync.Mutex
	closed   lsmCounters
}

// lsmCounters are pebble's cumulative flush and compaction figures.
type lsmCounters struct {
	flushes, compactions              float64
	flushedBytes, compactedBytes, wal float64
	filterHits, filterMisses          float64
}

func (a *lsmCounters) add(b lsmCounters) {
	a.flushes += b.flushes
	a.compactions += b.compactions
	a.flushedBytes += b.flushedBytes
	a.compactedBytes += b.compactedBytes
	a.wal += b.wal
	a.filterHits += b.filterHits
	a.filterMisses += b.filterMisses
}

// countersOf reads the cumulative counters of pebble's metrics.
func countersOf(pm *pebble.Metrics) lsmCounters {
	c := lsmCounters{
		flushes:     float64(pm.Flush.Count),
		compactions: float64(pm.Compact.Count),
		wal:         float64(pm.WAL.BytesWritten),

		filterHits:   float64(pm.Filter.Hits),
		filterMisses: float64(pm.Filter.Misses),
	}
	for _, l := range pm.Levels {
		c.flushedBytes += float64(l.TableBytesFlushed + l.BlobBytesFlushed)
		c.compactedBytes += float64(l.TableBytesCompacted + l.BlobBytesCompacted)
	}
	return c
}

// NewMetrics creates the engine's metrics and registers them with reg if reg
// is not nil. It panics if they are already registered with reg, as
// prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		WrittenBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_storage_written_bytes_total",
			Help: "Bytes written to the store by committed batches and ingested checkpoints.",
		}),
		CommitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "augustus_storage_batch_commit_duration_seconds",
			Help: "Latency of batch commits, including the digest update and the fsync when requested.",
			// 10µs .. ~330ms.
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 16),
		}),
		WALSyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "augustus_storage_wal_sync_duration_seconds",
			Help:    "Latency of WAL syncs that make every batch committed before them durable (group commit).",
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 16),
		}),
		Fsyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_storage_fsyncs_total",
			Help: "fsync and fdatasync calls on the store's files and directories.",
		}),
		CheckpointInstalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_storage_checkpoint_installs_total",
			Help: "Checkpoint installations by result (installed, rejected, failed).",
		}, []string{"result"}),
		RowCacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_storage_row_cache_hits_total",
			Help: "Point reads of replicated keys answered by the row cache.",
		}),
		RowCacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_storage_row_cache_misses_total",
			Help: "Point reads of replicated keys the row cache did not hold, read from pebble.",
		}),
	}
	// The LSM's backlog: how much is left to compact before the store is
	// in its steady shape, and how many compactions and flushes run. After
	// a bulk load both stay up for a while, and the CPU they take would be
	// charged to whatever is measured next (augustus bench waits for them).
	//
	// And the LSM's work so far: what flushes and compactions wrote beside
	// the WAL is the store's write amplification, the share of a replica's
	// CPU that grows with the database (docs/benchmarks/txn.md), and the L0
	// sublevels are what a point read must look through above the levels.
	// The Bloom filters' hits are the sstable reads they saved (lsmTuning).
	lsm := &lsmCollector{m: m,
		debt: prometheus.NewDesc("augustus_storage_compaction_debt_bytes",
			"Estimated bytes the store must still compact to reach its steady shape (pebble's compaction debt).", nil, nil),
		running: prometheus.NewDesc("augustus_storage_compactions_running",
			"Compactions and memtable flushes in progress.", nil, nil),
		flushes: prometheus.NewDesc("augustus_storage_flushes_total",
			"Memtable flushes to L0.", nil, nil),
		compactions: prometheus.NewDesc("augustus_storage_compactions_total",
			"Compactions of every kind (including moves and delete-only ones).", nil, nil),
		flushedBytes: prometheus.NewDesc("augustus_storage_flushed_bytes_total",
			"Bytes of sstables written by memtable flushes.", nil, nil),
		compactedBytes: prometheus.NewDesc("augustus_storage_compacted_bytes_total",
			"Bytes of sstables written by compactions.", nil, nil),
		wal: prometheus.NewDesc("augustus_storage_wal_written_bytes_total",
			"Bytes written to the write-ahead log.", nil, nil),
		l0: prometheus.NewDesc("augustus_storage_l0_sublevels",
			"Sublevels of L0: the sstables a point read may have to look through before the levels below.", nil, nil),
		filterHits: prometheus.NewDesc("augustus_storage_bloom_filter_hits_total",
			"Point reads of an sstable that its Bloom filter showed to miss, so no data block was read.", nil, nil),
		filterMisses: prometheus.NewDesc("augustus_storage_bloom_filter_misses_total",
			"Point reads of an sstable that its Bloom filter could not rule out, so a data block was read.", nil, nil),
		rowCache: prometheus.NewDesc("augustus_storage_row_cache_bytes",
			"Memory the row cache's chunks take, outside the Go heap (fastcache's size).", nil, nil),
	}
	if reg != nil {
		reg.MustRegister(m.WrittenBytes, m.CommitDuration, m.WALSyncDuration, m.Fsyncs, m.CheckpointInstalls,
			m.RowCacheHits, m.RowCacheMisses, lsm)
	}
	return m
}

// lsmCollector exports the open engine's compaction state: both gauges
// from one read of pebble's metrics per scrape (zeros while no engine is
// open).
type lsmCollector struct {
	m                                 *Metrics
	debt, running, l0                 *prometheus.Desc
	flushes, compactions              *prometheus.Desc
	flushedBytes, compactedBytes, wal *prometheus.Desc
	filterHits, filterMisses          *prometheus.Desc
	rowCache                          *prometheus.Desc
}

func (c *lsmCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.debt, c.running, c.l0, c.flushes, c.compactions, c.flushedBytes, c.compactedBytes, c.wal, c.filterHits, c.filterMisses, c.rowCache} {
		ch <- d
	}
}

func (c *lsmCollector) Collect(ch chan<- prometheus.Metric) {
	var debt, running, l0, rows float64
	var total lsmCounters
	// Lock order closeMu (read) then closedMu, as in Close then detach:
	// while the engine is held open here, detach cannot have moved its
	// counters into closed yet, so they are counted once.
	if e := c.m.lsm.Load(); e != nil && e.acquire() == nil {
		pm := e.db.Metrics()
		debt, running = float64(pm.Compact.EstimatedDebt), float64(pm.Compact.NumInProgress+pm.Flush.NumInProgress)
		l0 = float64(pm.Levels[0].Sublevels)
		total = countersOf(pm)
		total.add(c.m.closedCounters())
		if e.rows != nil {
			rows = float64(e.rows.bytes())
		}
		e.release()
	} else {
		total = c.m.closedCounters()
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.debt, debt)
	gauge(c.running, running)
	gauge(c.l0, l0)
	gauge(c.rowCache, rows)
	counter(c.flushes, total.flushes)
	counter(c.compactions, total.compactions)
	counter(c.flushedBytes, total.flushedBytes)
	counter(c.compactedBytes, total.compactedBytes)
	counter(c.wal, total.wal)
	counter(c.filterHits, total.filterHits)
	counter(c.filterMisses, total.filterMisses)
}

// attach makes the gauges read e; detach stops them reading e, if they do.
func (m *Metrics) attach(e *Engine) {
	if m != nil {
		m.lsm.Store(e)
	}
}

// closedCounters returns the LSM counters of the engines closed so far.
func (m *Metrics) closedCounters() lsmCounters {
	m.closedMu.Lock()
	defer m.closedMu.Unlock()
	return m.closed
}

// detach runs in Close, under closeMu and while e's pebble is still open,
// so e's counters move into closed.
func (m *Metrics) detach(e *Engine) {
	if m != nil && m.lsm.CompareAndSwap(e, nil) {
		pm := e.db.Metrics()
		m.closedMu.Lock()
		m.closed.add(countersOf(pm))
		m.closedMu.Unlock()
	}
}

func (m *Metrics) commitDone(start time.Time, bytes int) {
	if m == nil {
		return
	}
	m.CommitDuration.Observe(time.Since(start).Seconds())
	m.WrittenBytes.Add(float64(bytes))
}

func (m *Metrics) syncDone(start time.Time) {
	if m == nil {
		return
	}
	m.WALSyncDuration.Observe(time.Since(start).Seconds())
}

func (m *Metrics) wroteBytes(n int64) {
	if m == nil {
		return
	}
	m.WrittenBytes.Add(float64(n))
}

func (m *Metrics) fsync() {
	if m == nil {
		return
	}
	m.Fsyncs.Inc()
}

func (m *Metrics) rowCacheHit() {
	if m != nil {
		m.RowCacheHits.Inc()
	}
}

func (m *Metrics) rowCacheMiss() {
	if m != nil {
		m.RowCacheMisses.Inc()
	}
}

func (m *Metrics) install(result string) {
	if m == nil {
		return
	}
	m.CheckpointInstalls.WithLabelValues(result).Inc()
}

// syncCountingFS counts fsyncs of the files and directories it opens.
type syncCountingFS struct {
	vfs.FS
	m *Metrics
}

func (fs syncCountingFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &syncCountingFile{File: f, m: fs.m}, nil
}

func (fs syncCountingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.Create(name, c))
}

func (fs syncCountingFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.Open(name, opts...))
}

func (fs syncCountingFS) OpenReadWrite(
	name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption,
) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs syncCountingFS) OpenDir(name string) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenDir(name))
}

func (fs syncCountingFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs syncCountingFS) Unwrap() vfs.FS { return fs.FS }

type syncCountingFile struct {
	vfs.File
	m *Metrics
}

func (f *syncCountingFile) Sync() error {
	f.m.fsync()
	return f.File.Sync()
}

func (f *syncCountingFile) SyncData() error {
	f.m.fsync()
	return f.File.SyncData()
}

func (f *syncCountingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		f.m.fsync()
	}
	return full, err
}
