package storage

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Snapshot is a consistent, read-only view of the engine at the moment it was
// taken, with the digest of that moment. It is safe for concurrent use. A
// replica keeps the snapshot of its last stable checkpoint open to serve state
// transfer; Close releases it (Engine.Close closes snapshots still open).
type Snapshot struct {
	e      *Engine
	digest Digest

	// mu is held for reading by every call that uses s, for writing by
	// release.
	mu     sync.RWMutex
	s      *pebble.Snapshot
	closed bool
	// onClose, if set, runs after the snapshot is released (a snapshot of a
	// saved checkpoint closes the checkpoint's store).
	onClose func() error
}

// NewSnapshot returns a snapshot of the committed state.
func (e *Engine) NewSnapshot() (*Snapshot, error) {
	if err := e.acquire(); err != nil {
		return nil, err
	}
	defer e.release()
	ps := e.db.NewSnapshot()
	// The persisted digest is written in the same batch as the data it
	// covers, so reading it through the snapshot gives the snapshot's digest.
	d, err := readDigest(ps)
	if err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("storage: new snapshot: %w", err)
	}
	s := &Snapshot{e: e, s: ps, digest: d}
	e.snapMu.Lock()
	e.snaps[s] = struct{}{}
	e.snapMu.Unlock()
	return s, nil
}

func (s *Snapshot) acquire() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Snapshot) done() { s.mu.RUnlock() }

// Digest returns the digest of the replicated state in the snapshot.
func (s *Snapshot) Digest() Digest { return s.digest }

// Sum returns the Sum of the snapshot's digest.
func (s *Snapshot) Sum() [SumSize]byte { return s.digest.Sum() }

// Get returns a copy of the value of key in ks as of the snapshot, or
// ErrNotFound.
func (s *Snapshot) Get(ks Keyspace, key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.done()
	return get(s.s, ks, key)
}

// Scan is Engine.Scan as of the snapshot.
func (s *Snapshot) Scan(ks Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.done()
	return scan(s.s, ks, start, end, limit, fn)
}

// RecomputeDigest computes the digest of the snapshot's replicated keyspaces
// by a full scan.
func (s *Snapshot) RecomputeDigest() (Digest, error) {
	if err := s.acquire(); err != nil {
		return Digest{}, err
	}
	defer s.done()
	it, err := s.s.NewIter(&pebble.IterOptions{LowerBound: replicatedDataLower, UpperBound: replicatedDataUpper})
	if err != nil {
		return Digest{}, fmt.Errorf("storage: recompute digest: %w", err)
	}
	h := hasherPool.Get().(*elementHasher)
	defer hasherPool.Put(h)
	var d Digest
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return Digest{}, fmt.Errorf("storage: recompute digest: %w", err)
		}
		k := it.Key()
		d.addLanes(h.expand(Keyspace(k[0]), k[1:], v))
	}
	if err := it.Close(); err != nil {
		return Digest{}, fmt.Errorf("storage: recompute digest: %w", err)
	}
	return d, nil
}

// Close releases the snapshot, waiting for in-flight calls (an Export
// included) to return. Calls after Close return ErrClosed.
func (s *Snapshot) Close() error {
	// Release before unregistering: Engine.Close must not close the database
	// while a registered snapshot could still be open.
	err := s.release()
	s.e.snapMu.Lock()
	if s.e.snaps != nil {
		delete(s.e.snaps, s)
	}
	s.e.snapMu.Unlock()
	if s.onClose != nil {
		if cerr := s.onClose(); cerr != nil && err == nil {
			err = cerr
		}
		s.onClose = nil
	}
	return err
}

// release closes the pebble snapshot once.
func (s *Snapshot) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.s.Close(); err != nil {
		return fmt.Errorf("storage: close snapshot: %w", err)
	}
	return nil
}
