package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/augustus-db/augustus/internal/backoff"
)

// Restart policies of the supervisor (`augustus start --restart`).
const (
	// restartOnFailure restarts a replica that exited with a non-zero status
	// or was killed by a signal; one that exited 0 on its own stays down.
	restartOnFailure = "on-failure"
	// restartAlways restarts a replica however it exited.
	restartAlways = "always"
	// restartNever leaves every replica that exits down.
	restartNever = "never"
)

// Defaults of the supervisor's restart pacing.
var (
	// defaultRestartBackoff paces restarts: 0.5 s after the first exit,
	// doubling per consecutive start-up failure up to 30 s, ±20 % jitter so
	// replicas that died together do not restart in lockstep.
	defaultRestartBackoff = backoff.Config{BaseDelay: 500 * time.Millisecond, Multiplier: 2, Jitter: 0.2, MaxDelay: 30 * time.Second}
	// defaultStableAfter: a replica that ran this long started fine; its
	// count of consecutive start-up failures starts over.
	defaultStableAfter = 10 * time.Second
)

// defaultMaxStartFailures is how many start-up failures in a row leave a
// replica down: a wrong key file or a busy port does not fix itself, and
// restarting it forever would bury the one line that says why.
const defaultMaxStartFailures = 5

// supervisor runs replicas of a local cluster as child processes of this
// binary (`augustus replica ...`), for `augustus start` and `augustus demo`.
//
// A group of 3f+1 replicas exists to survive f failures, so the supervisor
// never stops the others when one exits: it reports the exit with its cause
// and, as its policy says, restarts the replica after a jittered exponential
// back-off (internal/backoff, gRPC's algorithm). A replica that exits within
// stableAfter of starting failed at start-up; after maxStartFailures such
// failures in a row it is left down, with the last line it printed (which
// says why) in the report, while the others go on serving.
//
// Children run in their own process group, so a Ctrl-C in the terminal
// reaches only the supervisor, which stops them in order: SIGTERM, a grace
// period, then SIGKILL. On Linux a child also gets SIGTERM if the supervisor
// dies without stopping it. One goroutine per child waits for its exit;
// Close cancels pending restarts and waits for all of them.
type supervisor struct {
	cfg supervisorConfig

	mu     sync.Mutex
	slots  map[string]*slot
	wg     sync.WaitGroup
	closed bool
	// emitMu makes onEvent calls one at a time.
	emitMu sync.Mutex
}

// supervisorConfig configures a supervisor.
type supervisorConfig struct {
	// args returns the command line of replica name (after the binary).
	args func(name string) []string
	// output opens where a child's stdout and stderr go; the returned
	// function is called after the child exited.
	output func(name string) (io.Writer, func(), error)
	// policy is restartOnFailure, restartAlways or restartNever.
	policy string
	// backoff paces restarts (default defaultRestartBackoff).
	backoff backoff.Config
	// stableAfter and maxStartFailures decide when a replica is left down
	// (defaults defaultStableAfter and defaultMaxStartFailures).
	stableAfter      time.Duration
	maxStartFailures int
	// onEvent, if set, receives what happens to children that the
	// supervisor did not stop itself; it is called without locks held, from
	// the children's goroutines and restart timers, one call at a time.
	onEvent func(supEvent)
	// spawn starts a child (default: the augustus binary via os/exec).
	spawn spawnFunc
}

// process is a running child: an os/exec process, or a fake in tests.
type process interface {
	Pid() int
	Signal(os.Signal) error
	// Wait waits for the exit and returns its status (nil: exit status 0).
	Wait() error
}

// spawnFunc starts a child with the given arguments and output.
type spawnFunc func(args []string, out io.Writer) (process, error)

// supEventKind says what happened to a child.
type supEventKind int

const (
	// evExited: a child exited without the supervisor stopping it.
	evExited supEventKind = iota
	// evRestarting: a restart is scheduled after Delay.
	evRestarting
	// evRestarted: the child was started again, as Pid.
	evRestarted
	// evNotRestarted: the policy leaves the child down.
	evNotRestarted
	// evGaveUp: the child failed at start-up StartFailures times in a row
	// and is left down.
	evGaveUp
	// evSpawnFailed: a restart could not start the process at all.
	evSpawnFailed
)

