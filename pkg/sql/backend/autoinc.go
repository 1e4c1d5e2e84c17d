package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/sql/session"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
)

// AUTO_INCREMENT (DESIGN.md §6): each front-end takes blocks of ids with one
// small data transaction per block on the table's counter key — an ordinary
// data key in the table's span, so in its group, never metadata (a metadata
// write would abort every data transaction in flight, M2). Ids are handed
// out of the block in memory; ids are unique across front-ends, increase
// within one, and, as with MySQL's interleaved lock mode, are neither
// consecutive across front-ends nor given back when a transaction rolls back.
// An explicit id at or above what this front-end would hand out next moves
// its next id past it (and the shared counter too, when the id lies beyond
// the block).

type allocators struct {
	p  *Provider
	mu sync.Mutex
	by map[uint32]*allocator // by table id
}

type allocator struct {
	mu        sync.Mutex
	next, end uint64 // the block [next, end)
	// state and known are the counter as this front-end last wrote or read
	// it (absent: known is the table's start).
	state counterState
	known uint64
}

type counterState uint8

const (
	counterUnknown counterState = iota
	counterAbsent
	counterPresent
)

func newAllocators(p *Provider) *allocators { return &allocators{p: p, by: map[uint32]*allocator{}} }

func (as *allocators) get(table uint32) *allocator {
	as.mu.Lock()
	defer as.mu.Unlock()
	a := as.by[table]
	if a == nil {
		a = &allocator{}
		as.by[table] = a
	}
	return a
}

// PeekNextAutoIncrementValue implements sql.AutoIncrementGetter: the next
// id this front-end would hand out, reading the counter if it holds no
// block (SHOW CREATE TABLE, information_schema).
func (t *Table) PeekNextAutoIncrementValue(ctx *sql.Context) (uint64, error) {
	a := t.p.autoInc.get(t.desc.ID)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next < a.end {
		return a.next, nil
	}
	v, _, err := t.readCounter(ctx)
	return v, err
}

// GetNextAutoIncrementValue implements sql.AutoIncrementTable. GMS calls
// it for each inserted row with the value given (nil for NULL or 0: "next
// id"); a new id is taken from the block at once, so concurrent sessions
// never get the same one.
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, given any) (uint64, error) {
	a := t.p.autoInc.get(t.desc.ID)
	a.mu.Lock()
	defer a.mu.Unlock()
	if given != nil {
		v, _, err := types.Uint64.Convert(ctx, given)
		if err != nil {
			return 0, err
		}
		u := v.(uint64)
		if u >= a.next {
			if u < a.end {
				a.next = u + 1
			} else {
				// Beyond the block: take a block past it, which moves the
				// shared counter past it too, so no front-end hands it out
				// later.
				if err := t.allocate(ctx, a, u+1); err != nil {
					return 0, err
				}
			}
		}
		return u, nil
	}
	if a.next >= a.end {
		if err := t.allocate(ctx, a, 0); err != nil {
			return 0, err
		}
	}
	v := a.next
	a.next++
	return v, nil
}

// AutoIncrementSetter implements sql.AutoIncrementTable (ALTER TABLE ...
// AUTO_INCREMENT = n, and CREATE TABLE's option).
func (t *Table) AutoIncrementSetter(*sql.Context) sql.AutoIncrementSetter { return &aiSetter{t: t} }

type aiSetter struct{ t *Table }

// SetAutoIncrementValue sets the next id: for a table created by this
// statement, as its counter's start; otherwise the shared counter is moved
// up to it (never down: ids handed out stay unique).
func (s *aiSetter) SetAutoIncrementValue(ctx *sql.Context, v uint64) error {
	t := s.t
	if t.pending(ctx) {
		pd, err := t.p.ddl(ctx)
		if err != nil {
			return err
		}
		c, err := pd.table(t.desc.ID)
		if err != nil {
			return err
		}
		c.AutoIncrementStart = v
		return pd.change.PutTable(c)
	}
	a := t.p.autoInc.get(t.desc.ID)
	a.mu.Lock()
	defer a.mu.Unlock()
	return t.allocate(ctx, a, v)
}

