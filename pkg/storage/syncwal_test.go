package storage

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// SyncWAL is the group commit of pkg/bft/host: batches committed without sync
// become durable by one later SyncWAL. Without the SyncWAL, a power cut that
// keeps only synced data loses them.
func TestSyncWALMakesEveryEarlierUnsyncedCommitDurable(t *testing.T) {
	for _, syncAfter := range []bool{true, false} {
		t.Run(fmt.Sprintf("sync=%v", syncAfter), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			e, err := Open("db", Options{FS: fs})
			require.NoError(t, err)
			for i := range 10 {
				b := e.NewBatch()
				require.NoError(t, b.Set(BFTState, fmt.Appendf(nil, "k%d", i), []byte("v")))
				require.NoError(t, e.Commit(b, false))
				require.NoError(t, b.Close())
			}
			if syncAfter {
				require.NoError(t, e.SyncWAL())
			}
			crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // only synced data survives
			require.NoError(t, e.Close())

			e, err = Open("db", Options{FS: crashed})
			require.NoError(t, err)
			defer e.Close()
			for i := range 10 {
				_, err := e.Get(BFTState, fmt.Appendf(nil, "k%d", i))
				if syncAfter {
					require.NoError(t, err, "batch %d committed before SyncWAL", i)
				} else {
					require.ErrorIs(t, err, ErrNotFound, "batch %d was never synced", i)
				}
			}
		})
	}
}

// NoSync (durability mode "none") turns the WAL's syncs into no-ops: SyncWAL
// and synced commits issue no fsync of the log, and a power cut loses what
// they wrote; the store still opens.
func TestNoSyncDropsWALSyncsOnly(t *testing.T) {
	fs := vfs.NewCrashableMem()
	m := NewMetrics(nil)
	e, err := Open("db", Options{FS: fs, NoSync: true, Metrics: m})
	require.NoError(t, err)
	before := testutil.ToFloat64(m.Fsyncs)
	b := e.NewBatch()
	require.NoError(t, b.Set(BFTState, []byte("k"), []byte("v")))
	require.NoError(t, e.Commit(b, true))
	require.NoError(t, b.Close())
	require.NoError(t, e.SyncWAL())
	require.Zero(t, testutil.ToFloat64(m.Fsyncs)-before, "no fsync of the WAL")
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, e.Close())

	e, err = Open("db", Options{FS: crashed})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Get(BFTState, []byte("k"))
	require.ErrorIs(t, err, ErrNotFound, "a power cut loses the unsynced log")
}