// supEvent is one report of the supervisor.
type supEvent struct {
	Kind supEventKind
	Name string
	Pid  int
	// Err is the exit status (evExited; nil: exit status 0) or why the
	// process could not be started (evSpawnFailed).
	Err error
	// Cause is the last line the child printed before it exited with a
	// status (not a signal): a replica that cannot start says why there.
	Cause string
	// Ran is how long the child ran (evExited).
	Ran time.Duration
	// Delay is the wait before the restart (evRestarting).
	Delay time.Duration
	// StartFailures counts the consecutive start-up failures so far, of
	// at most MaxStartFailures.
	StartFailures, MaxStartFailures int
}

// slot is one replica across its restarts.
type slot struct {
	name          string
	cur           *child          // the latest process, running or exited
	pending       *pendingRestart // nil if none
	startFailures int             // consecutive exits within stableAfter of starting
	down          string          // why it is left down ("" if it is not)
}

// pendingRestart is a scheduled restart; the slot holds it until it runs or
// is cancelled, so the timer's function knows whether it is still wanted.
type pendingRestart struct{ timer *time.Timer }

func (sl *slot) cancelRestart() {
	if sl.pending != nil {
		sl.pending.timer.Stop()
		sl.pending = nil
	}
}

type child struct {
	name     string
	proc     process
	started  time.Time
	tail     *tailWriter
	done     chan struct{}
	err      error // the exit status, valid once done is closed
	expected bool  // guarded by supervisor.mu: the supervisor stopped it
}

func newSupervisor(cfg supervisorConfig) (*supervisor, error) {
	if cfg.spawn == nil {
		exe, err := executable()
		if err != nil {
			return nil, fmt.Errorf("locate the augustus binary to run replicas: %w", err)
		}
		cfg.spawn = execSpawner(exe)
	}
	switch cfg.policy {
	case "":
		cfg.policy = restartOnFailure
	case restartOnFailure, restartAlways, restartNever:
	default:
		return nil, fmt.Errorf("--restart %q: want %s, %s or %s", cfg.policy, restartOnFailure, restartAlways, restartNever)
	}
	if cfg.backoff.BaseDelay <= 0 {
		cfg.backoff = defaultRestartBackoff
	}
	if cfg.stableAfter <= 0 {
		cfg.stableAfter = defaultStableAfter
	}
	if cfg.maxStartFailures <= 0 {
		cfg.maxStartFailures = defaultMaxStartFailures
	}
	return &supervisor{cfg: cfg, slots: make(map[string]*slot)}, nil
}

// executable is the binary started for each replica (tests replace it).
var executable = os.Executable

// execSpawner starts exe as a child in its own process group.
func execSpawner(exe string) spawnFunc {
	return func(args []string, out io.Writer) (process, error) {
		cmd := exec.Command(exe, args...)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = childSysProcAttr()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return execProcess{cmd}, nil
	}
}

type execProcess struct{ cmd *exec.Cmd }

func (p execProcess) Pid() int                 { return p.cmd.Process.Pid }
func (p execProcess) Signal(s os.Signal) error { return p.cmd.Process.Signal(s) }
func (p execProcess) Wait() error              { return p.cmd.Wait() }

func (s *supervisor) slot(name string) *slot {
	sl := s.slots[name]
	if sl == nil {
		sl = &slot{name: name}
		s.slots[name] = sl
	}
	return sl
}

// Start starts replica name by hand (at start-up, or the console's
// restart): a pending restart is cancelled, and a replica left down gets a
// fresh count of start-up failures. It fails if the replica runs.
func (s *supervisor) Start(name string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("supervisor closed")
	}
	sl := s.slot(name)
	if c := sl.cur; c != nil && !isDone(c) {
		return 0, fmt.Errorf("replica %s is already running (pid %d)", name, c.proc.Pid())
	}
	sl.cancelRestart()
	sl.down, sl.startFailures = "", 0
	c, err := s.spawnLocked(sl)
	if err != nil {
		return 0, err
	}
	return c.proc.Pid(), nil
}

