package bfttest

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/bft/host"
)

// GroupClient is one client process's connection to one group: the
// production group client (client.Core — envelopes, the window,
// retransmission, f+1 matching replies, rejections, signed results) on the
// simulator's network and clock. Workloads build on it: SimClient here, the
// transaction simulator's coordinators in pkg/txn/txntest.
type GroupClient struct {
	g    *Group
	id   bft.ClientID
	core *client.Core
}

// GroupClientConfig configures a GroupClient.
type GroupClientConfig struct {
	// Index names the client's key (the same index gives the same key in
	// every group of a world).
	Index             int
	InFlight          int
	Timeout           int64 // microseconds
	MaxEnvelopeCalls  int
	SignBytes         func(result []byte) []byte
	SignaturesChecked bool
}

// NewGroupClient connects client cfg.Index to group g.
func NewGroupClient(g *Group, cfg GroupClientConfig) *GroupClient {
	id := g.Keys.NewClient(cfg.Index)
	conns := make([]client.Conn, g.N)
	for i := range conns {
		conns[i] = simConn{g: g, to: i}
	}
	sign := g.Keys.ClientSigner(id)
	dom := g.dom
	if cfg.MaxEnvelopeCalls == 0 {
		cfg.MaxEnvelopeCalls = 8
	}
	c := &GroupClient{g: g, id: id}
	c.core = client.NewCore(client.CoreConfig{
		ID: id, F: g.F, N: g.N, Domain: *dom,
		Sign: func(msg []byte) []byte {
			g.NoteSigned(msg)
			return sign.Sign(msg)
		},
		VerifyReply: func(rep *bftpb.Reply) bool {
			mac := rep.Mac
			rep.Mac = nil
			ok := string(mac) == string(g.Keys.ReplyMAC(int(rep.Replica), id, dom.ReplyBytes(rep)))
			rep.Mac = mac
			return ok
		},
		SignBytes:       cfg.SignBytes,
		VerifySignature: g.Keys.VerifyReplicaSig,
		Window:          g.Window(), InFlight: cfg.InFlight, Timeout: simDuration(cfg.Timeout),
		MaxEnvelopeCalls: cfg.MaxEnvelopeCalls, MaxEnvelopeBytes: 1 << 16,
	}, conns, simTime(g.w.now+int64(cfg.Index)))
	g.Register(id, c)
	return c
}

// ID returns the client's id.
func (c *GroupClient) ID() bft.ClientID { return c.id }

// Core returns the production client core.
func (c *GroupClient) Core() *client.Core { return c.core }

// Invoke submits one call; done gets its result. It leaves at once if the
// window allows, else with the next envelope.
func (c *GroupClient) Invoke(payload []byte, done func(client.Result)) {
	now := simTime(c.g.w.now)
	c.core.Submit(payload, now, done)
	c.core.Flush(now)
}

// DeliverReply implements ReplySink.
func (c *GroupClient) DeliverReply(_ *Group, rep *bftpb.Reply) {
	now := simTime(c.g.w.now)
	c.core.Deliver(rep, now)
	c.core.Flush(now)
}

// Tick runs the core's retransmission timers (C4).
func (c *GroupClient) Tick() {
	now := simTime(c.g.w.now)
	c.core.Tick(now)
	c.core.Flush(now)
}

// SimClient is a correct client process running a LogApp workload: callers
// that append unique tokens to a few shared logs, through a GroupClient.
type SimClient struct {
	*GroupClient
	idx int

	total, issued, accepted int
	callers                 int
	// accepted calls, for the durability check: token → log key and the
	// length the append returned.
	acks []ack
	// latencies of accepted calls (microseconds).
	latencies []int64
	failed    bool
}

type ack struct {
	key, token string
	length     uint64
}

// simConn is a client's connection to one replica slot.
type simConn struct {
	g  *Group
	to int
}

func (c simConn) Send(r *bftpb.Request) bool {
	c.g.rememberRequest(r)
	c.g.SendRequest(c.to, r)
	return true
}
func (simConn) Replies() <-chan *bftpb.Reply { return nil }
func (simConn) Close() error                 { return nil }

// NewSimClient adds a correct client to group g with total calls made by
// callers concurrent callers, and the given first retransmission timeout.
func NewSimClient(g *Group, idx, total, callers, inFlight int, timeout int64) *SimClient {
	gc := NewGroupClient(g, GroupClientConfig{Index: idx, InFlight: inFlight, Timeout: timeout})
	return &SimClient{GroupClient: gc, idx: idx, total: total, callers: callers}
}

// Start starts the callers and the client's ticker.
func (c *SimClient) Start(tickEvery int64) {
	w := c.g.w
	for i := 0; i < c.callers; i++ {
		w.After(w.rng.Int64N(50_000), c.call)
	}
	var tick func()
	tick = func() {
		c.Tick()
		if !c.Done() {
			w.After(tickEvery, tick)
		}
	}
	w.After(tickEvery, tick)
}

// Done reports whether every call completed.
func (c *SimClient) Done() bool { return c.accepted >= c.total || c.failed }

