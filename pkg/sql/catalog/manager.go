package catalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Doer runs short transactions: a *coord.Client.
type Doer interface {
	Do(ctx context.Context, ops coord.OpSource, opts coord.Options) (*coord.Result, error)
}

// ErrStale is wrapped by a change built on a snapshot the metadata has
// moved past (another front-end changed the schema first): reload, plan the
// statement again, retry.
var ErrStale = errors.New("catalog: schema changed meanwhile")

// readChunk bounds the catalog entries one read returns (a table descriptor
// is a few KiB; groups cap the results of one transaction).
const readChunk = 512

// Manager keeps one front-end's catalog: the current snapshot, local and
// versioned, so GMS's calls for tables, indexes and row counts on every
// statement make no network call. It reloads when a data transaction finds
// the metadata version moved (M2: every data transaction compares it, so a
// stale catalog is noticed by the first transaction built from it), and
// commits this front-end's schema changes. Safe for concurrent use.
type Manager struct {
	d   Doer
	cur atomic.Pointer[Snapshot]
	mu  sync.Mutex // serializes reloads and commits
}

// NewManager loads the catalog.
func NewManager(ctx context.Context, d Doer) (*Manager, error) {
	m := &Manager{d: d}
	if _, err := m.Reload(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Current returns the current snapshot.
func (m *Manager) Current() *Snapshot { return m.cur.Load() }

// Reload reads the catalog from the groups and installs it unless the
// current snapshot is newer.
func (m *Manager) Reload(ctx context.Context) (*Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reloadLocked(ctx)
}

func (m *Manager) reloadLocked(ctx context.Context) (*Snapshot, error) {
	var err error
	for range 8 {
		var s *Snapshot
		s, err = read(ctx, m.d)
		if errors.Is(err, txn.ErrStaleMetadata) {
			continue // moved between chunks: read again
		}
		if err != nil {
			return nil, err
		}
		if cur := m.cur.Load(); cur != nil && cur.Version > s.Version {
			return cur, nil
		}
		m.cur.Store(s)
		return s, nil
	}
	return nil, fmt.Errorf("catalog: reload: %w", err)
}

// Refresh reads the metadata version alone (one read at one group) and
// reloads if it moved past the current snapshot. Statements that read only
// the catalog (SHOW TABLES, information_schema) call it so that they see
// schema changes of other front-ends at once, as data statements do through
// their version compare.
func (m *Manager) Refresh(ctx context.Context) (*Snapshot, error) {
	cur := m.cur.Load()
	res, err := m.d.Do(ctx, coord.Ops{{Kind: txn.OpRead, Meta: true, Key: txn.MetaVersionKey}}, coord.Options{})
	if err != nil {
		return nil, fmt.Errorf("catalog: read the metadata version: %w", err)
	}
	v, err := txn.DecodeVersion(res.Ops[0].Value)
	if err != nil {
		return nil, err
	}
	if v <= cur.Version {
		return cur, nil
	}
	return m.Reload(ctx)
}

// ReloadPast reloads unless the current snapshot is already newer than v
// (the version a statement was planned at when its transaction found the
// metadata moved).
func (m *Manager) ReloadPast(ctx context.Context, v uint64) (*Snapshot, error) {
	if cur := m.cur.Load(); cur.Version > v {
		return cur, nil
	}
	return m.Reload(ctx)
}

// Commit sends a change as one metadata transaction over every group, at
// the version of the snapshot it was built on (coord.Options.PinVersion: a
// change built on an older catalog aborts instead of overwriting another
// front-end's, and wraps ErrStale), signed with the front-end's admin key
// (M5; without one the client refuses with coord.ErrNoAdminKey). On commit
// the new snapshot, one version up (M2), is installed.
func (m *Manager) Commit(ctx context.Context, c *Change) (*Snapshot, error) {
	if c.Empty() {
		return c.base, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.cur.Load(); cur.Version != c.base.Version {
		return nil, fmt.Errorf("%w (built at version %d, catalog at %d)", ErrStale, c.base.Version, cur.Version)
	}
	_, err := m.d.Do(ctx, coord.Ops(c.Ops()), coord.Options{PinVersion: true, MetadataVersion: c.base.Version})
	if errors.Is(err, txn.ErrStaleMetadata) {
		return nil, fmt.Errorf("%w: %w", ErrStale, err)
	}
	if err != nil {
		return nil, err
	}
	s := c.committed()
	m.cur.Store(s)
	return s, nil
}

// read reads the whole catalog consistently: the version, the map and the
// first chunk of entries in one transaction (not pinned: the client
// refreshes its own view, K1, so the version read is the one compared), the
// further chunks pinned at that version.
func read(ctx context.Context, d Doer) (*Snapshot, error) {
	ops := coord.Ops{
		{Kind: txn.OpRead, Meta: true, Key: txn.MetaVersionKey},
		{Kind: txn.OpRead, Meta: true, Key: txn.MetaPartitionsKey},
		{Kind: txn.OpReadRange, Meta: true, Key: keyPrefix, End: keyEnd, Limit: readChunk},
	}
	res, err := d.Do(ctx, ops, coord.Options{})
	if err != nil {
		return nil, fmt.Errorf("catalog: read: %w", err)
	}
	if !res.Ops[0].Present || !res.Ops[1].Present {
		return nil, fmt.Errorf("%w: no metadata version or partition map", ErrCorrupt)
	}
	version, err := txn.DecodeVersion(res.Ops[0].Value)
	if err != nil {
		return nil, err
	}
	m, err := oracle.Decode(res.Ops[1].Value)
	if err != nil {
		return nil, fmt.Errorf("%w: partition map: %v", ErrCorrupt, err)
	}
	entries := res.Ops[2].Entries
	for more, next := res.Ops[2].More, res.Ops[2].Next; more; {
		r, err := d.Do(ctx, coord.Ops{{Kind: txn.OpReadRange, Meta: true, Key: next, End: keyEnd, Limit: readChunk}},
			coord.Options{PinVersion: true, MetadataVersion: version})
		if err != nil {
			return nil, fmt.Errorf("catalog: read: %w", err)
		}
		entries = append(entries, r.Ops[0].Entries...)
		more, next = r.Ops[0].More, r.Ops[0].Next
	}
	return decode(version, m, entries)
}
