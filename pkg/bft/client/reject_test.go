package client

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// rejection is what a replica answers to a request it rejects: the
// request's digest (signature included) and the reason.
func (r *rig) rejection(req *bftpb.Request, reason string) []byte {
	d := r.dom.RequestDigest(req)
	return append(d[:], reason...)
}

// DESIGN.md §3.2: a rejected request gets an error reply, never silence. One
// rejection makes the client ask every replica at once (no timeout), and f+1
// matching rejections fail the call with the reason.
func TestClientFailsACallOnFPlusOneMatchingRejections(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("bad")
	waitUntil(t, "the request at the primary", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	r.reply(0, req, bftpb.ReplyStatus_REPLY_STATUS_REJECTED, r.rejection(req, "call 0: malformed"), true)
	waitUntil(t, "the request at every backup", func() bool {
		return len(r.conns[1].requests()) == 1 && len(r.conns[2].requests()) == 1 && len(r.conns[3].requests()) == 1
	})
	select {
	case o := <-out:
		t.Fatalf("failed after one rejection: %v", o.err)
	case <-time.After(50 * time.Millisecond):
	}
	r.reply(2, req, bftpb.ReplyStatus_REPLY_STATUS_REJECTED, r.rejection(req, "call 0: malformed"), true)
	o := <-out
	var rej *RejectedError
	if !errors.As(o.err, &rej) || rej.Reason != "call 0: malformed" || !errors.Is(o.err, ErrRejected) {
		t.Fatalf("got %v, want a RejectedError with the reason", o.err)
	}
}

// A forger who corrupts the signature of a copy of the client's request
// gets rejections naming the copy: they must not fail the real request.
func TestClientIgnoresRejectionsOfAnotherRequest(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("good")
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	forged := &bftpb.Request{Client: req.Client, Timestamp: req.Timestamp, Low: req.Low, Payload: req.Payload,
		Signature: append([]byte{req.Signature[0] ^ 1}, req.Signature[1:]...)}
	for i := 0; i < 4; i++ {
		r.reply(i, req, bftpb.ReplyStatus_REPLY_STATUS_REJECTED, r.rejection(forged, "bad signature"), true)
	}
	select {
	case o := <-out:
		t.Fatalf("the real request failed on rejections of a forged copy: %v", o.err)
	case <-time.After(50 * time.Millisecond):
	}
	r.reply(0, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	r.reply(1, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true)
	if o := <-out; o.err != nil || string(o.v) != "ok" {
		t.Fatalf("got %q, %v", o.v, o.err)
	}
}

// DESIGN.md §3.2, txn.md K2: for results the replicas sign, a reply counts
// only with a valid signature of its own replica, so the accepted result
// comes with f+1 valid signatures; a matching reply with a bad signature
// (a Byzantine replica spoiling the certificate) does not count.
func TestClientSignedResultsNeedFPlusOneValidSignatures(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	_ = r.c.Close()
	signBytes := func(res []byte) []byte {
		if len(res) > 0 && res[0] == 'S' {
			return append([]byte("sign:"), res...)
		}
		return nil
	}
	var err error
	r.c, err = New(context.Background(), Config{
		Cluster: r.cluster, Group: 0, Key: r.client, Window: 4, Timeout: time.Hour, SignBytes: signBytes,
		Dial: func(_ context.Context, rep cluster.Replica, _ ed25519.PublicKey) (Conn, error) {
			return r.conns[rep.Index], nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.c.Close()
	type signed struct {
		v    []byte
		sigs []Signed
		err  error
	}
	out := make(chan signed, 1)
	go func() {
		v, sigs, err := r.c.InvokeSigned(context.Background(), []byte("x"))
		out <- signed{v, sigs, err}
	}()
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	result := []byte("S-vote")
	send := func(i int, sig []byte) {
		rep := &bftpb.Reply{Client: req.Client, Timestamp: req.Timestamp, Replica: uint32(i),
			Status: bftpb.ReplyStatus_REPLY_STATUS_OK, Result: envelope.EncodeResults([][]byte{result}),
			Signatures: envelope.EncodeResults([][]byte{sig})}
		key, _ := auth.DeriveMACKey(r.keys[i], r.client.Public().(ed25519.PublicKey))
		rep.Mac = auth.MAC(key, r.dom.ReplyBytes(rep))
		r.conns[i].replies <- rep
	}
	good := func(i int) []byte { return ed25519.Sign(r.keys[i], signBytes(result)) }
	send(0, good(0))
	send(1, good(2)) // replica 1 sends replica 2's signature: not its own
	send(3, nil)     // no signature at all
	select {
	case o := <-out:
		t.Fatalf("accepted with one valid signature: %v", o)
	case <-time.After(50 * time.Millisecond):
	}
	send(2, good(2))
	o := <-out
	if o.err != nil || len(o.sigs) != 2 || o.sigs[0].Replica != 0 || o.sigs[1].Replica != 2 {
		t.Fatalf("got %v, %v; want the signatures of replicas 0 and 2", o.sigs, o.err)
	}
	for _, s := range o.sigs {
		if !ed25519.Verify(r.keys[s.Replica].Public().(ed25519.PublicKey), signBytes(result), s.Signature) {
			t.Fatalf("signature of replica %d does not verify", s.Replica)
		}
	}
}

// DESIGN.md §3.2: a call the application's validation rejects executes as a
// rejection of that call alone (an outcomes reply, envelope.EncodeOutcomes).
// The client fails the call with a RejectedError marked Call on f+1 matching
// replies — one lying replica that says "rejected" cannot fail it, nor can
// one that says "ok" make it succeed.
func TestClientFailsARejectedCallOnFPlusOneMatchingOutcomes(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("bad")
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	rejected := envelope.EncodeOutcomes([][]byte{nil}, []string{"txn: malformed transaction"})
	r.reply(0, req, bftpb.ReplyStatus_REPLY_STATUS_OK, rejected, true)
	r.reply(1, req, bftpb.ReplyStatus_REPLY_STATUS_OK, results("ok"), true) // a liar
	select {
	case o := <-out:
		t.Fatalf("decided on replies that do not match: %q, %v", o.v, o.err)
	case <-time.After(50 * time.Millisecond):
	}
	r.reply(2, req, bftpb.ReplyStatus_REPLY_STATUS_OK, rejected, true)
	o := <-out
	var rej *RejectedError
	if !errors.As(o.err, &rej) || !rej.Call || rej.Reason != "txn: malformed transaction" || !errors.Is(o.err, ErrRejected) {
		t.Fatalf("got %q, %v; want a RejectedError of the call with its reason", o.v, o.err)
	}
}

// The other calls of an envelope with a rejected call get their results:
// an outcomes reply with a value for a call is that call's result.
func TestClientTakesAResultFromAnOutcomesReply(t *testing.T) {
	r := newRig(t, 4, time.Hour)
	out := r.invoke("good")
	waitUntil(t, "the request", func() bool { return len(r.conns[0].requests()) == 1 })
	req := r.conns[0].requests()[0]
	ok := envelope.EncodeOutcomes([][]byte{[]byte("done")}, []string{""})
	r.reply(0, req, bftpb.ReplyStatus_REPLY_STATUS_OK, ok, true)
	r.reply(3, req, bftpb.ReplyStatus_REPLY_STATUS_OK, ok, true)
	if o := <-out; o.err != nil || string(o.v) != "done" {
		t.Fatalf("got %q, %v; want done", o.v, o.err)
	}
}
