package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// crashChildEnv names the directory the child writer process writes to.
const crashChildEnv = "AUGUSTUS_STORAGE_CRASH_CHILD_DIR"

// runCrashChild is the child process of TestKillNineKeepsAcknowledgedBatches:
// it continues the workload in dir with synced commits and prints each
// acknowledged batch id on its own line, until it is killed.
func runCrashChild(dir string) int {
	e, err := Open(dir, Options{MemTableSize: 256 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	last, err := lastBatch(e)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: read last batch:", err)
		return 2
	}
	b := e.NewBatch()
	for id := last + 1; ; id++ {
		b.Reset()
		if err := workload(b, id); err != nil {
			fmt.Fprintln(os.Stderr, "child: build batch:", err)
			return 2
		}
		if err := e.Commit(b, true); err != nil {
			fmt.Fprintln(os.Stderr, "child: commit:", err)
			return 2
		}
		// os.Stdout is unbuffered: the line is out once Println returns.
		fmt.Println(id)
	}
}

func TestKillNineKeepsAcknowledgedBatchesAndNeverPartOfOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 20 processes")
	}
	const runs = 20
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	var acked uint64
	for run := range runs {
		// Kill after a random number of acknowledgements: the child is then
		// somewhere inside its next batch (building, writing the WAL or
		// fsyncing), or flushing a memtable.
		killAfter := 1 + rng.IntN(25)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(stdout)
		seen := 0
		for seen < killAfter && lines.Scan() {
			id, err := strconv.ParseUint(lines.Text(), 10, 64)
			require.NoError(t, err, "child output %q", lines.Text())
			require.Greater(t, id, acked, "ids must increase across runs")
			acked = id
			seen++
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		require.Equal(t, killAfter, seen, "child stopped early: %s", stderr.String())

		e, err := Open(dir, Options{})
		require.NoError(t, err, "run %d: reopen after SIGKILL", run)
		n := requireCrashConsistent(t, e, acked)
		require.NoError(t, e.Close())
		// Whatever survived beyond the acknowledgements is the new base.
		acked = n
	}
}

func TestCrashCloneKeepsSyncedBatchesAndNeverPartOfOne(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	fs := vfs.NewCrashableMem()
	var durable uint64 // highest batch acknowledged as synced
	for round := range 12 {
		e, err := Open("db", Options{FS: fs, MemTableSize: 256 << 10})
		require.NoError(t, err, "round %d: open", round)
		start := requireCrashConsistent(t, e, durable)

		// A writer commits the workload, synced every third batch, and
		// reports each acknowledgement; the test crashes the filesystem
		// after a random number of them while the writer keeps going.
		type ack struct {
			id     uint64
			synced bool
		}
		acks := make(chan ack)
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			b := e.NewBatch()
			defer b.Close()
			for id := start + 1; ; id++ {
				b.Reset()
				if err := workload(b, id); err != nil {
					done <- err
					return
				}
				synced := id%3 == 0
				if err := e.Commit(b, synced); err != nil {
					done <- err
					return
				}
				select {
				case acks <- ack{id, synced}:
				case <-stop:
					done <- nil
					return
				}
			}
		}()
		for n := 1 + rng.IntN(40); n > 0; n-- {
			a := <-acks
			if a.synced {
				durable = a.id
			}
		}
		// Half the crashes keep exactly the synced data, half also a random
		// part of the unsynced data (torn writes).
		cfg := vfs.CrashCloneCfg{}
		if rng.IntN(2) == 1 {
			cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 1 + rng.IntN(99), RNG: rng}
		}
		crashed := fs.CrashClone(cfg)
		close(stop)
		require.NoError(t, <-done)
		require.NoError(t, e.Close())
		fs = crashed
	}
	e, err := Open("db", Options{FS: fs})
	require.NoError(t, err)
	requireCrashConsistent(t, e, durable)
	require.NoError(t, e.Close())
}
