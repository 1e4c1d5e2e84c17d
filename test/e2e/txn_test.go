package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// benchProc is one `augustus bench` client process running in the
// background.
type benchProc struct {
	cmd  *exec.Cmd
	out  lockedBuffer
	done chan error
}

func startBench(t *testing.T, args ...string) *benchProc {
	t.Helper()
	b := &benchProc{done: make(chan error, 1)}
	b.cmd = exec.Command(binary, append([]string{"bench"}, args...)...)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

func (b *benchProc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("bench did not finish within %s:\n%s", timeout, b.out.String())
		return nil
	}
}

// A cluster of 2 groups × 4 replica processes under `augustus start` runs
// the transaction engine; three client processes transfer money across the
// groups concurrently (the bank workload, every transfer guarded by cmp on
// both accounts) while first one replica of each group is killed with kill
// -9 (start restarts it), then every replica at once. At the end the total is
// what it was (checked by each process in one transaction), and the merged
// history of every process — set-up, transfers, final reads — passes the
// Elle checker (txn.md X1): no acknowledged transfer is lost or applied twice,
// and no committed read saw a state that no serial order explains (X4, X2).
func TestE2ETxnBankAcrossGroupsSurvivesKills(t *testing.T) {
	skipInShort(t)
	measure := 25 * time.Second
	tc := newCluster(t, clusterOptions{groups: 2, clients: 4})
	sp := superviseCluster(t, tc, "--app", "txn")
	if pids := sp.pids(); len(pids) != 8 {
		t.Fatalf("start printed %d replica rows:\n%s", len(pids), sp.stdout.String())
	}
	dir := t.TempDir()
	key := func(i int) string { return cluster.KeyPath(tc.dir, cluster.ClientName(i)) }
	history := func(i int) string { return filepath.Join(dir, fmt.Sprintf("h%d.txt", i)) }
	common := []string{"--dir", tc.dir, "--workload", "bank", "--app", "txn", "--items", "12", "--progress", "lines"}

	// Set-up: the accounts, recorded as the history's first writes.
	load := startBench(t, append(common, "--client-key", key(0), "--load", "--duration", "0",
		"--history", history(0), "--process-base", "0")...)
	if err := load.wait(t, 120*time.Second); err != nil {
		t.Fatalf("loading the accounts: %v\n%s", err, load.out.String())
	}

	var benches []*benchProc
	for i := 1; i <= 3; i++ {
		benches = append(benches, startBench(t, append(common, "--client-key", key(i), "--clients", "4",
			"--duration", measure.String(), "--warmup", "0s", "--call-timeout", "90s",
			"--history", history(i), "--process-base", fmt.Sprint(100*i))...))
	}

	// One replica of each group, then every replica.
	time.Sleep(4 * time.Second)
	pids := sp.pids()
	for _, name := range []string{"g0r1", "g1r2"} {
		if err := syscall.Kill(pids[name], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "start to restart g0r1 and g1r2", func() bool {
		out := sp.stdout.String()
		return strings.Contains(out, "replica g0r1 restarted") && strings.Contains(out, "replica g1r2 restarted")
	})
	time.Sleep(4 * time.Second)
	for name, pid := range currentPids(sp) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = name
	}
	waitFor(t, 90*time.Second, "start to restart every replica", func() bool {
		return strings.Count(sp.stdout.String(), "restarted (pid") >= 2+8
	})

	for i, b := range benches {
		err := b.wait(t, measure+5*time.Minute)
		out := b.out.String()
		if !strings.Contains(out, "bank: ") || !strings.Contains(out, "accounts, total") {
			t.Fatalf("bench %d did not read the total (exit %v):\n%s", i+1, err, out)
		}
		if strings.Contains(out, "money was created or lost") {
			t.Fatalf("bench %d found the total changed:\n%s", i+1, out)
		}
		t.Logf("bench %d (exit %v):\n%s", i+1, err, lastLines(out, 12))
	}

	// The merged history of every process.
	args := []string{"bench", "--dir", tc.dir}
	for i := 0; i <= 3; i++ {
		args = append(args, "--check-history", history(i))
	}
	out, err := runAugustus(t, 5*time.Minute, args...)
	if err != nil {
		t.Fatalf("the merged history fails the Elle checker (X1): %v\n%s", err, out)
	}
	t.Logf("history check:\n%s", lastLines(out, 10))
}

var restartedNamePid = regexp.MustCompile(`replica (g\d+r\d+) restarted \(pid (\d+)\)`)

// currentPids reads the latest pid of every replica from start's output:
// the table of the first start, then "restarted (pid N)" lines.
func currentPids(sp *startProc) map[string]int {
	pids := sp.pids()
	for _, m := range restartedNamePid.FindAllStringSubmatch(sp.stdout.String(), -1) {
		var pid int
		fmt.Sscan(m[2], &pid)
		pids[m[1]] = pid
	}
	return pids
}
