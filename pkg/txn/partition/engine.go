package partition

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/lockmgr"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Config configures an Engine. Every replica of every group must use the
// same Keys, InitialMap and Limits: Validate and execution depend on them.
type Config struct {
	// Group is the group this replica belongs to.
	Group bft.GroupID
	// Keys are the cluster's replica and admin keys.
	Keys *txn.Keys
	// InitialMap is the partition map of cluster.json: the map until a
	// metadata transaction changes it (M1, M3).
	InitialMap *oracle.Map
	// Limits bound what clients may ask; zero means txn.DefaultLimits().
	Limits txn.Limits
	// Metrics receives the engine's metrics; nil records nothing.
	Metrics *Metrics
	// Logger receives local faults; nil discards.
	Logger *slog.Logger
}

// ConfigFromCluster returns the configuration of a replica of group g.
func ConfigFromCluster(c *cluster.Cluster, g bft.GroupID) (Config, error) {
	keys, err := txn.KeysFromCluster(c)
	if err != nil {
		return Config{}, err
	}
	m, err := oracle.FromCluster(c)
	if err != nil {
		return Config{}, err
	}
	return Config{Group: g, Keys: keys, InitialMap: m, Limits: txn.DefaultLimits()}, nil
}

// Engine is a group's replicated transaction state machine (txn.md E1–E12,
// L, W1–W3, M1–M5): it implements host.Application and the runtime's
// optional signing interface (SignBytes).
//
// Everything it decides is a deterministic function of the calls it executed
// and the replicated store: its memory (the lock table, the queued metadata
// transaction, the partition map, the delivery counter) mirrors the store and
// is rebuilt from it by Restored. Execute, Restored and SignBytes run on the
// runtime's executor one at a time; Validate and SignBytes are safe for
// concurrent use.
type Engine struct {
	self    bft.GroupID
	keys    *txn.Keys
	dom     *txn.Domain
	limits  txn.Limits
	initial *oracle.Map
	groups  []bft.GroupID
	metrics *Metrics
	log     *slog.Logger

	// Mirrors of the replicated state (Restored rebuilds them).
	locks      *lockmgr.Table
	queued     *queuedMeta
	pmap       *oracle.Map
	ready      bool   // the metadata keyspace holds the version and the map
	nextOrder  uint64 // the next delivery order
	orderDirty bool
	pending    int
}

// queuedMeta is the metadata transaction queued behind pending data
// transactions (M4); at most one exists (two metadata transactions never wait
// for each other).
type queuedMeta struct {
	id  txn.TxnID
	rec *record
}

var (
	_ host.Application = (*Engine)(nil)
	_ host.Signing     = (*Engine)(nil)
)

// ErrConfig is returned by New for an unusable configuration.
var ErrConfig = errors.New("partition: bad configuration")