// AcquireAutoIncrementLock implements sql.AutoIncrementSetter: ids are
// allocated under the allocator's own lock.
func (s *aiSetter) AcquireAutoIncrementLock(*sql.Context) (func(), error) { return func() {}, nil }

// Close implements sql.Closer.
func (s *aiSetter) Close(*sql.Context) error { return nil }

// counterTxn runs a short transaction on the counter key, outside the SQL
// transaction (ids are not given back on rollback), pinned to the table's
// catalog version.
func (t *Table) counterTxn(ctx context.Context, ops ...txn.Op) (*coord.Result, error) {
	res, err := t.p.env.Store.Do(ctx, coord.Ops(ops), coord.Options{PinVersion: true, MetadataVersion: t.snap.Version})
	if errors.Is(err, txn.ErrStaleMetadata) {
		return nil, session.SchemaChangedError()
	}
	return res, err
}

// readCounter reads the counter (its start when absent).
func (t *Table) readCounter(ctx context.Context) (uint64, bool, error) {
	res, err := t.counterTxn(ctx, txn.Op{Kind: txn.OpRead, Key: rowenc.AutoIncrementKey(t.desc.ID)})
	if err != nil {
		return 0, false, err
	}
	if !res.Ops[0].Present {
		return max(t.desc.AutoIncrementStart, 1), false, nil
	}
	v, err := rowenc.DecodeCounter(res.Ops[0].Value)
	return v, true, err
}

// setCounter moves the counter from what the allocator believes it holds to
// v, guarded by a cmp on the belief (an insert if it believes the key
// absent); false when the belief was wrong.
func (t *Table) setCounter(ctx context.Context, a *allocator, v uint64) (bool, error) {
	key := rowenc.AutoIncrementKey(t.desc.ID)
	ops := []txn.Op{{Kind: txn.OpInsert, Key: key, Value: rowenc.EncodeCounter(v)}}
	if a.state == counterPresent {
		ops = []txn.Op{{Kind: txn.OpCmp, Key: key, Value: rowenc.EncodeCounter(a.known)}, {Kind: txn.OpWrite, Key: key, Value: rowenc.EncodeCounter(v)}}
	}
	_, err := t.counterTxn(ctx, ops...)
	if errors.Is(err, txn.ErrCompareFailed) || errors.Is(err, txn.ErrKeyExists) {
		a.state = counterUnknown
		return false, nil
	}
	if err != nil {
		return false, err
	}
	a.state, a.known = counterPresent, v
	return true, nil
}

// learn reads the counter into the allocator's belief.
func (t *Table) learn(ctx context.Context, a *allocator) error {
	v, present, err := t.readCounter(ctx)
	if err != nil {
		return err
	}
	a.known, a.state = v, counterAbsent
	if present {
		a.state = counterPresent
	}
	return nil
}

const counterAttempts = 16

// allocate takes the next block: [c, c+block) where c is the counter (or
// floor, if higher), which moves to c+block — one transaction when this
// front-end's belief about the counter is right (it usually is: it wrote it
// last), two when not.
func (t *Table) allocate(ctx context.Context, a *allocator, floor uint64) error {
	a.next, a.end = 0, 0
	block := t.p.cfg.AutoIncrementBlock
	for range counterAttempts {
		if a.state == counterUnknown {
			if err := t.learn(ctx, a); err != nil {
				return err
			}
		}
		c := max(a.known, floor)
		ok, err := t.setCounter(ctx, a, c+block)
		if err != nil {
			return err
		}
		if ok {
			a.next, a.end = c, c+block
			return nil
		}
	}
	return session.Serialization(fmt.Sprintf("AUTO_INCREMENT counter of %s contended", t.desc.Name))
}
