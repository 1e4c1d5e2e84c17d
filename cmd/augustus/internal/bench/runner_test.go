package bench

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The runner's tests run in a synctest bubble: time is virtual, so a fake
// workload that "takes" 50 ms takes exactly that, and the counts are the
// schedule's, not the machine's.

// fakeWorkload is a workload whose invocations do what do says.
type fakeWorkload struct {
	do       func(ctx context.Context, i int) Outcome
	classify func(err error) (Class, string)
	closed   atomic.Int32
}

func (w *fakeWorkload) Setup([]RunConfig) error                   { return nil }
func (w *fakeWorkload) Load(context.Context) (*LoadResult, error) { return nil, nil }
func (w *fakeWorkload) NewCaller(_ RunConfig, i int) (Caller, error) {
	return &fakeCaller{w: w, i: i}, nil
}
func (w *fakeWorkload) Classify(err error) (Class, string) {
	if w.classify != nil {
		return w.classify(err)
	}
	return Failed, errorKind(err)
}

type fakeCaller struct {
	w *fakeWorkload
	i int
}

func (c *fakeCaller) Do(ctx context.Context) Outcome { return c.w.do(ctx, c.i) }
func (c *fakeCaller) Close() error                   { c.w.closed.Add(1); return nil }

// sleepFor is an invocation that takes d (or until ctx ends).
func sleepFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func testRunner(callers int, rate float64, duration time.Duration) *runner {
	return &runner{callers: callers, rate: rate, duration: duration, callTimeout: 10 * time.Second,
		progress: "off", stderr: io.Discard, noResult: "outcome"}
}

// --rate is an open loop: the schedule starts rate invocations per second
// whatever the earlier ones do; with every caller busy when one falls due,
// it is missed, never started late. Two callers of invocations that take
// 45 ms make 40 per second of the 100 due: each takes every fifth start.
func TestOpenLoopStartsOnScheduleAndCountsTheMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome {
			return Outcome{Err: sleepFor(ctx, 45*time.Millisecond), Groups: 1}
		}}
		m, err := testRunner(2, 100, time.Second).run(t.Context(), w, RunConfig{})
		require.NoError(t, err)
		require.InDelta(t, 100, m.scheduled, 1, "due in the interval: the rate times the interval")
		require.InDelta(t, 40, m.committed, 2, "two callers, 45 ms each")
		require.InDelta(t, m.scheduled-m.committed, m.missed, 3, "every start due is made or missed")
		require.InDelta(t, 45_000, m.hist.Min(), 50, "started on schedule: latency is the invocation's own")
		require.InDelta(t, 45_000, m.hist.Max(), 50)
		require.Equal(t, m.committed, m.single)
		require.Zero(t, m.failed+m.timedOut+m.outstanding)
		require.Equal(t, int32(2), w.closed.Load(), "the callers are closed after the interval")
	})
}

// The open loop's latency counts from the scheduled start: when the
// cluster stalls for 300 ms, every invocation due during the stall waits
// for it, and the percentiles show it. A closed loop (or a merely paced
// one) would send one invocation into the stall and record one slow
// sample: coordinated omission.
func TestOpenLoopLatencyCountsFromTheScheduledStart(t *testing.T) {
	for _, open := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			stallFrom, stallTo := start.Add(300*time.Millisecond), start.Add(600*time.Millisecond)
			w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome {
				d := time.Millisecond
				if now := time.Now(); !now.Before(stallFrom) && now.Before(stallTo) {
					d = stallTo.Sub(now)
				}
				if open {
					return Outcome{Err: sleepFor(ctx, d)}
				}
				// The closed loop's one caller, paced to 100 per second.
				err := sleepFor(ctx, d)
				_ = sleepFor(ctx, 10*time.Millisecond-time.Millisecond)
				return Outcome{Err: err}
			}}
			r := testRunner(50, 100, time.Second)
			if !open {
				r = testRunner(1, 0, time.Second)
			}
			m, err := r.run(t.Context(), w, RunConfig{})
			require.NoError(t, err)
			slow := m.hist.TotalCount() - countBelow(m, 100*time.Millisecond)
			if open {
				// About 30 fell due during the stall; the first 20 of
				// them waited 100 ms or more.
				require.Zero(t, m.missed, "50 callers cover the stall")
				require.InDelta(t, 20, slow, 2)
				require.GreaterOrEqual(t, m.hist.ValueAtQuantile(95), int64(100_000))
			} else {
				require.Equal(t, int64(1), slow, "the closed loop saw the stall once")
				require.Less(t, m.hist.ValueAtQuantile(95), int64(100_000))
			}
		})
	}
}

