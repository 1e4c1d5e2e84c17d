package bft_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// seedMessages returns valid messages of every kind, signed with the
// harness's keys, for the fuzz corpora.
func seedMessages(c *cluster) []*bftpb.Message {
	r1, r2 := c.request(0, 1, 0, "a"), c.request(1, 3, 1, "b")
	b := c.batch(r1, r2)
	d := c.digest(b)
	stable := c.checkpointCert(tK, fakeDigest(tK, "s"), 0, 1, 2)
	pc := c.preparedCert(0, tK+1, d, 1, 2)
	vcs := []*bftpb.ViewChange{
		c.viewChange(1, 0, stable, pc),
		c.viewChange(1, 2, nil, c.preparedCert(0, 2, fakeDigest(2, "x"), 2, 3)),
		c.viewChange(1, 3, nil),
	}
	cc := &bftpb.CommitCert{View: 0, Seq: 1, Digest: d, Commits: []*bftpb.Commit{c.commit(0, 1, d, 0), c.commit(0, 1, d, 1), c.commit(0, 1, d, 2)}}
	return []*bftpb.Message{
		msg(2, r1),
		msg(0, c.prePrepare(0, 1, b, 0)),
		msg(0, c.ppHeader(0, 2, d, 0)),
		msg(2, c.prepare(0, 1, d, 2)),
		msg(3, c.commit(0, 1, d, 3)),
		msg(1, c.checkpoint(tK, fakeDigest(tK, "s"), 1)),
		msg(0, vcs[0]),
		msg(1, c.newView(1, vcs, c.expectedO(vcs), 1)),
		msg(3, &bftpb.Status{View: 1, ViewChanging: true, StableSeq: tK, LastExecuted: 6, Replica: 3}),
		msg(3, &bftpb.Fetch{Kind: bftpb.Fetch_KIND_COMMITTED, FromSeq: 1, ToSeq: 8, Replica: 3}),
		msg(3, &bftpb.Fetch{Kind: bftpb.Fetch_KIND_NEW_VIEW, View: 1, Replica: 3}),
		msg(3, &bftpb.Fetch{Kind: bftpb.Fetch_KIND_BATCH, FromSeq: 1, Digest: d, Replica: 3}),
		msg(2, &bftpb.CommittedBatch{PrePrepare: c.prePrepare(0, 1, b, 0), Cert: cc}),
		msg(2, &bftpb.BatchBody{Seq: 1, Digest: d, Batch: b}),
		msg(2, stable),
	}
}

// FuzzCheckerMessage: whatever bytes arrive, decoding and Checker.Message
// never panic, and a message the checker accepts never panics Node.Step.
func FuzzCheckerMessage(f *testing.F) {
	c := newCluster(f, 1)
	for _, m := range seedMessages(c) {
		if err := c.checker.Message(m); err != nil {
			f.Fatalf("seed %s rejected: %v", describe(m), err)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := &bftpb.Message{}
		if err := proto.Unmarshal(b, m); err != nil {
			return
		}
		if err := c.checker.Message(m); err != nil {
			return
		}
		to := (int(m.From) + 1) % c.n
		node, err := bft.NewNode(c.reps[to].cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		node.Step(m)
		for node.HasReady() {
			node.Ready()
			node.Advance()
		}
	})
}

// FuzzCheckerRequest: decoding and Checker.Request never panic on any
// bytes, and a request the checker accepts never panics Node.Propose.
func FuzzCheckerRequest(f *testing.F) {
	c := newCluster(f, 1)
	seeds := []*bftpb.Request{
		c.request(0, 1, 0, "a"),
		c.request(1, 9, 8, "b"),
		c.request(2, 1, 0, ""),
		{Client: []byte(c.clients[0]), Timestamp: 1},
	}
	for _, r := range seeds {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	nodes := make([]*bft.Node, c.n)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &bftpb.Request{}
		if err := proto.Unmarshal(b, r); err != nil {
			return
		}
		if err := c.checker.Request(r); err != nil {
			return
		}
		for i := range nodes {
			if nodes[i] == nil {
				n, err := bft.NewNode(c.reps[i].cfg, nil)
				if err != nil {
					t.Fatal(err)
				}
				nodes[i] = n
			}
			_ = nodes[i].Propose(r)
			for nodes[i].HasReady() {
				nodes[i].Ready()
				nodes[i].Advance()
			}
		}
	})
}
