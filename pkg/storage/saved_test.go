package storage

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// A saved checkpoint holds the state of the moment it was saved — later
// commits do not reach it — and its export installs elsewhere with the
// digest of that moment (what a replica serves for state transfer, G3).
func TestSavedCheckpointKeepsTheStateOfItsMoment(t *testing.T) {
	fs := vfs.NewMem()
	e := openOn(t, fs, "db", Options{})
	fillSource(t, e, 200, "a")
	sumAtSave, err := e.Sum()
	require.NoError(t, err)
	require.NoError(t, e.SaveCheckpoint("00000008"))
	fillSource(t, e, 300, "b")

	snap, err := e.OpenCheckpoint("00000008")
	require.NoError(t, err)
	require.Equal(t, sumAtSave, snap.Sum())
	chunks := exportAll(t, snap, 1024)
	require.NoError(t, snap.Close())

	dst := openMem(t)
	require.NoError(t, dst.InstallCheckpoint(context.Background(), stream(chunks), sumAtSave))
	got, err := dst.Sum()
	require.NoError(t, err)
	require.Equal(t, sumAtSave, got)
}

// Saved checkpoints survive a restart of the store and a power cut that
// keeps only synced data; a save interrupted by a crash is cleaned up.
func TestSavedCheckpointSurvivesPowerCut(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	fillSource(t, e, 100, "a")
	sum, err := e.Sum()
	require.NoError(t, err)
	require.NoError(t, e.SaveCheckpoint("cp-1"))
	// A save a crash interrupted leaves a temporary directory behind.
	require.NoError(t, fs.MkdirAll("db/checkpoints/cp-2"+savingSuffix, 0o755))
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, e.Close())

	e2 := openOn(t, crashed, "db", Options{})
	names, err := e2.SavedCheckpoints()
	require.NoError(t, err)
	require.Equal(t, []string{"cp-1"}, names)
	snap, err := e2.OpenCheckpoint("cp-1")
	require.NoError(t, err)
	require.Equal(t, sum, snap.Sum())
	d, err := snap.RecomputeDigest()
	require.NoError(t, err)
	require.Equal(t, sum, d.Sum())
	require.NoError(t, snap.Close())

	require.NoError(t, e2.RemoveCheckpoint("cp-1"))
	names, err = e2.SavedCheckpoints()
	require.NoError(t, err)
	require.Empty(t, names)
	_, err = e2.OpenCheckpoint("cp-1")
	require.Error(t, err)
}

func TestSavedCheckpointNamesAreChecked(t *testing.T) {
	e := openMem(t)
	for _, bad := range []string{"", "../x", "a/b", "a b"} {
		require.ErrorIs(t, e.SaveCheckpoint(bad), ErrInvalidArgument, bad)
	}
}
