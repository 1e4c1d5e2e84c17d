package client

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// fakeConn is a replica connection the test drives: it records what the
// client sends and delivers the replies the test makes.
type fakeConn struct {
	mu      sync.Mutex
	sent    []*bftpb.Request
	replies chan *bftpb.Reply
}

func (f *fakeConn) Send(r *bftpb.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, r)
	return true
}
func (f *fakeConn) Replies() <-chan *bftpb.Reply { return f.replies }
func (f *fakeConn) Close() error                 { return nil }

// requests returns the non-bind requests sent so far.
func (f *fakeConn) requests() []*bftpb.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*bftpb.Request
	for _, r := range f.sent {
		if r.Timestamp != 0 {
			out = append(out, r)
		}
	}
	return out
}

type rig struct {
	t       *testing.T
	c       *Client
	conns   []*fakeConn
	keys    []ed25519.PrivateKey // replicas'
	client  ed25519.PrivateKey
	dom     bft.Domain
	cluster *cluster.Cluster
}

func newRig(t *testing.T, window int, timeout time.Duration) *rig {
	return newRigInFlight(t, window, 0, timeout)
}

func newRigInFlight(t *testing.T, window, inFlight int, timeout time.Duration) *rig {
	t.Helper()
	dir := t.TempDir()
	c, err := cluster.Generate(cluster.GenerateOptions{Dir: dir, ClusterID: "ct", Groups: 1, F: 1, BasePort: 30000, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, cluster: c, dom: bft.NewDomain("ct", 0)}
	for _, rep := range c.Groups[0].Replicas {
		k, err := cluster.LoadReplicaKey(dir, rep.Name)
		if err != nil {
			t.Fatal(err)
		}
		r.keys = append(r.keys, k)
		r.conns = append(r.conns, &fakeConn{replies: make(chan *bftpb.Reply, 1024)})
	}
	if r.client, err = cluster.LoadClientKey(dir, cluster.ClientName(0)); err != nil {
		t.Fatal(err)
	}
	r.c, err = New(context.Background(), Config{
		Cluster: c, Group: 0, Key: r.client, Window: window, InFlight: inFlight, Timeout: timeout,
		Dial: func(_ context.Context, rep cluster.Replica, _ ed25519.PublicKey) (Conn, error) {
			return r.conns[rep.Index], nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.c.Close() })
	return r
}

// reply makes replica i answer req with result, MACed under their pair key
// (or with a bad MAC).
func (r *rig) reply(i int, req *bftpb.Request, status bftpb.ReplyStatus, result []byte, goodMAC bool) {
	rep := &bftpb.Reply{Client: req.Client, Timestamp: req.Timestamp, Replica: uint32(i), Status: status, Result: result}
	key, err := auth.DeriveMACKey(r.keys[i], r.client.Public().(ed25519.PublicKey))
	if err != nil {
		r.t.Fatal(err)
	}
	rep.Mac = auth.MAC(key, r.dom.ReplyBytes(rep))
	if !goodMAC {
		rep.Mac[0] ^= 1
	}
	r.conns[i].replies <- rep
}

func results(vals ...string) []byte {
	var rs [][]byte
	for _, v := range vals {
		rs = append(rs, []byte(v))
	}
	return envelope.EncodeResults(rs)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type outcome struct {
	v   []byte
	err error
}

func (r *rig) invoke(payload string) chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := r.c.Invoke(ctx, []byte(payload))
		ch <- outcome{v, err}
	}()
	return ch
}

// C3: the result of f+1 matching authenticated replies is accepted; f
// replies (one, with f=1) are not enough.
func TestC3_ClientAcceptsFPlusOneMatchingReplies(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("x")
	waitUntil(t, "the request at the primary", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	r.reply(0, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	select {
	case o := <-out:
		t.Fatalf("accepted after one reply: %v", o)
	case <-time.After(50 * time.Millisecond):
	}
	r.reply(1, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	o := <-out
	if o.err != nil || string(o.v) != "ok" {
		t.Fatalf("got %q, %v", o.v, o.err)
	}
}

// C3: f lying replicas and any number of forged replies (bad MACs, even
// claiming to come from correct replicas) cannot make the client accept a
// wrong result.
func TestC3_ClientRejectsLiesAndForgedReplies(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("x")
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	r.reply(3, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("lie"), true) // the faulty replica
	for i := 0; i < 3; i++ {                                                 // forged as the others
		r.reply(i, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("lie"), false)
	}
	select {
	case o := <-out:
		t.Fatalf("accepted %q from one liar and forgeries", o.v)
	case <-time.After(50 * time.Millisecond):
	}
	r.reply(1, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("truth"), true)
	r.reply(2, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("truth"), true)
	if o := <-out; string(o.v) != "truth" {
		t.Fatalf("got %q, %v", o.v, o.err)
	}
}

// C4: without a result before the timeout the envelope goes to every
// replica, again with a doubled timeout.
func TestC4_ClientRetransmitsToAllReplicasOnTimeout(t *testing.T) {
	r := newRig(t, 4, 100*time.Millisecond)
	out := r.invoke("x")
	waitUntil(t, "retransmission to the backups", func() bool {
		return len(r.conns[1].requests()) >= 1 && len(r.conns[2].requests()) >= 1 && len(r.conns[3].requests()) >= 1
	})
	first := r.conns[1].requests()[0]
	if len(r.conns[1].requests()) > 1 {
		t.Fatalf("retransmitted twice within the first doubled timeout")
	}
	for i := 0; i < 2; i++ {
		r.reply(i, first, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	}
	if o := <-out; o.err != nil {
		t.Fatal(o.err)
	}
}

// C1: calls made while the window is full travel together in one signed
// envelope, and results go back to the right callers.
func TestC1_ConcurrentCallsShareOneEnvelope(t *testing.T) {
	r := newRig(t, 1, time.Hour)
	first := r.invoke("a")
	waitUntil(t, "the first envelope", func() bool { return len(r.conns[0].requests()) == 1 })
	var outs []chan outcome
	for i := 0; i < 10; i++ {
		outs = append(outs, r.invoke(fmt.Sprintf("call-%d", i)))
	}
	time.Sleep(20 * time.Millisecond) // let them queue behind the full window (W=1)
	req := r.conns[0].requests()[0]
	for i := 0; i < 2; i++ {
		r.reply(i, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("A"), true)
	}
	if o := <-first; string(o.v) != "A" {
		t.Fatalf("first: %q %v", o.v, o.err)
	}
	waitUntil(t, "the second envelope", func() bool { return len(r.conns[0].requests()) == 2 })
	env := r.conns[0].requests()[1]
	calls, err := envelope.DecodeCalls(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 10 {
		t.Fatalf("second envelope carries %d calls, want all 10 queued", len(calls))
	}
	var res []string
	for _, c := range calls {
		res = append(res, "r-"+string(c))
	}
	for i := 0; i < 2; i++ {
		r.reply(i, env, bftpb.ReplyStatus_REPLY_STATUS_OK, results(res...), true)
	}
	for _, ch := range outs {
		o := <-ch
		if o.err != nil || len(o.v) < 2 || string(o.v[:2]) != "r-" {
			t.Fatalf("got %q %v", o.v, o.err)
		}
	}
	if env.Low >= env.Timestamp || env.Low < req.Timestamp {
		t.Fatalf("second envelope low %d, timestamp %d, first %d", env.Low, env.Timestamp, req.Timestamp)
	}
}

// C2: never more than W envelopes outstanding; each envelope's low
// watermark is below every timestamp still outstanding.
func TestC2_ClientKeepsAtMostWEnvelopesOutstanding(t *testing.T) {
	r := newRig(t, 3, time.Hour)
	for i := 0; i < 3; i++ {
		r.invoke(fmt.Sprintf("c%d", i))
		waitUntil(t, "an envelope", func() bool { return len(r.conns[0].requests()) == i+1 })
	}
	r.invoke("c3")
	time.Sleep(30 * time.Millisecond)
	if n := len(r.conns[0].requests()); n != 3 {
		t.Fatalf("%d envelopes outstanding with W=3", n)
	}
	reqs := r.conns[0].requests()
	for _, q := range reqs {
		if q.Low >= reqs[0].Timestamp {
			t.Fatalf("low %d not below the oldest outstanding %d", q.Low, reqs[0].Timestamp)
		}
	}
}

// A request f+1 replicas call stale fails with ErrStale; Close fails what is
// still pending with ErrClosed.
func TestClientReportsStaleAndClosed(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("x")
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	for i := 0; i < 2; i++ {
		r.reply(i, req, bftpb.ReplyStatus_REPLY_STATUS_STALE, nil, true)
	}
	if o := <-out; !errors.Is(o.err, ErrStale) {
		t.Fatalf("got %v, want ErrStale", o.err)
	}
	pending := r.invoke("y")
	waitUntil(t, "the second request", func() bool { return len(r.conns[0].requests()) == 2 })
	_ = r.c.Close()
	if o := <-pending; !errors.Is(o.err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", o.err)
	}
}

// With InFlight envelopes out, further calls wait and leave together in the
// next envelope (DESIGN.md §3.1), though W would allow more envelopes.
func TestClientKeepsInFlightEnvelopesAndPacksTheRest(t *testing.T) {
	r := newRigInFlight(t, 16, 2, time.Hour)
	for i := 0; i < 2; i++ {
		r.invoke(fmt.Sprintf("first-%d", i))
		waitUntil(t, "an envelope", func() bool { return len(r.conns[0].requests()) == i+1 })
	}
	for i := 0; i < 8; i++ {
		r.invoke(fmt.Sprintf("queued-%d", i))
	}
	time.Sleep(30 * time.Millisecond)
	if n := len(r.conns[0].requests()); n != 2 {
		t.Fatalf("%d envelopes out with InFlight=2", n)
	}
	first := r.conns[0].requests()[0]
	for i := 0; i < 2; i++ {
		r.reply(i, first, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	}
	waitUntil(t, "the packed envelope", func() bool { return len(r.conns[0].requests()) == 3 })
	calls, err := envelope.DecodeCalls(r.conns[0].requests()[2].Payload)
	if err != nil || len(calls) != 8 {
		t.Fatalf("third envelope: %d calls, %v; want the 8 queued", len(calls), err)
	}
}

// The loop ticks (to retransmit overdue envelopes, C4) only while an
// envelope is outstanding: an idle client sleeps, and a client whose last
// envelope was answered stops ticking again.
func TestIdleClientDoesNotTick(t *testing.T) {
	r := newRig(t, 4, 40*time.Millisecond) // a tick every 10 ms while busy
	time.Sleep(150 * time.Millisecond)
	if n := r.c.ticks.Load(); n != 0 {
		t.Fatalf("an idle client ticked %d times", n)
	}

	out := r.invoke("x")
	waitUntil(t, "a retransmission of the unanswered envelope", func() bool { return len(r.conns[1].requests()) >= 1 })
	if r.c.ticks.Load() == 0 {
		t.Fatal("the client retransmitted without ticking")
	}
	req := r.conns[0].requests()[0]
	for i := 0; i < 2; i++ {
		r.reply(i, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	}
	if o := <-out; o.err != nil {
		t.Fatal(o.err)
	}
	time.Sleep(30 * time.Millisecond) // a tick may be in flight as the result arrives
	before := r.c.ticks.Load()
	time.Sleep(150 * time.Millisecond)
	if n := r.c.ticks.Load() - before; n != 0 {
		t.Fatalf("the client ticked %d times after its last envelope was answered", n)
	}
}