// spawnLocked starts sl's process and its waiter goroutine.
func (s *supervisor) spawnLocked(sl *slot) (*child, error) {
	out, closeOut, err := s.cfg.output(sl.name)
	if err != nil {
		return nil, fmt.Errorf("replica %s: output: %w", sl.name, err)
	}
	tail := &tailWriter{}
	p, err := s.cfg.spawn(s.cfg.args(sl.name), io.MultiWriter(out, tail))
	if err != nil {
		closeOut()
		return nil, fmt.Errorf("start replica %s: %w", sl.name, err)
	}
	c := &child{name: sl.name, proc: p, started: time.Now(), tail: tail, done: make(chan struct{})}
	sl.cur = c
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := p.Wait()
		closeOut()
		s.exited(sl, c, err)
	}()
	return c, nil
}

// exited records c's exit and decides, under the policy, whether and when
// sl restarts (see the type's comment).
func (s *supervisor) exited(sl *slot, c *child, err error) {
	s.mu.Lock()
	c.err = err
	close(c.done)
	if c.expected || s.closed {
		s.mu.Unlock()
		return
	}
	ran := time.Since(c.started)
	ev := supEvent{Kind: evExited, Name: sl.name, Pid: c.proc.Pid(), Err: err, Ran: ran, MaxStartFailures: s.cfg.maxStartFailures}
	if exitedWithStatus(err) {
		ev.Cause = c.tail.Last()
	}
	events := []supEvent{ev}
	restart := s.cfg.policy == restartAlways || (s.cfg.policy == restartOnFailure && err != nil)
	switch {
	case !restart:
		events = append(events, supEvent{Kind: evNotRestarted, Name: sl.name, Err: err})
	default:
		if ran < s.cfg.stableAfter {
			sl.startFailures++
		} else {
			sl.startFailures = 0
		}
		events[0].StartFailures = sl.startFailures
		events = append(events, s.scheduleLocked(sl, ev.Cause, err))
	}
	s.mu.Unlock()
	s.emit(events...)
}

// scheduleLocked schedules sl's restart, or leaves it down after too many
// start-up failures in a row, and returns the event that says which.
func (s *supervisor) scheduleLocked(sl *slot, cause string, err error) supEvent {
	if sl.startFailures >= s.cfg.maxStartFailures {
		sl.down = cause
		if sl.down == "" {
			sl.down = describeExit(err)
		}
		return supEvent{Kind: evGaveUp, Name: sl.name, Err: err, Cause: cause,
			StartFailures: sl.startFailures, MaxStartFailures: s.cfg.maxStartFailures}
	}
	// The first restart after a good run waits BaseDelay; each further
	// start-up failure in a row doubles the wait.
	d := backoff.Delay(s.cfg.backoff, max(sl.startFailures-1, 0))
	p := &pendingRestart{}
	sl.pending = p
	p.timer = time.AfterFunc(d, func() { s.restart(sl, p) })
	return supEvent{Kind: evRestarting, Name: sl.name, Delay: d,
		StartFailures: sl.startFailures, MaxStartFailures: s.cfg.maxStartFailures}
}

// restart runs when p, sl's pending restart, is due.
func (s *supervisor) restart(sl *slot, p *pendingRestart) {
	s.mu.Lock()
	if s.closed || sl.pending != p {
		s.mu.Unlock()
		return // stopped, or replaced by a start by hand
	}
	sl.pending = nil
	var ev supEvent
	c, err := s.spawnLocked(sl)
	if err != nil {
		// The process could not even start: a start-up failure too.
		sl.startFailures++
		ev = supEvent{Kind: evSpawnFailed, Name: sl.name, Err: err}
		next := s.scheduleLocked(sl, err.Error(), err)
		s.mu.Unlock()
		s.emit(ev, next)
		return
	}
	ev = supEvent{Kind: evRestarted, Name: sl.name, Pid: c.proc.Pid(),
		StartFailures: sl.startFailures, MaxStartFailures: s.cfg.maxStartFailures}
	s.mu.Unlock()
	s.emit(ev)
}

