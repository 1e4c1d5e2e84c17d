package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"
)

// supervisor runs replicas of a local cluster as child processes of this
// binary (`augustus replica ...`), for `augustus start` and `augustus demo`.
//
// Children run in their own process group, so a Ctrl-C in the terminal
// reaches only the supervisor, which stops them in order: SIGTERM, a grace
// period, then SIGKILL. On Linux a child also gets SIGTERM if the supervisor
// dies without stopping it. One goroutine per child waits for its exit; Close
// waits for all of them.
type supervisor struct {
	exe  string
	args func(name string) []string
	// output opens where a child's stdout and stderr go; the returned
	// function is called after the child exited.
	output func(name string) (io.Writer, func(), error)
	// onExit, if set, is called from the child's waiter goroutine after it
	// exited; expected is true when the supervisor stopped or killed it.
	onExit func(name string, pid int, err error, expected bool)

	mu     sync.Mutex
	procs  map[string]*child
	wg     sync.WaitGroup
	closed bool
}

type child struct {
	name     string
	cmd      *exec.Cmd
	done     chan struct{}
	err      error // the exit status, valid once done is closed
	expected bool  // guarded by supervisor.mu
}

func newSupervisor(args func(name string) []string, output func(name string) (io.Writer, func(), error)) (*supervisor, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("locate the augustus binary to run replicas: %w", err)
	}
	return &supervisor{exe: exe, args: args, output: output, procs: make(map[string]*child)}, nil
}

// executable is the binary started for each replica (tests replace it).
var executable = os.Executable

// Start starts replica name; it fails if it is already running.
func (s *supervisor) Start(name string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("supervisor closed")
	}
	if c := s.procs[name]; c != nil && !isDone(c) {
		return 0, fmt.Errorf("replica %s is already running (pid %d)", name, c.cmd.Process.Pid)
	}
	out, closeOut, err := s.output(name)
	if err != nil {
		return 0, fmt.Errorf("replica %s: output: %w", name, err)
	}
	cmd := exec.Command(s.exe, s.args(name)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		closeOut()
		return 0, fmt.Errorf("start replica %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	s.procs[name] = c
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := cmd.Wait()
		closeOut()
		s.mu.Lock()
		c.err = err
		expected := c.expected
		close(c.done)
		s.mu.Unlock()
		if s.onExit != nil {
			s.onExit(name, cmd.Process.Pid, err, expected)
		}
	}()
	return cmd.Process.Pid, nil
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
	c := s.procs[name]
	if c == nil || isDone(c) {
		return 0, false
	}
	return c.cmd.Process.Pid, true
}

// Kill sends SIGKILL to name (a crash, as kill -9) and waits for it to exit.
func (s *supervisor) Kill(name string) error {
	c, err := s.markStopping(name)
	if err != nil {
		return err
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return nil
}

func (s *supervisor) markStopping(name string) (*child, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.procs[name]
	if c == nil || isDone(c) {
		return nil, fmt.Errorf("replica %s is not running", name)
	}
	c.expected = true
	return c, nil
}

// StopAll stops every running child: SIGTERM, then SIGKILL for those still
// running after grace. It returns the names of the children it had to kill.
func (s *supervisor) StopAll(grace time.Duration) []string {
	s.mu.Lock()
	var running []*child
	for _, c := range s.procs {
		if !isDone(c) {
			c.expected = true
			running = append(running, c)
		}
	}
	s.mu.Unlock()
	for _, c := range running {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
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
			_ = c.cmd.Process.Kill()
			killed = append(killed, c.name)
		}
		<-c.done
	}
	sort.Strings(killed)
	return killed
}

// Close stops every child and waits for the waiter goroutines.
func (s *supervisor) Close(grace time.Duration) []string {
	killed := s.StopAll(grace)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	return killed
}

// prefixWriter writes each complete line to w with a prefix, under a mutex
// shared by all the writers of w, so lines of different children never mix.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // a very long line: pass it on in pieces
		p.emit(append(p.buf, '\n'))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// Flush writes what is left of an unterminated last line.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

func (p *prefixWriter) emit(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.w, p.prefix)
	_, _ = p.w.Write(line)
}
