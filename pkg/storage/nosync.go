package storage

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// noSyncWALFS makes every sync of a write-ahead log file a no-op, for
// Options.NoSync. Writes still reach the operating system before a synced
// commit returns (pebble flushes its WAL buffer, then calls the sync this
// wrapper drops), so a process crash loses nothing; a power cut loses the
// log's tail. Sstables, the manifest and directories are still synced, so
// the store always opens again, at an earlier state.
type noSyncWALFS struct{ vfs.FS }

// isWAL reports whether name is one of pebble's write-ahead log files
// (NNNNNN.log).
func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs noSyncWALFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isWAL(name) {
		return f, err
	}
	return noSyncFile{f}, nil
}

func (fs noSyncWALFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs noSyncWALFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

func (fs noSyncWALFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(newname, f, err)
}

func (fs noSyncWALFS) Unwrap() vfs.FS { return fs.FS }

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error                { return nil }
func (noSyncFile) SyncData() error            { return nil }
func (noSyncFile) SyncTo(int64) (bool, error) { return true, nil }
