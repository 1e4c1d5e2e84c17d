package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Txn is a SQL transaction in the BFT Derby model (DESIGN.md §6, the paper's
// §4.5), made serializable:
//
//   - Reads run at once, each statement's as read-only short transactions
//     (a point read, a batch of point reads, a chunk of a range), and what
//     they return is cached for the whole SQL transaction: a key or range read
//     again is answered from the cache, and every read sees the
//     transaction's own buffered writes (read-your-writes).
//   - Writes are buffered.
//   - COMMIT sends ONE update transaction: a cmp on every value read (cmp
//     absent for a key read as missing) and a cmp-range on every range read,
//     then the writes. It commits only if everything the SQL transaction read
//     is still as read, so the SQL transaction is serializable at the moment
//     of that commit. A transaction that only read sends the same guards,
//     unless all its reads came from one short transaction, which is
//     serializable by itself.
//
// Nothing is sent before the first read; a transaction GMS drops (it does
// on errors, without Rollback) is forgotten, and nothing of it was applied.
type Txn struct {
	s        *Session
	id       uint64
	readOnly bool
	state    txnState

	// The catalog version every short transaction of this SQL transaction
	// is pinned to (coord.Options.PinVersion), and the partition map at that
	// version (for the per-group digests of range guards).
	pinned  bool
	version uint64
	pmap    *oracle.Map

	reads    map[string]cached // point reads: what the store held
	ranges   []*rangeRead      // range reads: spans and the entries in them
	readTxns int               // read-only short transactions sent

	writes map[string]*write // buffered writes by key
	wkeys  []string          // their keys, sorted

	undo       []undoRec // every change to writes, for statement and savepoint rollback
	savepoints []savepoint
	stmtDepth  int
	stmtMark   int
}

type txnState uint8

const (
	txnActive txnState = iota
	txnDone            // committed or rolled back: a further use starts afresh
)

var txnIDs atomic.Uint64

func newTxn(s *Session, readOnly bool) *Txn {
	return &Txn{s: s, id: txnIDs.Add(1), readOnly: readOnly, reads: map[string]cached{}, writes: map[string]*write{}}
}

// String implements sql.Transaction.
func (t *Txn) String() string { return fmt.Sprintf("augustus-txn-%d", t.id) }

// IsReadOnly implements sql.Transaction.
func (t *Txn) IsReadOnly() bool { return t.readOnly }

// cached is what a read found in the store.
type cached struct {
	present bool
	value   []byte
}

// rangeRead is a span read completely: entries are all the present keys of
// [start, end) as the store held them.
type rangeRead struct {
	start, end []byte
	entries    []txn.KV
}

func (r *rangeRead) contains(key []byte) bool {
	return bytes.Compare(r.start, key) <= 0 && (r.end == nil || bytes.Compare(key, r.end) < 0)
}

func (r *rangeRead) find(key []byte) (cached, bool) {
	i := sort.Search(len(r.entries), func(i int) bool { return bytes.Compare(r.entries[i].Key, key) >= 0 })
	if i < len(r.entries) && bytes.Equal(r.entries[i].Key, key) {
		return cached{present: true, value: r.entries[i].Value}, true
	}
	return cached{}, true
}

// reset makes a finished transaction usable as a new one (GMS may keep a
// transaction object across a failed COMMIT).
func (t *Txn) reset() {
	ro := t.readOnly
	*t = Txn{s: t.s, id: txnIDs.Add(1), readOnly: ro, reads: map[string]cached{}, writes: map[string]*write{}}
}

func (t *Txn) active() {
	if t.state != txnActive {
		t.reset()
	}
}

// Pin ties the transaction to the catalog snapshot a statement was planned
// with: its version, which every short transaction carries, and the
// partition map at that version. A statement that meets tables of two
// catalog versions in one SQL transaction fails with ErrSchemaChanged (the
// transaction could not commit at either).
func (t *Txn) Pin(version uint64, m *oracle.Map) error {
	t.active()
	if !t.pinned {
		t.pinned, t.version, t.pmap = true, version, m
		return nil
	}
	if version != t.version {
		if version > t.version {
			t.s.stale.Store(version)
		}
		return newSchemaChanged()
	}
	return nil
}

// Version returns the pinned catalog version (0, false before Pin).
func (t *Txn) Version() (uint64, bool) { return t.version, t.pinned }

// HasWrites reports whether the transaction has buffered writes.
func (t *Txn) HasWrites() bool { return len(t.writes) > 0 }

// Used reports whether the transaction read or wrote anything.
func (t *Txn) Used() bool {
	return t.state == txnActive && (t.readTxns > 0 || len(t.writes) > 0 || len(t.reads) > 0 || len(t.ranges) > 0)
}

// ReadTxns returns the read-only short transactions sent so far.
func (t *Txn) ReadTxns() int { return t.readTxns }

// do sends one short transaction pinned to the transaction's version and
// maps its failures to the session's errors.
func (t *Txn) do(ctx context.Context, ops []txn.Op) (*coord.Result, error) {
	if !t.pinned {
		return nil, internal("a transaction sent before the catalog version was pinned")
	}
	res, err := t.s.env.Store.Do(ctx, coord.Ops(ops), coord.Options{PinVersion: true, MetadataVersion: t.version})
	if err != nil {
		return res, t.mapErr(err)
	}
	return res, nil
}

// mapErr turns a short transaction's failure into the SQL error the client
// sees (an abort of a read leaves nothing to undo: reads buffer nothing).
func (t *Txn) mapErr(err error) error {
	var ae *coord.AbortedError
	if errors.As(err, &ae) {
		switch ae.Cause.Reason {
		case txn.ReasonStaleMetadata:
			t.s.stale.Store(ae.Cause.Version)
			return newSchemaChanged()
		case txn.ReasonConflict, txn.ReasonTerminatedEarly:
			t.s.env.Stats.Conflicts.Add(1)
			return Serialization("conflict with a concurrent transaction")
		case txn.ReasonTooLarge:
			return TooLarge("the results of one short transaction exceed", 0, t.s.env.limits().MaxResultBytes,
				"read fewer or smaller rows at once")
		}
		return Serialization(ae.Cause.Reason.String())
	}
	if errors.Is(err, coord.ErrInvalid) && errors.Is(err, txn.ErrTooLarge) {
		return TooLarge("a short transaction is over the limits:", 0, 0, err.Error())
	}
	return err
}

// lookup answers a read from what the transaction knows: its own writes,
// then its cached reads. known is false when the store must be asked.
func (t *Txn) lookup(key []byte) (c cached, known bool) {
	if w := t.writes[string(key)]; w != nil {
		return cached{present: w.present, value: w.value}, true
	}
	return t.base(key)
}

// base is what the transaction knows the store holds for key, without its
// own writes.
func (t *Txn) base(key []byte) (cached, bool) {
	if c, ok := t.reads[string(key)]; ok {
		return c, true
	}
	for _, r := range t.ranges {
		if r.contains(key) {
			return r.find(key)
		}
	}
	return cached{}, false
}

// Get reads one key: from the transaction's writes or cache, or with one
// read-only short transaction holding exactly one read.
func (t *Txn) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	t.active()
	if c, ok := t.lookup(key); ok {
		return c.value, c.present, nil
	}
	res, err := t.GetMany(ctx, [][]byte{key})
	if err != nil {
		return nil, false, err
	}
	return res[0].Value, res[0].Present, nil
}

