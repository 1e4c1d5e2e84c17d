package client

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// RejectedError is returned for a call that f+1 replicas rejected and that
// will never execute (DESIGN.md §3.2): either the call itself failed the
// application's stateless validation (Call is set; the envelope's other
// calls executed), or its whole envelope failed verification (a signature,
// the size limit, the envelope's encoding).
type RejectedError struct {
	Reason string
	// Call: this call alone was rejected; sending it again is rejected
	// again. Unset: the envelope was, whatever the call.
	Call bool
}

func (e *RejectedError) Error() string {
	if e.Call {
		return "client: call rejected by the replicas: " + e.Reason
	}
	return "client: request rejected by the replicas: " + e.Reason
}

// Is makes errors.Is(err, ErrRejected) true for every RejectedError.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// ErrRejected matches every RejectedError.
var ErrRejected = errors.New("client: request rejected by the replicas")

// Signed is one replica's signature of a call's result (DESIGN.md §3.2).
type Signed struct {
	Replica   bft.ReplicaID
	Signature []byte
}

// Result is the outcome of one call.
type Result struct {
	Value []byte
	// Sigs holds, when the result is one the application signs, the
	// signatures of the replicas whose matching replies made it accepted
	// (at least f+1, each verified).
	Sigs []Signed
	Err  error
}

// CoreConfig configures a Core. Crypto is injected, so the simulator can run
// the real client with cheap stand-ins for Ed25519 and X25519.
type CoreConfig struct {
	ID     bft.ClientID
	F, N   int
	Domain bft.Domain
	// Sign signs a request's canonical bytes with the client's key (C1).
	Sign func(msg []byte) []byte
	// VerifyReply checks a reply's MAC under the pairwise key of its replica.
	VerifyReply func(rep *bftpb.Reply) bool
	// SignBytes, if set, says which call results carry replica signatures:
	// those for which it returns non-nil. VerifySignature checks one.
	SignBytes       func(result []byte) []byte
	VerifySignature func(replica bft.ReplicaID, msg, sig []byte) bool

	Window, InFlight                   int
	Timeout                            time.Duration
	MaxEnvelopeCalls, MaxEnvelopeBytes int
	Metrics                            *Metrics
}

// Core is the group client's state machine (pbft.md C1–C4): it packs
// queued calls into signed envelopes, keeps at most InFlight of them
// outstanding within the window W, sends each to the primary it believes
// current, re-sends to every replica on timeout with a doubled timeout, and
// accepts a result on f+1 matching authenticated replies from distinct
// replicas. It starts no goroutine and reads no clock: the Client drives it
// from its goroutine with the wall clock, the simulator from its scheduler.
// Not safe for concurrent use.
type Core struct {
	cfg         CoreConfig
	conns       []Conn
	view        bft.View
	nextTs      uint64
	queue       []*call
	outstanding map[uint64]*pending
	// lastCalls is the number of calls in the envelope sent last: while
	// envelopes are out, a new one leaves only when it would be at least
	// that full (see Flush).
	lastCalls int
}

type call struct {
	payload []byte
	queued  time.Time
	done    func(Result)
}

type pending struct {
	req      *bftpb.Request
	digest   bft.Digest // of req, signature included: what a rejection names
	calls    []*call
	replies  map[uint32]*bftpb.Reply
	sentAt   time.Time
	deadline time.Time
	timeout  time.Duration
	// rejectedSeen: a replica said the request is invalid; it went to every
	// replica at once so that f+1 can say so.
	rejectedSeen bool
}

// NewCore returns a client core. Timestamps start at now, so a restarted
// client starts above everything it sent before (C1); low watermarks tell
// the replicas to forget the rest (C2).
func NewCore(cfg CoreConfig, conns []Conn, now time.Time) *Core {
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	return &Core{cfg: cfg, conns: conns, nextTs: uint64(now.UnixNano()), outstanding: make(map[uint64]*pending)}
}

// View returns the view the client believes current.
func (c *Core) View() bft.View { return c.view }

// Outstanding returns the number of envelopes in flight.
func (c *Core) Outstanding() int { return len(c.outstanding) }

// OutstandingRequests returns the envelopes in flight, oldest first.
func (c *Core) OutstandingRequests() []*bftpb.Request {
	out := make([]*bftpb.Request, 0, len(c.outstanding))
	for _, p := range c.outstanding {
		out = append(out, p.req)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp < out[j].Timestamp })
	return out
}

// Queued returns the number of calls waiting for an envelope.
func (c *Core) Queued() int { return len(c.queue) }

// Submit queues one call; done is called once with its result. Calls leave
// at the next Flush.
func (c *Core) Submit(payload []byte, now time.Time, done func(Result)) {
	c.queue = append(c.queue, &call{payload: payload, queued: now, done: done})
}