// call submits the caller's next call.
func (c *SimClient) call() {
	if c.issued >= c.total {
		return
	}
	w := c.g.w
	c.issued++
	key := fmt.Sprintf("k%d", w.rng.IntN(4))
	token := fmt.Sprintf("c%d-%d-%x", c.idx, c.issued, w.rng.Uint32())
	payload := host.LogAppend(key, []byte(token))
	start := w.now
	c.Invoke(payload, func(res client.Result) {
		if res.Err != nil {
			var rej *client.RejectedError
			switch {
			case errors.As(res.Err, &rej):
				w.Violation("client %d: a valid call was rejected: %v", c.idx, res.Err)
			default:
				w.Violation("liveness: client %d call failed: %v", c.idx, res.Err)
			}
			c.failed = true
			return
		}
		c.g.checkAccepted(fmt.Sprintf("client %d", c.idx), payload, res.Value)
		n, err := host.DecodeLogLength(res.Value)
		if err != nil {
			w.Violation("client %d accepted a malformed result %x", c.idx, res.Value)
		}
		c.acks = append(c.acks, ack{key: key, token: token, length: n})
		c.accepted++
		c.latencies = append(c.latencies, w.now-start)
		w.After(0, c.call)
	})
}

// ByzClient is a Byzantine client: under its own admitted key it sends two
// different envelopes under one timestamp to different replicas, replays
// requests of other clients, sends requests with broken signatures (forged
// in another client's name), to one backup only, too large, or with a
// payload that is not an envelope. None of it may break any checker, and
// every request it gets executed must be one it signed.
type ByzClient struct {
	g      *Group
	id     bft.ClientID
	signer bft.Signer
	ts     uint64
	sent   int
	total  int
}

// NewByzClient adds a Byzantine client to group g.
func NewByzClient(g *Group, idx, total int) *ByzClient {
	id := g.Keys.NewClient(idx)
	c := &ByzClient{g: g, id: id, signer: g.Keys.ClientSigner(id), ts: 1 + uint64(g.w.rng.IntN(1000)), total: total}
	g.Register(id, c)
	return c
}

// Start schedules its misbehaviour.
func (c *ByzClient) Start() {
	w := c.g.w
	var act func()
	act = func() {
		if c.sent >= c.total {
			return
		}
		c.sent++
		c.misbehave()
		w.After(5_000+w.rng.Int64N(200_000), act)
	}
	w.After(w.rng.Int64N(100_000), act)
}

func (c *ByzClient) sign(req *bftpb.Request) {
	b := c.g.dom.RequestBytes(req)
	c.g.NoteSigned(b)
	req.Signature = c.signer.Sign(b)
}

func (c *ByzClient) misbehave() {
	g, rng := c.g, c.g.w.rng
	c.ts++
	mk := func(token string) *bftpb.Request {
		req := &bftpb.Request{Client: []byte(c.id), Timestamp: c.ts, Low: c.ts - 1,
			Payload: encodeCalls(host.LogAppend("byz", []byte(token)))}
		c.sign(req)
		return req
	}
	switch rng.IntN(6) {
	case 0: // equivocation: two envelopes under one timestamp
		a, b := mk(fmt.Sprintf("a%d", c.ts)), mk(fmt.Sprintf("b%d", c.ts))
		g.SendRequest(rng.IntN(g.N), a)
		g.SendRequest(rng.IntN(g.N), b)
		g.rememberRequest(a)
	case 1: // replay of another client's request
		if old := g.randomRequest(); old != nil {
			g.SendRequest(rng.IntN(g.N), old)
		}
	case 2: // a forged signature in another client's name
		req := mk("forged")
		if old := g.randomRequest(); old != nil {
			req.Client = old.Client
		}
		req.Signature = append([]byte(nil), req.Signature...)
		req.Signature[0] ^= 1
		g.SendRequest(rng.IntN(g.N), req)
	case 3: // to one backup only (C4: it must reach the primary)
		req := mk(fmt.Sprintf("one%d", c.ts))
		g.SendRequest(1+rng.IntN(g.N-1), req)
		g.rememberRequest(req)
	case 4: // too large
		req := &bftpb.Request{Client: []byte(c.id), Timestamp: c.ts, Low: c.ts - 1,
			Payload: make([]byte, int(g.coreConfig(0).MaxRequestBytes)+1)}
		c.sign(req)
		g.SendRequest(rng.IntN(g.N), req)
	default: // not an envelope, or a call the application refuses
		req := &bftpb.Request{Client: []byte(c.id), Timestamp: c.ts, Low: c.ts - 1, Payload: []byte("garbage")}
		if rng.IntN(2) == 0 {
			req.Payload = encodeCalls([]byte("explode now"))
		}
		c.sign(req)
		g.SendRequest(rng.IntN(g.N), req)
	}
}

// DeliverReply implements ReplySink: a Byzantine client ignores replies.
func (c *ByzClient) DeliverReply(*Group, *bftpb.Reply) {}

// rememberRequest keeps a signed request for replays and for Byzantine
// replicas that build valid batches.
func (g *Group) rememberRequest(r *bftpb.Request) {
	if r.Timestamp != 0 && len(g.issuedList) < 256 {
		g.issuedList = append(g.issuedList, proto.Clone(r).(*bftpb.Request))
	}
}

func (g *Group) randomRequest() *bftpb.Request {
	if len(g.issuedList) == 0 {
		return nil
	}
	return g.issuedList[g.w.rng.IntN(len(g.issuedList))]
}

func encodeCalls(calls ...[]byte) []byte { return envelope.EncodeCalls(calls) }

func unmarshal(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) }

func simDuration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }
