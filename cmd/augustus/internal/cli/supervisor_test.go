package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/internal/backoff"
)

// fakeExit is the exit status of a fake process, shaped like
// *exec.ExitError: Exited is false for a death by signal.
type fakeExit struct {
	code   int
	signal os.Signal
}

func (e *fakeExit) Error() string {
	if e.signal != nil {
		return "signal: " + e.signal.String()
	}
	return fmt.Sprintf("exit status %d", e.code)
}
func (e *fakeExit) Exited() bool { return e.signal == nil }

// fakeProc is a child that exits when told (exit), on SIGKILL, and on
// SIGTERM unless it ignores it.
type fakeProc struct {
	pid        int
	exit       chan error
	ignoreTerm bool
	mu         sync.Mutex
	signals    []os.Signal
}

func (p *fakeProc) Pid() int { return p.pid }
func (p *fakeProc) Wait() error {
	return <-p.exit
}

func (p *fakeProc) Signal(s os.Signal) error {
	p.mu.Lock()
	p.signals = append(p.signals, s)
	p.mu.Unlock()
	switch {
	case s == syscall.SIGKILL:
		p.die(&fakeExit{signal: syscall.SIGKILL})
	case s == syscall.SIGTERM && !p.ignoreTerm:
		p.die(nil)
	}
	return nil
}

// die makes the process exit with err, once.
func (p *fakeProc) die(err error) {
	select {
	case p.exit <- err:
	default:
	}
}

func (p *fakeProc) got(s os.Signal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.signals {
		if g == s {
			return true
		}
	}
	return false
}

// fakeCluster spawns fake processes and records the supervisor's events.
type fakeCluster struct {
	t   *testing.T
	sup *supervisor

	mu     sync.Mutex
	nextID int
	procs  map[string][]*fakeProc // by name, in start order
	events []supEvent
	// onSpawn, if set, runs for each new process with its output: a fake
	// replica that cannot start prints why and exits at once.
	onSpawn func(name string, p *fakeProc, out io.Writer)
}

func newFakeCluster(t *testing.T, cfg supervisorConfig) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{t: t, nextID: 1000, procs: map[string][]*fakeProc{}}
	cfg.args = func(name string) []string { return []string{"replica", "--id", name} }
	cfg.output = func(string) (io.Writer, func(), error) { return io.Discard, func() {}, nil }
	cfg.spawn = func(args []string, out io.Writer) (process, error) {
		name := args[len(args)-1]
		fc.mu.Lock()
		fc.nextID++
		p := &fakeProc{pid: fc.nextID, exit: make(chan error, 1)}
		fc.procs[name] = append(fc.procs[name], p)
		hook := fc.onSpawn
		fc.mu.Unlock()
		if hook != nil {
			hook(name, p, out)
		}
		return p, nil
	}
	cfg.onEvent = func(ev supEvent) {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		fc.events = append(fc.events, ev)
	}
	if cfg.backoff.BaseDelay == 0 {
		cfg.backoff = backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second}
	}
	if cfg.stableAfter == 0 {
		cfg.stableAfter = 200 * time.Millisecond
	}
	sup, err := newSupervisor(cfg)
	require.NoError(t, err)
	fc.sup = sup
	t.Cleanup(func() { sup.Close(time.Second) })
	return fc
}

func (fc *fakeCluster) start(names ...string) {
	fc.t.Helper()
	for _, n := range names {
		_, err := fc.sup.Start(n)
		require.NoError(fc.t, err)
	}
}

// proc returns the i-th process started for name.
func (fc *fakeCluster) proc(name string, i int) *fakeProc {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.procs[name][i]
}

func (fc *fakeCluster) starts(name string) int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.procs[name])
}

// eventsOf returns the events about name so far.
func (fc *fakeCluster) eventsOf(name string) []supEvent {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var out []supEvent
	for _, ev := range fc.events {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

func (fc *fakeCluster) kinds(name string) []supEventKind {
	var ks []supEventKind
	for _, ev := range fc.eventsOf(name) {
		ks = append(ks, ev.Kind)
	}
	return ks
}

var sigkilled = &fakeExit{signal: syscall.SIGKILL}

// A replica killed after it served is reported and restarted after the
// back-off; the others are not touched.
func TestSupervisorRestartsACrashedReplicaAndKeepsTheOthers(t *testing.T) {
	fc := newFakeCluster(t, supervisorConfig{policy: restartOnFailure})
	fc.start("r0", "r1", "r2", "r3")
	time.Sleep(250 * time.Millisecond) // past stableAfter: the replicas started fine
	first := fc.proc("r0", 0)
	first.die(sigkilled)
	waitFor(t, 5*time.Second, "the restart", func() bool { return fc.starts("r0") == 2 })
	pid, ok := fc.sup.Running("r0")
	require.True(t, ok)
	require.Equal(t, fc.proc("r0", 1).pid, pid)
	require.NotEqual(t, first.pid, pid)
	waitFor(t, time.Second, "the restarted event", func() bool { return len(fc.eventsOf("r0")) == 3 })
	evs := fc.eventsOf("r0")
	require.Equal(t, []supEventKind{evExited, evRestarting, evRestarted}, fc.kinds("r0"))
	require.Equal(t, first.pid, evs[0].Pid)
	require.Equal(t, "signal: killed", describeExit(evs[0].Err))
	require.Empty(t, evs[0].Cause, "a signal's death has no printed cause")
	require.GreaterOrEqual(t, evs[0].Ran, 200*time.Millisecond)
	require.Zero(t, evs[1].StartFailures, "a crash after a good run is not a start-up failure")
	require.Equal(t, 20*time.Millisecond, evs[1].Delay, "the first restart waits the base delay")
	for _, n := range []string{"r1", "r2", "r3"} {
		require.Equal(t, 1, fc.starts(n), n)
		_, running := fc.sup.Running(n)
		require.True(t, running, n)
		require.Empty(t, fc.eventsOf(n))
		require.False(t, fc.proc(n, 0).got(syscall.SIGTERM), "%s was not stopped", n)
	}
}

// A replica that fails at start-up is restarted with a growing delay and,
// after maxStartFailures failures in a row, left down with the line it
// printed; the others keep running.
func TestSupervisorLeavesAReplicaThatKeepsFailingAtStartupDown(t *testing.T) {
	fc := newFakeCluster(t, supervisorConfig{policy: restartOnFailure, maxStartFailures: 4})
	fc.onSpawn = func(name string, p *fakeProc, out io.Writer) {
		if name == "bad" {
			fmt.Fprintln(out, "level=INFO msg=starting")
			fmt.Fprintln(out, "augustus: replica bad: key file does not match")
			p.die(&fakeExit{code: 1})
		}
	}
	fc.start("good", "bad")
	waitFor(t, 10*time.Second, "bad to be left down", func() bool {
		_, down := fc.sup.Down("bad")
		return down
	})
	reason, _ := fc.sup.Down("bad")
	require.Equal(t, "augustus: replica bad: key file does not match", reason)
	require.Equal(t, 4, fc.starts("bad"), "started once and restarted until the fourth failure")
	require.False(t, fc.sup.Alive("bad"))
	evs := fc.eventsOf("bad")
	last := evs[len(evs)-1]
	require.Equal(t, evGaveUp, last.Kind)
	require.Equal(t, 4, last.StartFailures)
	require.Equal(t, "augustus: replica bad: key file does not match", last.Cause)
	var delays []time.Duration
	for _, ev := range evs {
		if ev.Kind == evExited {
			require.Equal(t, "exit status 1", describeExit(ev.Err))
			require.Equal(t, "augustus: replica bad: key file does not match", ev.Cause)
		}
		if ev.Kind == evRestarting {
			delays = append(delays, ev.Delay)
		}
	}
	require.Equal(t, []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}, delays, "exponential, no jitter configured")
	time.Sleep(200 * time.Millisecond)
	require.Equal(t, 4, fc.starts("bad"), "no restart after giving up")
	_, running := fc.sup.Running("good")
	require.True(t, running)
	require.False(t, fc.sup.Idle())

	// Started by hand (the cause fixed), it gets a fresh count.
	fc.onSpawn = nil
	_, err := fc.sup.Start("bad")
	require.NoError(t, err)
	_, down := fc.sup.Down("bad")
	require.False(t, down)
}

func TestSupervisorRestartPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		exit    error
		restart bool
	}{
		{restartOnFailure, sigkilled, true},
		{restartOnFailure, &fakeExit{code: 2}, true},
		{restartOnFailure, nil, false},
		{restartAlways, nil, true},
		{restartAlways, sigkilled, true},
		{restartNever, sigkilled, false},
		{restartNever, &fakeExit{code: 1}, false},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.policy, describeExit(tc.exit)), func(t *testing.T) {
			fc := newFakeCluster(t, supervisorConfig{policy: tc.policy})
			fc.start("r0")
			fc.proc("r0", 0).die(tc.exit)
			waitFor(t, 5*time.Second, "the exit to be handled", func() bool { return len(fc.eventsOf("r0")) >= 2 })
			if tc.restart {
				waitFor(t, 5*time.Second, "the restart", func() bool { return fc.starts("r0") == 2 })
				return
			}
			require.Equal(t, []supEventKind{evExited, evNotRestarted}, fc.kinds("r0"))
			time.Sleep(100 * time.Millisecond)
			require.Equal(t, 1, fc.starts("r0"))
			require.True(t, fc.sup.Idle(), "nothing runs and nothing will")
		})
	}
}