// low is the client's low watermark: every timestamp at or below it has
// its result (C2).
func (c *Core) low() uint64 {
	low := c.nextTs - 1
	for ts := range c.outstanding {
		if ts-1 < low {
			low = ts - 1
		}
	}
	return low
}

// Flush packs queued calls into envelopes while the window allows (C1, C2).
//
// Fewer, fuller envelopes cost the replicas less per call: every replica
// verifies every envelope's signature and answers it, and the primary's
// batches carry fewer, larger requests. So while envelopes are out, the
// queue leaves as a further envelope (up to InFlight) only once it is at
// least as full as the envelope sent last, or fills an envelope to its
// bound; otherwise the calls wait for an outstanding envelope's result. An
// idle client sends at once (nothing is out), callers that trickle in still
// pipeline (envelopes of one call each), and a burst of callers settles on
// a few full envelopes rather than InFlight small ones: on the 2-core
// reference machine, 64 callers gained about 40 % in calls/s with lower
// latency (docs/benchmarks/bft.md). The threshold follows the load: after
// a large envelope, a smaller queue waits at most for one result, and the
// envelope then sent resets it.
func (c *Core) Flush(now time.Time) {
	cfg := &c.cfg
	for len(c.queue) > 0 && len(c.outstanding) < cfg.InFlight && c.nextTs <= c.low()+uint64(cfg.Window) {
		// The bound is on the encoded envelope (what the replicas bound by
		// MaxRequestBytes), so each call counts with its length prefix, as
		// envelope.Size counts it.
		n, size := 0, envelopeHeader
		for n < len(c.queue) && n < cfg.MaxEnvelopeCalls && (n == 0 || size+envelopeCallSize(c.queue[n].payload) <= cfg.MaxEnvelopeBytes) {
			size += envelopeCallSize(c.queue[n].payload)
			n++
		}
		if len(c.outstanding) > 0 && n == len(c.queue) && n < c.lastCalls {
			// The whole queue fits in an envelope smaller than the last
			// one: let it fill until an outstanding envelope returns.
			break
		}
		c.lastCalls = n
		calls := c.queue[:n:n]
		c.queue = c.queue[n:]
		payloads := make([][]byte, len(calls))
		for i, cl := range calls {
			payloads[i] = cl.payload
		}
		ts := c.nextTs
		low := c.low() // below ts: computed before ts is taken
		c.nextTs++
		req := &bftpb.Request{Client: []byte(cfg.ID), Timestamp: ts, Low: low, Payload: envelope.EncodeCalls(payloads)}
		req.Signature = cfg.Sign(cfg.Domain.RequestBytes(req))
		p := &pending{req: req, digest: cfg.Domain.RequestDigest(req), calls: calls, replies: make(map[uint32]*bftpb.Reply),
			sentAt: now, timeout: cfg.Timeout, deadline: now.Add(cfg.Timeout)}
		c.outstanding[ts] = p
		c.conns[bft.PrimaryOf(c.view, cfg.N)].Send(req)
		cfg.Metrics.EnvelopesSent.Inc()
		cfg.Metrics.EnvelopeCalls.Observe(float64(n))
	}
}

// envelopeHeader and envelopeCallSize bound the encoding of an envelope
// (envelope.Size): a tag and a count, then each call behind its length.
const envelopeHeader = 1 + binary.MaxVarintLen64

func envelopeCallSize(payload []byte) int { return binary.MaxVarintLen64 + len(payload) }

// Tick re-sends to every replica the envelopes whose timeout passed,
// doubling their timeout up to 16 times the first (C4).
func (c *Core) Tick(now time.Time) {
	for _, p := range c.outstanding {
		if now.Before(p.deadline) {
			continue
		}
		c.broadcast(p)
		if p.timeout < c.cfg.Timeout<<4 {
			p.timeout *= 2
		}
		p.deadline = now.Add(p.timeout)
		c.cfg.Metrics.Retransmissions.Inc()
	}
}

func (c *Core) broadcast(p *pending) {
	for _, conn := range c.conns {
		conn.Send(p.req)
	}
}