// New returns an engine. Call Restored before the first Execute (the replica
// runtime does, at start-up).
func New(cfg Config) (*Engine, error) {
	if cfg.Keys == nil || cfg.InitialMap == nil {
		return nil, fmt.Errorf("%w: keys and initial map are required", ErrConfig)
	}
	if !cfg.Keys.HasGroup(cfg.Group) {
		return nil, fmt.Errorf("%w: group %d is not in the cluster", ErrConfig, cfg.Group)
	}
	for _, g := range cfg.InitialMap.Groups() {
		if !cfg.Keys.HasGroup(g) {
			return nil, fmt.Errorf("%w: the partition map names group %d, not in the cluster", ErrConfig, g)
		}
	}
	if cfg.Limits == (txn.Limits{}) {
		cfg.Limits = txn.DefaultLimits()
	}
	if err := cfg.Limits.Valid(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{
		self: cfg.Group, keys: cfg.Keys, dom: cfg.Keys.Domain(), limits: cfg.Limits,
		initial: cfg.InitialMap, groups: cfg.Keys.Groups(), metrics: cfg.Metrics, log: log,
		locks: lockmgr.New(), pmap: cfg.InitialMap,
	}, nil
}

// SignBytes implements the runtime's signing interface: the bytes to sign for
// a result, or nil (E1, E9, E10). Signatures never enter the replicated
// state.
func (e *Engine) SignBytes(result []byte) []byte { return e.dom.SignBytes(result) }

// Execute implements host.Application: it executes the calls of one
// committed batch in order (their delivery order, E3) into w, an indexed
// batch the runtime commits with the client table and the sequence number
// (E11, pbft.md P2). An error is a local fault (E12): the replica stops and
// never sends a result it could not persist.
func (e *Engine) Execute(_ bft.SeqNum, calls []host.Call, w *storage.Batch) ([][]byte, error) {
	if err := e.init(w); err != nil {
		return nil, err
	}
	out := make([][]byte, len(calls))
	for i := range calls {
		res, err := e.executeCall(w, &calls[i])
		if err != nil {
			return nil, fmt.Errorf("partition: call %d of %v: %w", i, calls[i].Client, err)
		}
		out[i] = res
	}
	if e.orderDirty {
		if err := w.Set(storage.TxnRecords, keyOrder, be64(e.nextOrder)); err != nil {
			return nil, fmt.Errorf("partition: delivery order: %w", err)
		}
		e.orderDirty = false
	}
	e.metrics.gauges(e.pending, e.queuedCount(), e.locks.Len())
	return out, nil
}

func (e *Engine) queuedCount() int {
	if e.queued != nil {
		return 1
	}
	return 0
}

// executeCall executes one call. Validate accepted it before it was ordered
// (T4, pbft.md N2); it is decoded again here, and a call that no longer
// decodes is answered with a refusal, the same at every replica.
func (e *Engine) executeCall(w *storage.Batch, call *host.Call) ([]byte, error) {
	c, err := txn.DecodeCall(call.Payload)
	if err != nil {
		return e.invalid(err), nil
	}
	if c.Kind == txn.CallQuery {
		return e.query(w, call.Client, c.From)
	}
	t, err := e.limits.CheckEncoded(c.Txn)
	if err != nil {
		return e.invalid(err), nil
	}
	d := &delivery{call: call, c: c, t: t, id: e.dom.ID(c.Txn)}
	switch c.Kind {
	case txn.CallTxn:
		return e.deliver(w, d)
	case txn.CallOutcome:
		return e.outcome(w, d)
	case txn.CallRelease:
		return e.release(w, d)
	case txn.CallProof:
		return e.proof(w, d)
	}
	return e.invalid(fmt.Errorf("%w: call kind %q", txn.ErrMalformed, byte(c.Kind))), nil
}

// delivery is one call carrying a transaction, being executed.
type delivery struct {
	call *host.Call
	c    *txn.Call
	t    *txn.Txn
	id   txn.TxnID
}

func (e *Engine) invalid(err error) []byte {
	e.metrics.refused(txn.RefuseInvalid)
	return (&txn.Result{Kind: txn.ResultRefusal, Group: e.self, Code: txn.RefuseInvalid, Message: err.Error()}).Encode()
}

// Restored implements host.Application: the store changed under the
// engine (start-up, state transfer), so it rebuilds its memory from r. The
// lock table is rebuilt verbatim from the pending records, in delivery
// order, never recomputed from data (E11): a chunk's span depends on keys
// that may have changed since.
func (e *Engine) Restored(r host.Reader) error {
	e.locks = lockmgr.New()
	e.queued = nil
	e.pending = 0
	e.orderDirty = false
	if err := e.loadMetadata(r); err != nil {
		return err
	}
	v, ok, err := get(r, storage.TxnRecords, keyOrder)
	if err != nil {
		return fmt.Errorf("partition: restore delivery order: %w", err)
	}
	e.nextOrder = 1
	if ok {
		if len(v) != 8 {
			return fmt.Errorf("%w: delivery order of %d bytes", errCorrupt, len(v))
		}
		e.nextOrder = beUint64(v)
	}
	var ids []txn.TxnID
	err = r.Scan(storage.TxnRecords, []byte{prefixPending}, []byte{prefixPending + 1}, 0, func(_, v []byte) error {
		if len(v) != 32 {
			return fmt.Errorf("%w: pending index entry of %d bytes", errCorrupt, len(v))
		}
		ids = append(ids, txn.TxnID(v))
		return nil
	})
	if err != nil {
		return fmt.Errorf("partition: restore pending index: %w", err)
	}
	for _, id := range ids {
		rec, err := e.loadRecord(r, id)
		if err != nil {
			return err
		}
		if rec == nil {
			return fmt.Errorf("%w: pending index names %s without a record", errCorrupt, id)
		}
		switch rec.state {
		case txn.StatePending:
			if err := e.locks.Restore(holder{ID: id, Order: rec.order}, rec.locks); err != nil {
				return fmt.Errorf("partition: restore locks of %s: %w", id, err)
			}
			e.pending++
		case txn.StateQueued:
			if e.queued != nil {
				return fmt.Errorf("%w: two queued metadata transactions", errCorrupt)
			}
			e.queued = &queuedMeta{id: id, rec: rec}
		default:
			return fmt.Errorf("%w: pending index names terminated %s", errCorrupt, id)
		}
	}
	e.metrics.gauges(e.pending, e.queuedCount(), e.locks.Len())
	return nil
}

func (e *Engine) loadRecord(r reader, id txn.TxnID) (*record, error) {
	v, ok, err := get(r, storage.TxnRecords, recordKey(id))
	if err != nil {
		return nil, fmt.Errorf("partition: read record %s: %w", id, err)
	}
	if !ok {
		return nil, nil
	}
	rec, err := decodeRecord(v)
	if err != nil {
		return nil, fmt.Errorf("partition: record %s: %w", id, err)
	}
	if err := loadProven(r, id, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// loadProven sets rec.proven from the proof marker (W2) of a record that
// needs one.
func loadProven(r reader, id txn.TxnID, rec *record) error {
	if !rec.mayBeMarked() {
		return nil
	}
	_, ok, err := get(r, storage.TxnRecords, provenKey(id))
	if err != nil {
		return fmt.Errorf("partition: read proof mark of %s: %w", id, err)
	}
	rec.proven = ok
	return nil
}

func (e *Engine) putRecord(w *storage.Batch, id txn.TxnID, rec *record) error {
	if err := w.Set(storage.TxnRecords, recordKey(id), rec.encode()); err != nil {
		return fmt.Errorf("partition: write record %s: %w", id, err)
	}
	return nil
}

func (e *Engine) takeOrder() uint64 {
	o := e.nextOrder
	e.nextOrder++
	e.orderDirty = true
	return o
}
