package bfttest

import (
	"bytes"
	"crypto/hmac"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// client is a simulated correct client (C1–C4): it signs requests, keeps up
// to Outstanding in flight, sends each to the primary it believes current,
// re-sends to all replicas on timeout with a doubled timeout, and accepts a
// result after f+1 matching authenticated replies from distinct replicas.
type client struct {
	sim    *Sim
	idx    int
	id     bft.ClientID
	signer bft.Signer
	// byzantine clients equivocate (two payloads under one timestamp, to
	// different replicas), replay old requests and send forged ones.
	byzantine bool
	old       []*bftpb.Request

	view        bft.View
	nextTs      uint64
	issued      int
	total       int
	outstanding map[uint64]*pendingCall
	doneCount   int
}

type pendingCall struct {
	req       *bftpb.Request
	issuedAt  int64
	timeout   int64
	replies   map[int]*bftpb.Reply
	broadcast bool
}

func (c *client) low() uint64 {
	low := c.nextTs - 1
	for ts := range c.outstanding {
		if ts-1 < low {
			low = ts - 1
		}
	}
	return low
}

// issue sends new requests while fewer than Outstanding are in flight.
func (c *client) issue() {
	// C2: never more than W timestamps above the low watermark, even when
	// an old request is still outstanding.
	for len(c.outstanding) < c.sim.opts.Outstanding && c.issued < c.total && c.nextTs <= c.low()+c.sim.window {
		c.issued++
		ts := c.nextTs
		c.nextTs++
		value := make([]byte, c.sim.opts.PayloadSize)
		for i := range value {
			value[i] = byte(c.sim.rng.IntN(256))
		}
		req := &bftpb.Request{Client: []byte(c.id), Timestamp: ts, Payload: Op(uint64(c.sim.rng.IntN(4)), value)}
		call := &pendingCall{req: req, issuedAt: c.sim.now, timeout: c.sim.opts.ClientTimeout, replies: make(map[int]*bftpb.Reply)}
		c.outstanding[ts] = call
		req.Low = c.low()
		req.Signature = c.signer.Sign(c.sim.dom.RequestBytes(req))
		c.sim.issue(reqKey{c.id, ts}, req.Payload)
		if len(c.sim.issuedList) < 256 {
			c.sim.issuedList = append(c.sim.issuedList, req)
		}
		if c.byzantine {
			c.misbehave(call)
		}
		c.send(call)
	}
}

func (c *client) send(call *pendingCall) {
	if call.broadcast {
		for i := range c.sim.replicas {
			c.sim.sendRequest(i, call.req)
		}
	} else if c.sim.manual == nil && c.sim.rng.IntN(4) == 0 {
		// Sometimes to one backup only: it must forward to the primary (C4).
		c.sim.sendRequest(c.sim.rng.IntN(len(c.sim.replicas)), call.req)
	} else {
		c.sim.sendRequest(int(bft.PrimaryOf(c.view, len(c.sim.replicas))), call.req)
	}
	ts := call.req.Timestamp
	deadline := call.timeout
	c.sim.tracef("client %d sends ts %d (low %d) broadcast=%v view %d", c.idx, ts, call.req.Low, call.broadcast, c.view)
	c.sim.after(deadline, func() {
		if cur := c.outstanding[ts]; cur == call {
			call.broadcast = true // C4
			if call.timeout < 8*c.sim.opts.ClientTimeout {
				call.timeout *= 2
			}
			c.send(call)
		}
	})
}

func (c *client) deliver(b []byte) {
	rep := &bftpb.Reply{}
	if err := proto.Unmarshal(b, rep); err != nil {
		return
	}
	call := c.outstanding[rep.Timestamp]
	if call == nil || int(rep.Replica) >= len(c.sim.replicas) || !bytes.Equal(rep.Client, []byte(c.id)) {
		return
	}
	mac := rep.Mac
	rep.Mac = nil
	if !hmac.Equal(mac, c.sim.keys.ReplyMAC(int(rep.Replica), c.id, c.sim.dom.ReplyBytes(rep))) {
		c.sim.stats.badReplies++
		return
	}
	call.replies[int(rep.Replica)] = rep
	c.sim.tracef("client %d reply ts %d from r%d status %v result %x", c.idx, rep.Timestamp, rep.Replica, rep.Status, rep.Result)
	// f+1 matching replies from distinct replicas (C3).
	var match []*bftpb.Reply
	for _, o := range call.replies {
		if o.Status == rep.Status && bytes.Equal(o.Result, rep.Result) {
			match = append(match, o)
		}
	}
	if len(match) < c.sim.opts.F+1 {
		return
	}
	for _, o := range match {
		if bft.View(o.View) > c.view {
			c.view = bft.View(o.View)
		}
	}
	delete(c.outstanding, rep.Timestamp)
	c.doneCount++
	c.sim.checkAccepted(c, rep, c.sim.now-call.issuedAt)
	c.issue()
}

// misbehave sends, besides the real request, a conflicting request under
// the same timestamp to one replica, a replay of an old request and a
// request with a broken signature.
func (c *client) misbehave(call *pendingCall) {
	s := c.sim
	n := len(s.replicas)
	alt := proto.Clone(call.req).(*bftpb.Request)
	alt.Payload = append(alt.Payload, 'x')
	alt.Signature = c.signer.Sign(s.dom.RequestBytes(alt))
	s.issue(reqKey{c.id, alt.Timestamp}, alt.Payload)
	s.sendRequest(s.rng.IntN(n), alt)
	if len(c.old) > 0 {
		s.sendRequest(s.rng.IntN(n), c.old[s.rng.IntN(len(c.old))])
	}
	forged := proto.Clone(call.req).(*bftpb.Request)
	forged.Payload = append(forged.Payload, 'y')
	s.sendRequest(s.rng.IntN(n), forged)
	if len(c.old) < 64 {
		c.old = append(c.old, call.req)
	}
}