// countBelow counts the latencies below d.
func countBelow(m *measured, d time.Duration) int64 {
	var n int64
	for _, b := range m.hist.Distribution() {
		if b.To < d.Microseconds() {
			n += b.Count
		}
	}
	return n
}

// A closed loop keeps every caller busy: 4 callers of 10 ms invocations
// make 400 in a second, and nothing is scheduled or missed.
func TestClosedLoopCallsAgainAsSoonAsACallReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome {
			return Outcome{Err: sleepFor(ctx, 10*time.Millisecond), Kind: "k", Groups: 2}
		}}
		m, err := testRunner(4, 0, time.Second).run(t.Context(), w, RunConfig{})
		require.NoError(t, err)
		require.InDelta(t, 400, m.committed, 4)
		require.Equal(t, m.committed, m.multi)
		require.Equal(t, m.committed, m.kinds["k"].committed)
		require.Zero(t, m.scheduled+m.missed)
		require.False(t, m.stalled)
	})
}

var (
	errConflict = errors.New("conflict")
	errBroken   = errors.New("broken")
	errFatal    = errors.New("the replicas reject the calls")
)

// Every invocation that ends in or after the interval is counted once, as
// the workload classifies it: aborts by reason, failures by kind, calls
// past --call-timeout as timed out, and calls that succeed after the end
// as drained (not counted). Calls still running when the drain ends are
// outstanding (TestRunnerSeesAStall).
func TestRunnerClassifiesEveryInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{
			do: func(ctx context.Context, i int) Outcome {
				switch i {
				case 0:
					return Outcome{Err: errors.Join(errConflict, sleepFor(ctx, 100*time.Millisecond)), Kind: "x"}
				case 1:
					return Outcome{Err: errors.Join(errBroken, sleepFor(ctx, 100*time.Millisecond))}
				case 2: // hits --call-timeout (2 s) during the drain
					<-ctx.Done()
					return Outcome{Err: ctx.Err()}
				default: // one call in the interval, the next ends in the drain
					return Outcome{Err: sleepFor(ctx, 700*time.Millisecond)}
				}
			},
			classify: func(err error) (Class, string) {
				if errors.Is(err, errConflict) {
					return Aborted, "conflict"
				}
				return Failed, "broken"
			},
		}
		r := testRunner(4, 0, time.Second)
		r.callTimeout = 2 * time.Second
		m, err := r.run(t.Context(), w, RunConfig{})
		require.NoError(t, err)
		// Ten calls of 100 ms end in the interval; an eleventh may start
		// as it ends, and counts too.
		require.InDelta(t, 10.5, m.aborted["conflict"], 0.5)
		require.Len(t, m.aborted, 1)
		require.Equal(t, m.aborted["conflict"], m.kinds["x"].aborted)
		require.InDelta(t, 10.5, m.failed, 0.5)
		require.Equal(t, map[string]int64{"broken": m.failed}, m.failedByKind)
		require.Equal(t, int64(1), m.timedOut, "caller 2's call hit the timeout at 2 s, after the interval")
		require.Zero(t, m.outstanding)
		require.Equal(t, int64(1), m.drained, "caller 3's second call ended 0.4 s after the interval")
		require.Equal(t, int64(1), m.committed, "caller 3's first call")
		require.Equal(t, "broken", m.firstErr)
		require.Equal(t, map[string]int64{"broken": m.failed, "timed_out": 1}, errorsByKind(m))
	})
}

