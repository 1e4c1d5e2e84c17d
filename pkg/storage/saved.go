package storage

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// Saved checkpoints are durable copies of the committed state kept beside
// the store, so a replica can serve the state of its stable checkpoint to a
// peer that needs it (state transfer, pbft.md G3) even after it restarted or
// executed past it. A save is a pebble checkpoint — hard links to the
// store's immutable sstables and a copy of its flushed WAL — built under a
// temporary name, synced, and renamed into place, so a crash leaves either
// no checkpoint of that name or a whole one.

// savedDirName is the directory, inside the store's directory, holding
// saved checkpoints.
const savedDirName = "checkpoints"

const savingSuffix = ".saving"

func (e *Engine) savedDir() string { return e.fs.PathJoin(e.dir, savedDirName) }

// SaveCheckpoint saves the committed state under name (letters, digits,
// '-' and '_'). A checkpoint of that name already saved is kept.
func (e *Engine) SaveCheckpoint(name string) error {
	if err := checkSavedName(name); err != nil {
		return err
	}
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	dir := e.savedDir()
	if err := createDir(e.fs, dir); err != nil {
		return fmt.Errorf("storage: save checkpoint %s: %w", name, err)
	}
	final := e.fs.PathJoin(dir, name)
	if _, err := e.fs.Stat(final); err == nil {
		return nil
	}
	tmp := final + savingSuffix
	if err := e.fs.RemoveAll(tmp); err != nil {
		return fmt.Errorf("storage: save checkpoint %s: %w", name, err)
	}
	// Commits of the replicated span hold commitMu; holding it here makes the
	// checkpoint a state some commit left, never the middle of an ingest.
	e.commitMu.Lock()
	err := e.db.Checkpoint(tmp, pebble.WithFlushedWAL())
	e.commitMu.Unlock()
	if err != nil {
		_ = e.fs.RemoveAll(tmp)
		return fmt.Errorf("storage: save checkpoint %s: %w", name, err)
	}
	if err := e.fs.Rename(tmp, final); err != nil {
		return fmt.Errorf("storage: save checkpoint %s: %w", name, err)
	}
	if err := syncDir(e.fs, dir); err != nil {
		return fmt.Errorf("storage: save checkpoint %s: %w", name, err)
	}
	return nil
}

// SavedCheckpoints returns the names of the saved checkpoints, sorted.
// Saves a crash interrupted are removed.
func (e *Engine) SavedCheckpoints() ([]string, error) {
	if err := e.acquire(); err != nil {
		return nil, err
	}
	defer e.release()
	names, err := e.fs.List(e.savedDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: list saved checkpoints: %w", err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, savingSuffix) {
			_ = e.fs.RemoveAll(e.fs.PathJoin(e.savedDir(), n))
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// RemoveCheckpoint deletes a saved checkpoint.
func (e *Engine) RemoveCheckpoint(name string) error {
	if err := checkSavedName(name); err != nil {
		return err
	}
	if err := e.acquire(); err != nil {
		return err
	}
	defer e.release()
	if err := e.fs.RemoveAll(e.fs.PathJoin(e.savedDir(), name)); err != nil {
		return fmt.Errorf("storage: remove checkpoint %s: %w", name, err)
	}
	return nil
}

// OpenCheckpoint opens a saved checkpoint read-only and returns a snapshot
// of it (to Export); closing the snapshot closes the checkpoint's store.
func (e *Engine) OpenCheckpoint(name string) (*Snapshot, error) {
	if err := checkSavedName(name); err != nil {
		return nil, err
	}
	if err := e.acquire(); err != nil {
		return nil, err
	}
	dir := e.fs.PathJoin(e.savedDir(), name)
	_, err := e.fs.Stat(dir)
	e.release()
	if err != nil {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", name, err)
	}
	ro, err := Open(dir, Options{FS: e.opts.FS, ReadOnly: true, CacheSize: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", name, err)
	}
	s, err := ro.NewSnapshot()
	if err != nil {
		_ = ro.Close()
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", name, err)
	}
	s.onClose = ro.Close
	return s, nil
}

func checkSavedName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("storage: %w: checkpoint name %q", ErrInvalidArgument, name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("storage: %w: checkpoint name %q", ErrInvalidArgument, name)
		}
	}
	return nil
}
