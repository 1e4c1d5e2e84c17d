package storage

import (
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// crashPointFS crash-clones its MemFS when the n-th mutating operation
// (counted from arm) begins: a power cut at that point.
type crashPointFS struct {
	vfs.FS
	mem *vfs.MemFS
	cfg vfs.CrashCloneCfg

	armed atomic.Bool
	ops   atomic.Int64
	at    int64

	mu      sync.Mutex
	crashed *vfs.MemFS
}

func (fs *crashPointFS) arm(at int64) {
	fs.at = at
	fs.ops.Store(0)
	fs.armed.Store(true)
}

func (fs *crashPointFS) step() {
	if !fs.armed.Load() {
		return
	}
	if fs.ops.Add(1) == fs.at {
		clone := fs.mem.CrashClone(fs.cfg)
		fs.mu.Lock()
		fs.crashed = clone
		fs.mu.Unlock()
	}
}

func (fs *crashPointFS) image() *vfs.MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.crashed
}

func (fs *crashPointFS) file(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashPointFile{File: f, fs: fs}, nil
}

func (fs *crashPointFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.step()
	return fs.file(fs.FS.Create(name, c))
}

func (fs *crashPointFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, o ...vfs.OpenOption) (vfs.File, error) {
	fs.step()
	return fs.file(fs.FS.OpenReadWrite(name, c, o...))
}

func (fs *crashPointFS) OpenDir(name string) (vfs.File, error) {
	return fs.file(fs.FS.OpenDir(name))
}

func (fs *crashPointFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	fs.step()
	return fs.file(fs.FS.ReuseForWrite(o, n, c))
}

func (fs *crashPointFS) Link(o, n string) error   { fs.step(); return fs.FS.Link(o, n) }
func (fs *crashPointFS) Remove(n string) error    { fs.step(); return fs.FS.Remove(n) }
func (fs *crashPointFS) RemoveAll(n string) error { fs.step(); return fs.FS.RemoveAll(n) }
func (fs *crashPointFS) Rename(o, n string) error { fs.step(); return fs.FS.Rename(o, n) }
func (fs *crashPointFS) MkdirAll(d string, p os.FileMode) error {
	fs.step()
	return fs.FS.MkdirAll(d, p)
}
func (fs *crashPointFS) Unwrap() vfs.FS { return fs.FS }

type crashPointFile struct {
	vfs.File
	fs *crashPointFS
}

func (f *crashPointFile) Write(p []byte) (int, error) { f.fs.step(); return f.File.Write(p) }
func (f *crashPointFile) Sync() error                 { f.fs.step(); return f.File.Sync() }
func (f *crashPointFile) SyncData() error             { f.fs.step(); return f.File.SyncData() }
func (f *crashPointFile) SyncTo(n int64) (bool, error) {
	f.fs.step()
	return f.File.SyncTo(n)
}

func TestCrashDuringInstallLeavesOldOrNewStateNeverAMix(t *testing.T) {
	src := openMem(t)
	fillSource(t, src, 300, "new")
	chunks, newSum := exportEngine(t, src, 1000)

	// The store that installs: old replicated state, its own BFTState, and
	// unflushed writes in its memtable (so the ingestion must flush).
	base := vfs.NewCrashableMem()
	e, err := Open("db", Options{FS: base})
	require.NoError(t, err)
	fillSource(t, e, 200, "old")
	require.NoError(t, e.Close())

	rng := rand.New(rand.NewPCG(1, 2))
	var sawOld, sawNew bool
	for at := int64(1); ; at++ {
		mem := base.CrashClone(vfs.CrashCloneCfg{})
		fs := &crashPointFS{FS: mem, mem: mem}
		if at%2 == 0 {
			fs.cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rng}
		}
		e, err := Open("db", Options{FS: fs, stagingFileSize: 3000})
		require.NoError(t, err)
		commit(t, e, false, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("unflushed"), []byte("old"))) })
		commit(t, e, true, func(b *Batch) { require.NoError(t, b.Set(UserData, []byte("synced"), []byte("old"))) })
		old := dump(t, e)
		oldSum, err := e.Sum()
		require.NoError(t, err)
		bft := dump(t, e, BFTState)
		want := append(bft, dump(t, src, ReplicatedKeyspaces()...)...)

		fs.arm(at)
		require.NoError(t, e.InstallCheckpoint(t.Context(), stream(chunks), newSum))
		fs.armed.Store(false)
		require.NoError(t, e.Close())
		image := fs.image()
		if image == nil {
			// The install finished in fewer than at operations: every
			// crash point has been tried.
			t.Logf("tried %d crash points", at-1)
			require.Greater(t, at, int64(10))
			break
		}

		got := openOn(t, image, "db", Options{})
		state := dump(t, got)
		sum, err := got.Sum()
		require.NoError(t, err)
		switch {
		case equalKVs(state, old) && sum == oldSum:
			sawOld = true
		case equalKVs(state, want) && sum == newSum:
			sawNew = true
		default:
			// The synced-before-install writes may be missing only if the
			// crash image lost them, which a synced commit forbids.
			t.Fatalf("crash at operation %d left neither the old nor the new state:\n%v", at, state)
		}
		requireDigestConsistent(t, got)
		require.NoError(t, got.Close())
	}
	require.True(t, sawOld, "no crash point left the old state")
	require.True(t, sawNew, "no crash point left the new state")
}

func equalKVs(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
