package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The open loop (--rate N): the k-th invocation is due at start + k/N,
// whatever happened to the ones before it. A caller that is free when an
// invocation falls due starts it; the invocation's latency counts from
// when it was due, so a cluster that falls behind shows in the
// percentiles instead of slowing the offered load down (the coordinated
// omission of a closed loop that is merely paced, where a slow
// transaction delays the ones after it and the delay never shows). The
// callers (--clients) bound what is in flight: an invocation that falls
// due while every caller is busy is missed — counted, reported, and never
// started late, so the number in flight stays bounded whatever the
// cluster does.
//
// One scheduler goroutine hands each due time to a free caller over an
// unbuffered channel: a send that finds no caller waiting finds every
// caller busy. When the scheduler wakes late (a busy machine), it hands
// out every start that fell due meanwhile, each with its own due time, to
// the callers that are free, and counts the rest as missed at once rather
// than one by one.

// schedule is the open loop's scheduler state.
type schedule struct {
	// scheduled counts the starts that fell due in the measured interval;
	// missed those of them no caller was free to make.
	scheduled, missed atomic.Int64
}

// startOpenLoop starts the callers as workers of the schedule and the
// scheduler itself; every goroutine is counted in wg and ends when the
// interval does (the scheduler) or when ctx ends after the drain (the
// workers).
func (r *runner) startOpenLoop(ctx context.Context, callers []Caller, st *runState, wg *sync.WaitGroup) *schedule {
	s := &schedule{}
	due := make(chan time.Time)
	for _, c := range callers {
		wg.Go(func() {
			for d := range due {
				if !r.invoke(ctx, c, d, st) {
					return
				}
			}
		})
	}
	wg.Go(func() {
		defer close(due)
		s.run(ctx, r.rate, time.Now(), due, &st.phase, st.done)
	})
	return s
}

// dueAt is when the k-th start of a schedule from start at rate per second
// falls due.
func dueAt(start time.Time, rate float64, k int64) time.Time {
	return start.Add(time.Duration(float64(k) * float64(time.Second) / rate))
}

// run hands out due times until the interval ends (phase done, done
// closed) or ctx ends.
func (s *schedule) run(ctx context.Context, rate float64, start time.Time, due chan<- time.Time, phase *atomic.Int32, done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// The first start falls due one interval in, when the callers, started
	// with the scheduler, wait for work.
	for k := int64(1); ; {
		if wait := time.Until(dueAt(start, rate, k)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-timer.C:
			}
		}
		ph := phase.Load()
		if ph == phaseDone || ctx.Err() != nil {
			return
		}
		// Every start due by now: k up to last.
		last := max(k, int64(float64(time.Since(start))*rate/float64(time.Second)))
		for ; k <= last; k++ {
			select {
			case due <- dueAt(start, rate, k):
				s.count(ph, 1, 0)
				continue
			default:
			}
			// Every caller is busy: this start and the rest due now are
			// missed.
			n := last - k + 1
			s.count(ph, n, n)
			k = last + 1
			break
		}
	}
}

// count adds n starts, m of them missed, if they fell due in the measured
// interval.
func (s *schedule) count(ph int32, n, m int64) {
	if ph != phaseMeasure {
		return
	}
	s.scheduled.Add(n)
	s.missed.Add(m)
}