func (s *supervisor) emit(events ...supEvent) {
	if s.cfg.onEvent == nil {
		return
	}
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	for _, ev := range events {
		s.cfg.onEvent(ev)
	}
}

// exitedWithStatus reports whether err is an exit with a status, as
// opposed to death by a signal (whose last printed line says nothing of
// why).
func exitedWithStatus(err error) bool {
	var st interface{ Exited() bool }
	return err != nil && errors.As(err, &st) && st.Exited()
}

func isDone(c *child) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Running reports whether name runs, and its pid.
func (s *supervisor) Running(name string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[name]
	if sl == nil || sl.cur == nil || isDone(sl.cur) {
		return 0, false
	}
	return sl.cur.proc.Pid(), true
}

// Alive reports whether name runs or will be restarted.
func (s *supervisor) Alive(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[name]
	return sl != nil && (sl.pending != nil || (sl.cur != nil && !isDone(sl.cur)))
}

// Down reports whether name is left down after failing at start-up, and
// why (the last line it printed, or its exit status).
func (s *supervisor) Down(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[name]
	if sl == nil || sl.down == "" {
		return "", false
	}
	return sl.down, true
}

// Stopped reports whether name is not running and will not be restarted by
// the supervisor — left down after failing at start-up, or exited on its
// own under a policy that does not restart it — and why (the last line it
// printed, or its exit status). A replica stopped on purpose (Stop, Kill)
// does not count.
func (s *supervisor) Stopped(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slots[name]
	if sl == nil {
		return "", false
	}
	if sl.down != "" {
		return sl.down, true
	}
	c := sl.cur
	if c == nil || !isDone(c) || c.expected || sl.pending != nil {
		return "", false
	}
	why := ""
	if exitedWithStatus(c.err) {
		why = c.tail.Last()
	}
	if why == "" {
		why = describeExit(c.err)
	}
	return why, true
}

// Idle reports whether no child runs and no restart is pending: nothing
// will happen until someone starts a replica by hand.
func (s *supervisor) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		if sl.pending != nil || (sl.cur != nil && !isDone(sl.cur)) {
			return false
		}
	}
	return true
}

// Kill sends SIGKILL to name (a crash, as kill -9, done on purpose: it is
// not restarted) and waits for it to exit.
func (s *supervisor) Kill(name string) error {
	s.mu.Lock()
	sl := s.slots[name]
	if sl == nil || sl.cur == nil || isDone(sl.cur) {
		s.mu.Unlock()
		return fmt.Errorf("replica %s is not running", name)
	}
	c := sl.cur
	c.expected = true
	s.mu.Unlock()
	_ = c.proc.Signal(syscall.SIGKILL)
	<-c.done
	return nil
}

// Close cancels pending restarts and stops every child: SIGTERM, then
// SIGKILL for those still running after grace. It waits for the waiter
// goroutines and returns the names of the children it had to kill.
func (s *supervisor) Close(grace time.Duration) []string {
	s.mu.Lock()
	s.closed = true
	var running []*child
	for _, sl := range s.slots {
		sl.cancelRestart()
		if c := sl.cur; c != nil && !isDone(c) {
			c.expected = true
			running = append(running, c)
		}
	}
	s.mu.Unlock()
	for _, c := range running {
		_ = c.proc.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	expired := false
	var killed []string
	for _, c := range running {
		if !expired {
			select {
			case <-c.done:
				continue
			case <-deadline.C:
				expired = true
			}
		}
		if !isDone(c) {
			_ = c.proc.Signal(syscall.SIGKILL)
			killed = append(killed, c.name)
		}
		<-c.done
	}
	s.wg.Wait()
	sort.Strings(killed)
	return killed
}

// describeExit says how a child ended.
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
