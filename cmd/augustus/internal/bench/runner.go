package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Phases of a measured interval, as an invocation sees them when it ends.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseDone
)

// progressInterval is how often --progress lines report, and the window in
// which at least one invocation must complete for the run to count as
// live.
const progressInterval = 5 * time.Second

// maxDrain bounds how long invocations in flight at the end of the
// interval get to finish before they count as outstanding.
const maxDrain = 5 * time.Second

// runner drives one workload's callers through one measured interval: the
// warm-up (not counted), the interval, then the drain. It is the same for
// every workload: it classifies every invocation that ends in or after the
// interval as committed, aborted (by the workload's reason), failed (by
// kind), timed out (--call-timeout), drained (completed after the end, not
// counted) or outstanding (no outcome when the drain ended).
type runner struct {
	callers int
	// rate, if positive, runs the open loop (openloop.go): callers is then
	// the most invocations in flight.
	rate                          float64
	warmup, duration, callTimeout time.Duration
	progress                      string
	stderr                        io.Writer
	// noResult is what an invocation that hits --call-timeout lacks in the
	// report's first error: "result" (a call) or "outcome" (a
	// transaction).
	noResult string
	// begin runs when the measured interval starts (snapshots, profiles);
	// end when it ends, before the drain, or when the run stops early (err
	// set). Either may be nil.
	begin func(ctx context.Context)
	end   func(ctx context.Context, err error)
}

// measured is what the callers did in one measured interval.
type measured struct {
	seconds      float64
	drainSeconds float64
	// committed invocations, split by the groups they involved.
	committed, single, multi int64
	hist, histSingle         *hdrhistogram.Histogram
	histMulti                *hdrhistogram.Histogram
	kinds                    map[string]*kindRecord
	aborted                  map[string]int64
	// failedByKind splits failed by the workload's kind of error.
	failedByKind                  map[string]int64
	failed, timedOut, outstanding int64
	drained                       int64
	// scheduled and missed count the open loop's starts due in the
	// interval, and those of them no caller was free to make.
	scheduled, missed int64
	absent            int64
	firstErr          string
	// lastCompletion is when, into the interval, the last invocation
	// completed (-1: none did); stalled is set when none completed in the
	// last stallWindow seconds.
	lastCompletion float64
	stallWindow    float64
	stalled        bool
}

// kindRecord is one kind's share of an interval.
type kindRecord struct {
	committed, aborted int64
	hist               *hdrhistogram.Histogram
}

// newHist returns a latency histogram: microseconds, 1 µs to 10 min, 3
// significant digits.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
}

// recorder gathers the invocations of every caller of one interval. One
// mutex: an invocation costs tens of microseconds at least, a record well
// under one, and the histograms stay one set per interval (per-caller sets
// cost 170 KiB each).
type recorder struct {
	mu sync.Mutex
	m  measured
	// completed and lastDone feed the progress display and the stall check
	// without the mutex.
	completed atomic.Int64
	lastDone  atomic.Int64 // UnixNano
}

func newRecorder() *recorder {
	return &recorder{m: measured{hist: newHist(), histSingle: newHist(), histMulti: newHist(),
		kinds: map[string]*kindRecord{}, aborted: map[string]int64{}, failedByKind: map[string]int64{}}}
}

func (r *recorder) kind(k string) *kindRecord {
	kr := r.m.kinds[k]
	if kr == nil {
		kr = &kindRecord{hist: newHist()}
		r.m.kinds[k] = kr
	}
	return kr
}

func (r *recorder) commit(out Outcome, lat time.Duration) {
	us := max(1, lat.Microseconds())
	r.completed.Add(1)
	r.lastDone.Store(time.Now().UnixNano())
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &r.m
	m.committed++
	m.absent += int64(out.Absent)
	_ = m.hist.RecordValue(us)
	switch {
	case out.Groups == 1:
		m.single++
		_ = m.histSingle.RecordValue(us)
	case out.Groups > 1:
		m.multi++
		_ = m.histMulti.RecordValue(us)
	}
	if out.Kind != "" {
		kr := r.kind(out.Kind)
		kr.committed++
		_ = kr.hist.RecordValue(us)
	}
}

func (r *recorder) abort(kind, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.aborted[reason]++
	if kind != "" {
		r.kind(kind).aborted++
	}
}

func (r *recorder) fail(kind string, err error, timedOut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if timedOut {
		r.m.timedOut++
	} else {
		r.m.failed++
		r.m.failedByKind[kind]++
	}
	if r.m.firstErr == "" {
		r.m.firstErr = err.Error()
	}
}

func (r *recorder) count(p *int64) {
	r.mu.Lock()
	*p++
	r.mu.Unlock()
}

