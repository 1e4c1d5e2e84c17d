package bft_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Tests of clients and requests, pbft.md C1–C4.

// C1: a request (client, timestamp, low, operation) signed by its client
// passes the checker.
func TestC1_CheckerAcceptsClientSignedRequest(t *testing.T) {
	c := newCluster(t, 1)
	if err := c.checker.Request(c.request(0, 1, 0, "op")); err != nil {
		t.Fatal(err)
	}
	if err := c.checker.Message(msg(2, c.request(0, 7, 3, "op"))); err != nil {
		t.Fatalf("forwarded request rejected: %v", err)
	}
}

// C1: the client's signature covers the client id, the timestamp, the low
// watermark and the operation: changing any of them, or signing with
// another client's key, invalidates the request.
func TestC1_SignatureCoversClientTimestampLowAndOperation(t *testing.T) {
	c := newCluster(t, 1)
	mut := map[string]func(r *bftpb.Request){
		"timestamp": func(r *bftpb.Request) { r.Timestamp++ },
		"low":       func(r *bftpb.Request) { r.Low++ },
		"payload":   func(r *bftpb.Request) { r.Payload[len(r.Payload)-1] ^= 1 },
		"client":    func(r *bftpb.Request) { r.Client = []byte(c.clients[1]) },
		"signature": func(r *bftpb.Request) { r.Signature[3] ^= 1 },
		"other key": func(r *bftpb.Request) {
			r.Signature = c.keys.ClientSigner(c.clients[1]).Sign(c.dom.RequestBytes(r))
		},
		"no signature": func(r *bftpb.Request) { r.Signature = nil },
	}
	for name, m := range mut {
		r := c.request(0, 5, 2, "op")
		m(r)
		if err := c.checker.Request(r); !errors.Is(err, bft.ErrBadSignature) {
			t.Errorf("%s changed: err = %v, want ErrBadSignature", name, err)
		}
	}
	// A signature of another cluster or group means nothing here.
	r := c.request(0, 5, 2, "op")
	other := bft.NewDomain(tCluster, 2)
	r.Signature = c.keys.ClientSigner(c.clients[0]).Sign(other.RequestBytes(r))
	if err := c.checker.Request(r); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("signature of group 2: err = %v, want ErrBadSignature", err)
	}
}

// C1: a client without a key in the cluster, a malformed client id or
// timestamp, an oversized operation or one the application rejects is
// refused.
func TestC1_CheckerRejectsMalformedOrUnknownClientRequest(t *testing.T) {
	c := newCluster(t, 1)
	stranger := bft.ClientID(bytes.Repeat([]byte{7}, 32))
	r := &bftpb.Request{Client: []byte(stranger), Timestamp: 1, Payload: []byte("x")}
	r.Signature = c.keys.ClientSigner(c.clients[0]).Sign(c.dom.RequestBytes(r))
	if err := c.checker.Request(r); !errors.Is(err, bft.ErrBadSignature) {
		t.Errorf("unknown client: err = %v, want ErrBadSignature", err)
	}
	short := c.request(0, 1, 0, "x")
	short.Client = short.Client[:31]
	if err := c.checker.Request(short); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("31-byte client id: err = %v, want ErrInvalidRequest", err)
	}
	if err := c.checker.Request(c.request(0, 0, 0, "x")); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("timestamp 0: err = %v, want ErrInvalidRequest", err)
	}
	if err := c.checker.Request(c.request(0, 3, 3, "x")); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("low = timestamp: err = %v, want ErrInvalidRequest", err)
	}
	if err := c.checker.Request(c.request(0, 1, 0, string(make([]byte, 1024)))); !errors.Is(err, bft.ErrTooLarge) {
		t.Errorf("payload above MaxRequestBytes: err = %v, want ErrTooLarge", err)
	}
	c.validate = func([]byte) error { return errors.New("no") }
	if err := c.checker.Request(c.request(0, 1, 0, "x")); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("application rejects: err = %v, want ErrInvalidRequest", err)
	}
	if err := c.checker.Request(nil); !errors.Is(err, bft.ErrInvalidRequest) {
		t.Errorf("nil request: err = %v", err)
	}
}

// runOne has the whole group order and execute req, sent to the primary.
func runOne(t *testing.T, c *cluster, req *bftpb.Request) {
	t.Helper()
	before := c.node(0).LastExecuted()
	if err := c.propose(0, req); err != nil {
		t.Fatal(err)
	}
	c.settle()
	for i := range c.reps {
		if c.node(i).LastExecuted() != before+1 {
			t.Fatalf("r%d executed %d, want %d", i, c.node(i).LastExecuted(), before+1)
		}
	}
}

func repliesFor(rs []*bftpb.Reply, r *bftpb.Request) []*bftpb.Reply {
	var out []*bftpb.Reply
	for _, rp := range rs {
		if bytes.Equal(rp.Client, r.Client) && rp.Timestamp == r.Timestamp {
			out = append(out, rp)
		}
	}
	return out
}