// Deliver records an authenticated reply and accepts a result once f+1
// distinct replicas agree on it (C3).
func (c *Core) Deliver(rep *bftpb.Reply, now time.Time) {
	if int(rep.Replica) >= c.cfg.N || !bytes.Equal(rep.Client, []byte(c.cfg.ID)) || !c.cfg.VerifyReply(rep) {
		c.cfg.Metrics.BadReplies.Inc()
		return
	}
	p := c.outstanding[rep.Timestamp]
	if p == nil {
		return // late: already accepted
	}
	switch rep.Status {
	case bftpb.ReplyStatus_REPLY_STATUS_REJECTED:
		// A rejection counts only if it names this very request (digest over
		// the signature too): a forger's corrupted copy of it gets its own.
		if len(rep.Result) < len(p.digest) || !bytes.Equal(rep.Result[:len(p.digest)], p.digest[:]) {
			c.cfg.Metrics.BadReplies.Inc()
			return
		}
		if !p.rejectedSeen {
			// One replica's word proves nothing, but every correct replica
			// decides the same: ask them all now instead of after a timeout.
			p.rejectedSeen = true
			c.broadcast(p)
		}
	case bftpb.ReplyStatus_REPLY_STATUS_OK:
		if !c.signaturesValid(rep) {
			c.cfg.Metrics.BadReplies.Inc()
			return
		}
	}
	p.replies[rep.Replica] = rep
	var match []*bftpb.Reply
	for _, o := range p.replies {
		if o.Status == rep.Status && bytes.Equal(o.Result, rep.Result) {
			match = append(match, o)
		}
	}
	if len(match) < c.cfg.F+1 {
		return
	}
	// At least one of the f+1 is correct, so the group reached the lowest
	// view they report.
	sort.Slice(match, func(i, j int) bool { return match[i].View < match[j].View })
	if v := bft.View(match[0].View); v > c.view {
		c.view = v
	}
	delete(c.outstanding, rep.Timestamp)
	m := c.cfg.Metrics
	m.EnvelopeLatency.Observe(now.Sub(p.sentAt).Seconds())
	var results [][]byte
	var rejected []string
	var err error
	switch rep.Status {
	case bftpb.ReplyStatus_REPLY_STATUS_OK:
		results, rejected, err = decodeResults(rep.Result, len(p.calls))
	case bftpb.ReplyStatus_REPLY_STATUS_REJECTED:
		err = &RejectedError{Reason: string(rep.Result[len(p.digest):])}
	default:
		err = ErrStale
	}
	for i, cl := range p.calls {
		if err != nil {
			cl.done(Result{Err: err})
			continue
		}
		if rejected[i] != "" {
			// This call alone was rejected by the application's stateless
			// validation; the others of the envelope executed (DESIGN.md §3.2).
			cl.done(Result{Err: &RejectedError{Reason: rejected[i], Call: true}})
			continue
		}
		m.CallLatency.Observe(now.Sub(cl.queued).Seconds())
		cl.done(Result{Value: results[i], Sigs: c.signaturesOf(match, i, results[i])})
	}
}

// signaturesValid checks, for a result the application signs, that the
// reply carries a valid signature of its replica for every call that needs
// one; a reply that does not counts for nothing, so an accepted result always
// comes with f+1 valid signatures (txn.md K2).
func (c *Core) signaturesValid(rep *bftpb.Reply) bool {
	if c.cfg.SignBytes == nil {
		return true
	}
	results, rejected, err := envelope.DecodeOutcomes(rep.Result)
	if err != nil {
		return true // the f+1 check decides; a malformed result fails decodeResults
	}
	var sigs [][]byte
	for i, r := range results {
		if rejected[i] != "" {
			continue
		}
		msg := c.cfg.SignBytes(r)
		if msg == nil {
			continue
		}
		if sigs == nil {
			if sigs, err = envelope.DecodeResults(rep.Signatures); err != nil || len(sigs) != len(results) {
				return false
			}
		}
		if !c.cfg.VerifySignature(bft.ReplicaID(rep.Replica), msg, sigs[i]) {
			return false
		}
	}
	return true
}

// signaturesOf collects the signatures of call i from the matching replies.
func (c *Core) signaturesOf(match []*bftpb.Reply, i int, result []byte) []Signed {
	if c.cfg.SignBytes == nil || c.cfg.SignBytes(result) == nil {
		return nil
	}
	out := make([]Signed, 0, len(match))
	for _, rep := range match {
		sigs, err := envelope.DecodeResults(rep.Signatures)
		if err != nil || i >= len(sigs) {
			continue // impossible: signaturesValid admitted it
		}
		out = append(out, Signed{Replica: bft.ReplicaID(rep.Replica), Signature: sigs[i]})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Replica < out[b].Replica })
	return out
}

// FailAll fails every outstanding and queued call with err.
func (c *Core) FailAll(err error) {
	for _, p := range c.outstanding {
		for _, cl := range p.calls {
			cl.done(Result{Err: err})
		}
	}
	for _, cl := range c.queue {
		cl.done(Result{Err: err})
	}
	c.outstanding, c.queue = make(map[uint64]*pending), nil
}

// decodeResults splits an envelope's result into one result per call and
// the reasons of the calls the replicas rejected ("" for a result).
func decodeResults(b []byte, calls int) ([][]byte, []string, error) {
	res, rejected, err := envelope.DecodeOutcomes(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadReply, err)
	}
	if len(res) != calls {
		return nil, nil, fmt.Errorf("%w: %d results for %d calls", ErrBadReply, len(res), calls)
	}
	return res, rejected, nil
}