// run measures one interval of w at rc.
func (r *runner) run(ctx context.Context, w Workload, rc RunConfig) (*measured, error) {
	callers := make([]Caller, r.callers)
	defer func() {
		for _, c := range callers {
			if cl, ok := c.(io.Closer); ok {
				_ = cl.Close()
			}
		}
	}()
	for i := range callers {
		c, err := w.NewCaller(rc, i)
		if err != nil {
			return nil, fmt.Errorf("caller %d: %w", i, err)
		}
		callers[i] = c
	}
	// The callers run until the measured interval ends, then finish what
	// they have in flight; runCtx ends after the drain (or on an
	// interrupt), and what is still pending then is outstanding.
	runCtx, stopCallers := context.WithCancel(ctx)
	defer stopCallers()
	st := &runState{w: w, rec: newRecorder(), fatal: newAbort(), done: make(chan struct{})}
	var wg sync.WaitGroup
	var sched *schedule
	if r.rate > 0 {
		sched = r.startOpenLoop(runCtx, callers, st, &wg)
	} else {
		for _, c := range callers {
			wg.Go(func() {
				for st.phase.Load() != phaseDone && runCtx.Err() == nil {
					if !r.invoke(runCtx, c, time.Now(), st) {
						return
					}
				}
			})
		}
	}
	waitCallers := func() {
		stopCallers()
		wg.Wait()
	}
	defer waitCallers()

	prog := newProgress(r.stderr, r.progress, r.duration)
	defer prog.finish()
	if err := waitInterval(ctx, r.warmup, st.fatal, func() {}); err != nil {
		return nil, err
	}
	if r.begin != nil {
		r.begin(ctx)
	}
	t0 := time.Now()
	st.phase.Store(phaseMeasure)
	err := waitInterval(ctx, r.duration, st.fatal, func() { prog.update(time.Since(t0), st.rec.completed.Load()) })
	st.phase.Store(phaseDone)
	close(st.done)
	elapsed := time.Since(t0)
	prog.finish()
	if r.end != nil {
		r.end(ctx, err)
	}
	if err != nil {
		return nil, err
	}
	drain := min(r.callTimeout, maxDrain)
	drainCallers(&wg, drain)
	waitCallers()

	st.rec.mu.Lock()
	defer st.rec.mu.Unlock()
	m := &st.rec.m
	m.seconds = elapsed.Seconds()
	m.drainSeconds = drain.Seconds()
	if sched != nil {
		m.scheduled, m.missed = sched.scheduled.Load(), sched.missed.Load()
	}
	m.stallWindow = min(progressInterval, r.duration).Seconds()
	m.lastCompletion = -1
	if last := st.rec.lastDone.Load(); last > 0 {
		m.lastCompletion = max(0, time.Unix(0, last).Sub(t0).Seconds())
	}
	m.stalled = m.lastCompletion < 0 || m.seconds-m.lastCompletion > m.stallWindow
	out := *m
	return &out, nil
}

// runState is one interval's shared state.
type runState struct {
	w     Workload
	phase atomic.Int32
	rec   *recorder
	// fatal ends the run at the first invocation the workload classifies
	// as Fatal.
	fatal *abort
	// done is closed when the interval ends (phase done).
	done chan struct{}
}

// invoke runs one invocation that was due at due and records it; false
// tells the caller to stop (a fatal error, the interval over, or no
// outcome before the drain ended). Its latency counts from due: the start
// of the call in a closed loop, its scheduled start in the open loop.
func (r *runner) invoke(ctx context.Context, c Caller, due time.Time, st *runState) bool {
	callCtx, cancel := context.WithTimeout(ctx, r.callTimeout)
	out := c.Do(callCtx)
	lat := time.Since(due)
	timedOut := out.Err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded)
	cancel()
	class, why := Committed, ""
	if out.Err != nil {
		class, why = st.w.Classify(out.Err)
		if class == Committed {
			class = Failed // an error never counts as a commit
		}
	}
	if class == Fatal {
		st.fatal.fire(out.Err)
		return false
	}
	rec := st.rec
	switch ph := st.phase.Load(); {
	case ph == phaseWarmup:
		return true // not measured
	case out.Err == nil && ph == phaseDone:
		rec.count(&rec.m.drained)
		return false
	case out.Err == nil:
		rec.commit(out, lat)
		return true
	case class == Aborted:
		rec.abort(out.Kind, why)
		return true
	case ctx.Err() != nil:
		// The drain ended (or bench was interrupted) first.
		rec.count(&rec.m.outstanding)
		return false
	case timedOut:
		rec.fail("", fmt.Errorf("no %s within --call-timeout %s", r.noResult, r.callTimeout), true)
		return true
	default:
		rec.fail(why, out.Err, false)
		return true
	}
}

// abort is a one-shot signal carrying the first error that ends a run.
type abort struct {
	once sync.Once
	ch   chan struct{}
	err  error
}

func newAbort() *abort { return &abort{ch: make(chan struct{})} }

func (a *abort) fire(err error) {
	a.once.Do(func() {
		a.err = err
		close(a.ch)
	})
}

// waitInterval waits for d, calling update every 200ms; it ends early, with
// the abort's error, if an invocation was fatal.
func waitInterval(ctx context.Context, d time.Duration, ab *abort, update func()) error {
	if d <= 0 {
		select {
		case <-ab.ch:
			return ab.err
		default:
			return nil
		}
	}
	done := time.NewTimer(d)
	defer done.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench interrupted: %w", ctx.Err())
		case <-ab.ch:
			return ab.err
		case <-done.C:
			return nil
		case <-tick.C:
			update()
		}
	}
}

// drainCallers waits up to d for the callers to finish their last
// invocation.
func drainCallers(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