// C2: a request already executed gets its cached reply again and is not
// ordered or executed again, at the primary and at a backup.
func TestC2_RetransmittedExecutedRequestGetsCachedReply(t *testing.T) {
	c := newCluster(t, 1)
	r := c.next(0)
	runOne(t, c, r)
	want := repliesFor(c.reps[0].replies, r)
	if len(want) != 1 {
		t.Fatalf("primary sent %d replies for the request", len(want))
	}
	for _, i := range []int{0, 2} {
		c.reps[i].reset()
		if err := c.propose(i, r); err != nil {
			t.Fatalf("r%d: %v", i, err)
		}
		got := repliesFor(c.reps[i].replies, r)
		if len(got) != 1 || got[0].Status != bftpb.ReplyStatus_REPLY_STATUS_OK || !bytes.Equal(got[0].Result, want[0].Result) {
			t.Fatalf("r%d: retransmission got %v, want the cached result", i, got)
		}
		if len(c.reps[i].msgs) != 0 {
			t.Fatalf("r%d sent %d messages for an executed request (ordered or forwarded it again)", i, len(c.reps[i].msgs))
		}
	}
	// Forwarded by a backup to the primary: answered from the cache too.
	c.reps[0].reset()
	c.step(0, msg(3, r))
	if got := repliesFor(c.reps[0].replies, r); len(got) != 1 || !bytes.Equal(got[0].Result, want[0].Result) {
		t.Fatalf("forwarded retransmission: replies %v", got)
	}
	c.settle()
	for i := range c.reps {
		if n := c.node(i).Stats().RequestsExecuted; n != 1 {
			t.Errorf("r%d executed %d requests, want 1", i, n)
		}
	}
}

// C2: a request at or below the client's low watermark is never executed:
// it gets a STALE reply that names the watermark.
func TestC2_RequestAtOrBelowLowWatermarkGetsStaleReply(t *testing.T) {
	c := newCluster(t, 1)
	runOne(t, c, c.request(0, 3, 2, "three")) // moves low to 2
	for _, ts := range []uint64{1, 2} {
		c.reps[0].reset()
		r := c.request(0, ts, 0, "old")
		if err := c.propose(0, r); err != nil {
			t.Fatal(err)
		}
		got := repliesFor(c.reps[0].replies, r)
		if len(got) != 1 || got[0].Status != bftpb.ReplyStatus_REPLY_STATUS_STALE || got[0].Low != 2 {
			t.Fatalf("ts %d below low 2: replies %v, want one STALE with low 2", ts, got)
		}
		if pps := sentPrePrepares(c.reps[0].msgs); len(pps) != 0 {
			t.Fatalf("ts %d below low 2 was ordered", ts)
		}
	}
}

// C2: a request above low + W is refused until the window moves.
func TestC2_RequestAboveWindowRefusedUntilWindowMoves(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	above := c.request(0, tW+1, 0, "above")
	if err := c.propose(0, above); !errors.Is(err, bft.ErrOutsideWindow) {
		t.Fatalf("ts W+1 with low 0: err = %v, want ErrOutsideWindow", err)
	}
	if pps := sentPrePrepares(c.reps[0].msgs); len(pps) != 0 {
		t.Fatalf("a request above the window was ordered")
	}
	if err := c.propose(2, above); !errors.Is(err, bft.ErrOutsideWindow) {
		t.Fatalf("backup: ts W+1 with low 0: err = %v, want ErrOutsideWindow", err)
	}
	if len(forwards(c.reps[2].msgs)) != 0 {
		t.Fatalf("backup forwarded a request above the window")
	}
	c.net = true
	runOne(t, c, c.request(0, 2, 1, "moves the window")) // low 1: window (1, 1+W]
	c.reps[0].reset()
	if err := c.propose(0, above); err != nil {
		t.Fatalf("ts W+1 after low moved to 1: %v", err)
	}
	if pps := sentPrePrepares(c.reps[0].msgs); len(pps) != 1 {
		t.Fatalf("ts W+1 inside the moved window was not ordered")
	}
}

// C2: exactly once inside one batch: a batch that carries a request twice
// executes it once; requests of the batch below or above the client's
// window are not executed.
func TestC2_ExactlyOnceAcrossBatchWithDuplicates(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r := c.request(0, 3, 2, "r")
	old := c.request(0, 1, 0, "below low, which r raises to 2")
	far := c.request(1, 9, 0, "above window")
	r2 := c.request(1, 1, 0, "r2")
	c.commitAt(1, 0, 1, c.batch(r, r, old, far, r2, r))
	ex := c.reps[1].execs
	if len(ex) != 1 {
		t.Fatalf("%d executions", len(ex))
	}
	if len(ex[0].Execute) != 2 || !protoEqual(ex[0].Execute[0], r) || !protoEqual(ex[0].Execute[1], r2) {
		t.Fatalf("Execute = %d requests, want [r, r2]", len(ex[0].Execute))
	}
	if got := repliesFor(c.reps[1].replies, old); len(got) != 1 || got[0].Status != bftpb.ReplyStatus_REPLY_STATUS_STALE {
		t.Fatalf("request below low in a batch: replies %v, want STALE", got)
	}
	if got := repliesFor(c.reps[1].replies, far); len(got) != 0 {
		t.Fatalf("request above window in a batch got replies %v", got)
	}
	for _, rp := range repliesFor(c.reps[1].replies, r) {
		if rp.Status != bftpb.ReplyStatus_REPLY_STATUS_OK {
			t.Fatalf("reply to r: %v", rp)
		}
	}
	if n := c.node(1).Stats().RequestsExecuted; n != 2 {
		t.Fatalf("RequestsExecuted = %d, want 2", n)
	}
}