// Found is the answer to one key of GetMany.
type Found struct {
	Present bool
	Value   []byte
}

// GetMany reads keys, those the transaction does not know in one read-only
// short transaction (several if they are more than a transaction may
// carry).
func (t *Txn) GetMany(ctx context.Context, keys [][]byte) ([]Found, error) {
	t.active()
	out := make([]Found, len(keys))
	var missing []int
	seen := map[string]bool{}
	for i, k := range keys {
		if c, ok := t.lookup(k); ok {
			out[i] = Found{Present: c.present, Value: c.value}
			continue
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			missing = append(missing, i)
		}
	}
	maxOps := t.s.env.limits().MaxOps
	for len(missing) > 0 {
		n := min(len(missing), maxOps)
		ops := make([]txn.Op, n)
		for j, i := range missing[:n] {
			ops[j] = txn.Op{Kind: txn.OpRead, Key: keys[i]}
		}
		res, err := t.do(ctx, ops)
		if err != nil {
			return nil, err
		}
		t.readTxns++
		t.s.env.Stats.ReadTxns.Add(1)
		for j, i := range missing[:n] {
			r := res.Ops[j]
			t.reads[string(keys[i])] = cached{present: r.Present, value: r.Value}
		}
		missing = missing[n:]
	}
	for i, k := range keys {
		if c, ok := t.lookup(k); ok {
			out[i] = Found{Present: c.present, Value: c.value}
		}
	}
	return out, nil
}

// recordRange records that [start, end) was read completely with entries,
// extending a recorded range that ends where this one starts (the chunks of
// one scan become one span).
func (t *Txn) recordRange(start, end []byte, entries []txn.KV) {
	for _, r := range t.ranges {
		if r.end != nil && bytes.Equal(r.end, start) {
			r.end = end
			r.entries = append(r.entries, entries...)
			return
		}
	}
	t.ranges = append(t.ranges, &rangeRead{start: slices.Clone(start), end: slices.Clone(end), entries: entries})
}

// covering returns the recorded range holding key, if any.
func (t *Txn) covering(key []byte) *rangeRead {
	for _, r := range t.ranges {
		if r.contains(key) {
			return r
		}
	}
	return nil
}

// nextRangeStart returns the lowest start of a recorded range above key and
// below end (a scan's chunk stops there: the rest is cached).
func (t *Txn) nextRangeStart(key, end []byte) []byte {
	best := end
	for _, r := range t.ranges {
		if bytes.Compare(r.start, key) > 0 && (best == nil || bytes.Compare(r.start, best) < 0) {
			best = r.start
		}
	}
	return best
}
