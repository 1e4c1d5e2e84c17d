package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// The metadata keyspace (M1–M3) is replicated in every group; this group
// keeps its own metadata version under txn.MetaVersionKey (M2) and the
// partition map under txn.MetaPartitionsKey. Both are written on the first
// execution — version 0 and cluster.json's map — so they are part of the
// replicated, digested state from then on, at every replica alike.

// loadMetadata mirrors the stored partition map (Restored).
func (e *Engine) loadMetadata(r reader) error {
	_, ok, err := get(r, storage.Metadata, txn.MetaVersionKey)
	if err != nil {
		return fmt.Errorf("partition: read metadata version: %w", err)
	}
	if !ok {
		e.ready, e.pmap = false, e.initial
		return nil
	}
	v, ok, err := get(r, storage.Metadata, txn.MetaPartitionsKey)
	if err != nil {
		return fmt.Errorf("partition: read partition map: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: metadata version without a partition map", errCorrupt)
	}
	m, err := oracle.Decode(v)
	if err != nil {
		return fmt.Errorf("%w: partition map: %w", errCorrupt, err)
	}
	e.ready, e.pmap = true, m
	return nil
}

// init writes the initial metadata on the first execution.
func (e *Engine) init(w *storage.Batch) error {
	if e.ready {
		return nil
	}
	if err := w.Set(storage.Metadata, txn.MetaVersionKey, txn.EncodeVersion(0)); err != nil {
		return fmt.Errorf("partition: initialize metadata: %w", err)
	}
	if err := w.Set(storage.Metadata, txn.MetaPartitionsKey, e.initial.Encode()); err != nil {
		return fmt.Errorf("partition: initialize metadata: %w", err)
	}
	e.ready, e.pmap = true, e.initial
	return nil
}

// version reads this group's metadata version (M2).
func (e *Engine) version(r reader) (uint64, error) {
	v, ok, err := get(r, storage.Metadata, txn.MetaVersionKey)
	if err != nil {
		return 0, fmt.Errorf("partition: read metadata version: %w", err)
	}
	if !ok {
		return 0, fmt.Errorf("%w: no metadata version", errCorrupt)
	}
	ver, err := txn.DecodeVersion(v)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return ver, nil
}
