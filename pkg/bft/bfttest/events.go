package bfttest

import "container/heap"

// event is something that happens at a simulated time (microseconds).
type event struct {
	at    int64
	order uint64
	run   func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].order < q[j].order
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// at schedules f at simulated time t.
func (s *Sim) at(t int64, f func()) {
	if t < s.now {
		t = s.now
	}
	s.order++
	heap.Push(&s.events, &event{at: t, order: s.order, run: f})
}

// after schedules f d microseconds from now.
func (s *Sim) after(d int64, f func()) { s.at(s.now+d, f) }
