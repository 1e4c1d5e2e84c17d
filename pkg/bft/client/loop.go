package client

import (
	"bytes"
	"sort"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// loop is the client's state, owned by one goroutine.
type loop struct {
	c           *Client
	view        bft.View
	nextTs      uint64
	queue       []*call
	outstanding map[uint64]*pending
}

type pending struct {
	req      *bftpb.Request
	calls    []*call
	replies  map[uint32]*bftpb.Reply
	sentAt   time.Time
	deadline time.Time
	timeout  time.Duration
}

func newLoop(c *Client) *loop {
	// Timestamps start at the clock, so a restarted client starts above
	// everything it sent before (C1); low watermarks tell the replicas to
	// forget the rest (C2).
	return &loop{c: c, nextTs: uint64(c.cfg.Now().UnixNano()), outstanding: make(map[uint64]*pending)}
}

func (l *loop) run() {
	resolution := l.c.cfg.Timeout / 4
	if resolution > 50*time.Millisecond {
		resolution = 50 * time.Millisecond
	}
	tick := time.NewTicker(resolution)
	defer tick.Stop()
	for {
		select {
		case cl := <-l.c.calls:
			l.queue = append(l.queue, cl)
			for drained := false; !drained; {
				select {
				case cl := <-l.c.calls:
					l.queue = append(l.queue, cl)
				default:
					drained = true
				}
			}
		case rep := <-l.c.replies:
			l.onReply(rep)
		case now := <-tick.C:
			l.retransmit(now)
		case <-l.c.stop:
			l.failAll(ErrClosed)
			return
		}
		l.send()
	}
}

// low is the client's low watermark: every timestamp at or below it has
// its result (C2).
func (l *loop) low() uint64 {
	low := l.nextTs - 1
	for ts := range l.outstanding {
		if ts-1 < low {
			low = ts - 1
		}
	}
	return low
}

// send packs queued calls into envelopes while the window allows (C1, C2).
func (l *loop) send() {
	c := l.c
	for len(l.queue) > 0 && len(l.outstanding) < c.cfg.InFlight && l.nextTs <= l.low()+uint64(c.cfg.Window) {
		n, size := 0, 0
		for n < len(l.queue) && n < c.cfg.MaxEnvelopeCalls && (n == 0 || size+len(l.queue[n].payload) <= c.cfg.MaxEnvelopeBytes) {
			size += len(l.queue[n].payload)
			n++
		}
		calls := l.queue[:n:n]
		l.queue = l.queue[n:]
		payloads := make([][]byte, len(calls))
		for i, cl := range calls {
			payloads[i] = cl.payload
		}
		ts := l.nextTs
		low := l.low() // below ts: computed before ts is taken
		l.nextTs++
		req := &bftpb.Request{Client: []byte(c.id), Timestamp: ts, Low: low, Payload: envelope.EncodeCalls(payloads)}
		req.Signature = c.signer.Sign(c.dom.RequestBytes(req))
		now := c.cfg.Now()
		p := &pending{req: req, calls: calls, replies: make(map[uint32]*bftpb.Reply), sentAt: now, timeout: c.cfg.Timeout, deadline: now.Add(c.cfg.Timeout)}
		l.outstanding[ts] = p
		c.conns[bft.PrimaryOf(l.view, c.n)].Send(req)
		c.cfg.Metrics.EnvelopesSent.Inc()
		c.cfg.Metrics.EnvelopeCalls.Observe(float64(n))
	}
}

// retransmit re-sends to every replica the envelopes whose timeout passed,
// doubling their timeout (C4).
func (l *loop) retransmit(now time.Time) {
	for _, p := range l.outstanding {
		if now.Before(p.deadline) {
			continue
		}
		for _, conn := range l.c.conns {
			conn.Send(p.req)
		}
		if p.timeout < l.c.cfg.Timeout<<4 {
			p.timeout *= 2
		}
		p.deadline = now.Add(p.timeout)
		l.c.cfg.Metrics.Retransmissions.Inc()
	}
}

// onReply records an authenticated reply and accepts a result once f+1
// distinct replicas agree on it (C3).
func (l *loop) onReply(rep *bftpb.Reply) {
	if !l.c.verifyReply(rep) {
		l.c.cfg.Metrics.BadReplies.Inc()
		return
	}
	p := l.outstanding[rep.Timestamp]
	if p == nil {
		return // late: already accepted
	}
	p.replies[rep.Replica] = rep
	var views []bft.View
	for _, o := range p.replies {
		if o.Status == rep.Status && bytes.Equal(o.Result, rep.Result) {
			views = append(views, bft.View(o.View))
		}
	}
	if len(views) < l.c.f+1 {
		return
	}
	// At least one of the f+1 is correct, so the group reached the lowest
	// view they report.
	sort.Slice(views, func(i, j int) bool { return views[i] < views[j] })
	if views[0] > l.view {
		l.view = views[0]
		l.c.view.Store(uint64(l.view))
	}
	delete(l.outstanding, rep.Timestamp)
	m := l.c.cfg.Metrics
	now := l.c.cfg.Now()
	m.EnvelopeLatency.Observe(now.Sub(p.sentAt).Seconds())
	var results [][]byte
	var err error
	switch rep.Status {
	case bftpb.ReplyStatus_REPLY_STATUS_OK:
		results, err = decodeResults(rep.Result, len(p.calls))
	default:
		err = ErrStale
	}
	for i, cl := range p.calls {
		if err != nil {
			cl.done <- result{err: err}
			continue
		}
		m.CallLatency.Observe(now.Sub(cl.queued).Seconds())
		cl.done <- result{value: results[i]}
	}
}

func (l *loop) failAll(err error) {
	for _, p := range l.outstanding {
		for _, cl := range p.calls {
			cl.done <- result{err: err}
		}
	}
	for _, cl := range l.queue {
		cl.done <- result{err: err}
	}
	l.outstanding, l.queue = nil, nil
}
