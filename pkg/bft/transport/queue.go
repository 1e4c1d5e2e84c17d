package transport

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Default bounds of a send queue.
const (
	DefaultQueueMessages = 4096
	DefaultQueueBytes    = 64 << 20
)

// queued is one message waiting to be written to a stream.
type queued struct {
	e   *Encoded
	due time.Time // zero: send at once; else not before due (fault delay)
}

// sendQueue is the bounded FIFO between a caller that must never block (the
// protocol goroutine) and the goroutine that owns a stream. It is bounded by
// messages and by bytes; when a new message does not fit, the oldest queued
// messages are evicted (drop-oldest) and counted, so the queue holds the most
// recent traffic. PBFT retransmits what matters (pbft.md C4, V1, G3), and the
// newest messages (current view, highest sequence numbers, latest status) are
// the ones a slow peer needs first.
type sendQueue struct {
	mu       sync.Mutex
	buf      []queued // ring
	head, n  int
	bytes    int
	maxBytes int
	closed   bool
	notify   chan struct{} // capacity 1: "the queue may be non-empty"

	gMsgs, gBytes prometheus.Gauge // may be nil
}

func newSendQueue(maxMsgs, maxBytes int, gMsgs, gBytes prometheus.Gauge) *sendQueue {
	if maxMsgs <= 0 {
		maxMsgs = DefaultQueueMessages
	}
	if maxBytes <= 0 {
		maxBytes = DefaultQueueBytes
	}
	return &sendQueue{
		buf:      make([]queued, maxMsgs),
		maxBytes: maxBytes,
		notify:   make(chan struct{}, 1),
		gMsgs:    gMsgs,
		gBytes:   gBytes,
	}
}

// push appends q and wakes the queue's reader; see pushQuiet.
func (s *sendQueue) push(q queued) (evicted int, refused string) {
	evicted, refused = s.pushQuiet(q)
	if refused == "" {
		s.wake()
	}
	return evicted, refused
}

// wake tells the reader the queue may be non-empty.
func (s *sendQueue) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// pushQuiet appends q without waking the reader (wake does). It reports how
// many older messages it evicted to make room, and, if q itself was refused,
// why (DropClosed, or DropTooLarge if q alone exceeds the byte bound); an
// empty reason means q was queued.
func (s *sendQueue) pushQuiet(q queued) (evicted int, refused string) {
	size := q.e.Len()
	s.mu.Lock()
	if s.closed || size > s.maxBytes {
		s.mu.Unlock()
		if s.closed {
			return 0, DropClosed
		}
		return 0, DropTooLarge
	}
	for s.n == len(s.buf) || s.bytes+size > s.maxBytes {
		s.popLocked()
		evicted++
	}
	s.buf[(s.head+s.n)%len(s.buf)] = q
	s.n++
	s.bytes += size
	s.gaugesLocked()
	s.mu.Unlock()
	return evicted, ""
}

// popReady moves the oldest messages that are due at now into b, as long as
// b stays within maxBytes (it takes at least one). If the oldest message is
// not due yet and b is empty, it returns when it will be (else zero).
func (s *sendQueue) popReady(now time.Time, maxBytes int, b *peerBatch) (wait time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.n > 0 {
		q := s.buf[s.head]
		if !q.due.IsZero() && q.due.After(now) {
			if len(b.items) == 0 {
				return q.due
			}
			break
		}
		if len(b.items) > 0 && b.bytes+q.e.Len()+binaryPrefixMax > maxBytes {
			break
		}
		b.add(s.popLocked())
	}
	s.gaugesLocked()
	return time.Time{}
}

// binaryPrefixMax bounds the tag and length in front of a message in a
// PeerBatch.
const binaryPrefixMax = 1 + 10

// pop removes the oldest message.
func (s *sendQueue) pop() (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return queued{}, false
	}
	q := s.popLocked()
	s.gaugesLocked()
	return q, true
}

func (s *sendQueue) popLocked() queued {
	q := s.buf[s.head]
	s.buf[s.head] = queued{}
	s.head = (s.head + 1) % len(s.buf)
	s.n--
	s.bytes -= q.e.Len()
	return q
}

func (s *sendQueue) gaugesLocked() {
	if s.gMsgs != nil {
		s.gMsgs.Set(float64(s.n))
		s.gBytes.Set(float64(s.bytes))
	}
}

// len returns the number of queued messages and their bytes.
func (s *sendQueue) len() (msgs, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, s.bytes
}

// close empties the queue and refuses further pushes; it returns how many
// messages it discarded.
func (s *sendQueue) close() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	for s.n > 0 {
		s.popLocked()
	}
	s.closed = true
	s.gaugesLocked()
	return n
}