// A fatal outcome (the replicas reject the calls) stops the run at once,
// warm-up included, with the workload's error.
func TestFatalOutcomeStopsTheRunAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome {
			return Outcome{Err: errors.Join(errFatal, sleepFor(ctx, 10*time.Millisecond))}
		}, classify: func(error) (Class, string) { return Fatal, "" }}
		r := testRunner(3, 0, time.Hour)
		r.warmup = time.Hour
		start := time.Now()
		_, err := r.run(t.Context(), w, RunConfig{})
		require.ErrorIs(t, err, errFatal)
		require.Less(t, time.Since(start), time.Second)
	})
}

// No invocation completing in the last 5 s of the interval is a stall:
// the cluster stopped answering.
func TestRunnerSeesAStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome {
			if time.Since(start) > 2*time.Second {
				<-ctx.Done()
				return Outcome{Err: ctx.Err()}
			}
			return Outcome{Err: sleepFor(ctx, 100*time.Millisecond)}
		}}
		r := testRunner(1, 0, 10*time.Second)
		r.callTimeout = time.Minute
		m, err := r.run(t.Context(), w, RunConfig{})
		require.NoError(t, err)
		require.True(t, m.stalled)
		require.InDelta(t, 2.0, m.lastCompletion, 0.15)
		require.Equal(t, int64(1), m.outstanding)
	})
}

// A scheduler that wakes late (a busy machine) hands out every start that
// fell due meanwhile, each with its own due time, to the callers that are
// free, and counts the rest as missed at once.
func TestOpenLoopCatchesUpAfterALateWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		due := make(chan time.Time)
		var phase atomic.Int32
		phase.Store(phaseMeasure)
		start := time.Now().Add(-95 * time.Millisecond) // slots 1..9 are overdue
		got := make(chan time.Time, 10)
		for range 5 {
			go func() {
				got <- <-due
				<-ctx.Done()
			}()
		}
		synctest.Wait() // the five callers wait for work
		s := &schedule{}
		done := make(chan struct{})
		go s.run(ctx, 100, start, due, &phase, done)
		synctest.Wait()
		require.Len(t, got, 5)
		var dues []time.Time
		for range 5 {
			dues = append(dues, <-got)
		}
		slices.SortFunc(dues, time.Time.Compare)
		for k := 1; k <= 5; k++ {
			require.Equal(t, start.Add(time.Duration(k)*10*time.Millisecond), dues[k-1], "start %d keeps its due time", k)
		}
		require.Equal(t, int64(9), s.scheduled.Load())
		require.Equal(t, int64(4), s.missed.Load())
		time.Sleep(20 * time.Millisecond) // two more fall due; every caller is busy
		require.Equal(t, int64(11), s.scheduled.Load())
		require.Equal(t, int64(6), s.missed.Load())
		phase.Store(phaseDone)
		close(done)
		time.Sleep(20 * time.Millisecond)
		require.Equal(t, int64(11), s.scheduled.Load(), "nothing falls due after the interval")
	})
}

// An invocation's latency counts from when it was due, not from when a
// caller got to it.
func TestLatencyCountsFromTheDueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome { return Outcome{Err: sleepFor(ctx, time.Millisecond)} }}
		st := &runState{w: w, rec: newRecorder(), fatal: newAbort()}
		st.phase.Store(phaseMeasure)
		r := testRunner(1, 100, time.Second)
		require.True(t, r.invoke(t.Context(), &fakeCaller{w: w}, time.Now().Add(-100*time.Millisecond), st))
		require.InDelta(t, 101_000, st.rec.m.hist.Max(), 100)
	})
}

// At a rate slower than the interval, the scheduler does not hold the run
// past its end waiting for a start that would fall due after it.
func TestOpenLoopEndsWithTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWorkload{do: func(ctx context.Context, _ int) Outcome { return Outcome{Err: sleepFor(ctx, time.Millisecond)} }}
		start := time.Now()
		m, err := testRunner(2, 0.2, time.Second).run(t.Context(), w, RunConfig{})
		require.NoError(t, err)
		require.Zero(t, m.scheduled, "the first start falls due after 5 s")
		require.Less(t, time.Since(start), 1100*time.Millisecond)
	})
}