// A replica killed on purpose (the demo console's kill) is not restarted.
func TestSupervisorDoesNotRestartAReplicaItKilled(t *testing.T) {
	fc := newFakeCluster(t, supervisorConfig{policy: restartAlways})
	fc.start("r0")
	require.NoError(t, fc.sup.Kill("r0"))
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, 1, fc.starts("r0"))
	require.Empty(t, fc.eventsOf("r0"))
	require.Error(t, fc.sup.Kill("r0"), "not running")
}

// Close stops every child (SIGTERM, then SIGKILL after the grace period
// for one that ignores SIGTERM) and cancels a pending restart.
func TestSupervisorCloseStopsEverythingAndCancelsPendingRestarts(t *testing.T) {
	fc := newFakeCluster(t, supervisorConfig{policy: restartOnFailure,
		backoff: backoff.Config{BaseDelay: 300 * time.Millisecond, Multiplier: 2, MaxDelay: time.Second}})
	fc.start("r0", "r1", "stubborn")
	fc.proc("stubborn", 0).ignoreTerm = true
	fc.proc("r0", 0).die(sigkilled)
	waitFor(t, 5*time.Second, "the restart to be scheduled", func() bool {
		return len(fc.kinds("r0")) == 2 && fc.kinds("r0")[1] == evRestarting
	})
	start := time.Now()
	killed := fc.sup.Close(200 * time.Millisecond)
	require.Equal(t, []string{"stubborn"}, killed)
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.True(t, fc.proc("r1", 0).got(syscall.SIGTERM))
	require.False(t, fc.proc("r1", 0).got(syscall.SIGKILL))
	require.True(t, fc.proc("stubborn", 0).got(syscall.SIGKILL))
	time.Sleep(400 * time.Millisecond)
	require.Equal(t, 1, fc.starts("r0"), "the pending restart was cancelled")
	require.Len(t, fc.eventsOf("r1"), 0, "stopping is not reported as an exit")
	_, err := fc.sup.Start("r0")
	require.Error(t, err, "closed")
}

func TestSupervisorRejectsAnUnknownPolicy(t *testing.T) {
	_, err := newSupervisor(supervisorConfig{policy: "sometimes", spawn: func([]string, io.Writer) (process, error) {
		return nil, errors.New("unused")
	}})
	require.ErrorContains(t, err, `--restart "sometimes"`)
}

func TestTailWriterKeepsTheLastNonEmptyLine(t *testing.T) {
	var tw tailWriter
	fmt.Fprint(&tw, "first\nsecond line\n\n  \n")
	require.Equal(t, "second line", tw.Last())
	fmt.Fprint(&tw, "par")
	fmt.Fprint(&tw, "tial")
	require.Equal(t, "partial", tw.Last())
	fmt.Fprint(&tw, "\n")
	require.Equal(t, "partial", tw.Last())
}