// C2: the replica keeps replies only above the client's low watermark: a
// request that raises low forgets (and tells the host to delete) the
// cached replies at or below it, which then answer STALE.
func TestC2_ReplyCacheForgetsRepliesAtOrBelowLow(t *testing.T) {
	c := newCluster(t, 1)
	c.net = false
	r1 := c.request(0, 1, 0, "one")
	r2 := c.request(0, 2, 0, "two")
	c.commitAt(1, 0, 1, c.batch(r1, r2))
	c.reps[1].reset()
	c.commitAt(1, 0, 2, c.batch(c.request(0, 4, 1, "four, low 1")))
	ex := c.reps[1].execs[0]
	if len(ex.Clients) != 1 || ex.Clients[0].Low != 1 || len(ex.Clients[0].Delete) != 1 || ex.Clients[0].Delete[0] != 1 {
		t.Fatalf("client update %+v, want Low 1 and Delete [1]", ex.Clients)
	}
	c.reps[1].reset()
	if err := c.propose(1, r1); err != nil {
		t.Fatal(err)
	}
	if got := repliesFor(c.reps[1].replies, r1); len(got) != 1 || got[0].Status != bftpb.ReplyStatus_REPLY_STATUS_STALE {
		t.Fatalf("forgotten ts 1: %v, want STALE", got)
	}
	c.reps[1].reset()
	if err := c.propose(1, r2); err != nil {
		t.Fatal(err)
	}
	if got := repliesFor(c.reps[1].replies, r2); len(got) != 1 || got[0].Status != bftpb.ReplyStatus_REPLY_STATUS_OK {
		t.Fatalf("cached ts 2: %v, want its cached OK reply", got)
	}
}

// C3: every replica that executes a request replies (view, t, client,
// replica, result), and correct replicas' results agree.
func TestC3_EveryExecutingReplicaReplies(t *testing.T) {
	c := newCluster(t, 1)
	r := c.next(3)
	runOne(t, c, r)
	var result []byte
	for i, rp := range c.reps {
		got := repliesFor(rp.replies, r)
		if len(got) != 1 {
			t.Fatalf("r%d sent %d replies", i, len(got))
		}
		g := got[0]
		if g.View != 0 || g.Replica != uint32(i) || g.Status != bftpb.ReplyStatus_REPLY_STATUS_OK || len(g.Result) == 0 {
			t.Fatalf("r%d reply = %v", i, g)
		}
		if result == nil {
			result = g.Result
		} else if !bytes.Equal(result, g.Result) {
			t.Fatalf("r%d result differs", i)
		}
	}
}

// C4: a backup forwards a new request to the primary only (and starts its
// request timer, see the V1 tests); the primary orders a forwarded request.
func TestC4_BackupForwardsNewRequestToPrimary(t *testing.T) {
	c := newCluster(t, 1)
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	fw := forwards(c.reps[2].msgs)
	if len(fw) != 1 || fw[0].Broadcast || fw[0].To != 0 || !protoEqual(fw[0].Msg.GetRequest(), r) {
		t.Fatalf("backup forwards %v, want the request to the primary only", fw)
	}
	c.deliver(isType("forward"))
	if pps := sentPrePrepares(c.reps[0].msgs); len(pps) != 1 || len(pps[0].Batch.Requests) != 1 {
		t.Fatalf("primary did not order the forwarded request")
	}
}

// C4: a client's retransmission to a backup that still waits for the
// request is forwarded again, at most once per status interval.
func TestC4_BackupReforwardsRetransmissionAtMostOncePerInterval(t *testing.T) {
	const interval = 5
	c := newCluster(t, 1, func(cfg *bft.Config) { cfg.StatusInterval = interval; cfg.RequestTimeout = 100 })
	c.net = false
	r := c.next(0)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	if n := len(forwards(c.reps[2].msgs)); n != 1 {
		t.Fatalf("%d forwards for a request and its immediate retransmission, want 1", n)
	}
	c.tick(2, interval)
	if err := c.propose(2, r); err != nil {
		t.Fatal(err)
	}
	if n := len(forwards(c.reps[2].msgs)); n != 2 {
		t.Fatalf("%d forwards after a status interval, want 2", n)
	}
}
