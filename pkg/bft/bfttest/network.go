package bfttest

import (
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Network models the links between replicas and clients: random delay
// (which reorders), loss, duplication and partitions while the network is
// chaotic (before HealAt), only delay afterwards.
type Network struct {
	MinDelay, MaxDelay int64 // microseconds
	LossRate           float64
	DupRate            float64
	// cut[i][j] cuts the link from i to j (replica indexes; clients are
	// never cut).
	cut [][]bool
}

func (s *Sim) chaotic() bool { return s.now < s.opts.HealAt }

func (s *Sim) delay() int64 {
	n := s.opts.Net
	if n.MaxDelay <= n.MinDelay {
		return n.MinDelay
	}
	return n.MinDelay + s.rng.Int64N(n.MaxDelay-n.MinDelay+1)
}

// copies returns how many copies of a message the network delivers: 0
// (lost), 1, or 2 (duplicated).
func (s *Sim) copies() int {
	if !s.chaotic() {
		return 1
	}
	if s.rng.Float64() < s.opts.Net.LossRate {
		s.stats.lost++
		return 0
	}
	if s.rng.Float64() < s.opts.Net.DupRate {
		return 2
	}
	return 1
}

func (s *Sim) linkCut(from, to int) bool {
	return s.chaotic() && s.net.cut != nil && s.net.cut[from][to]
}

// sendReplicaMsg delivers an encoded message from replica from to replica to.
func (s *Sim) sendReplicaMsg(from, to int, b []byte) {
	if s.manual != nil {
		s.manual.enqueue(&queued{kind: kindReplica, from: from, to: to, b: b})
		return
	}
	if s.linkCut(from, to) {
		s.stats.lost++
		return
	}
	for c := s.copies(); c > 0; c-- {
		s.after(s.delay(), func() { s.replicas[to].deliver(b) })
	}
}

// sendRequest delivers a client request to a replica.
func (s *Sim) sendRequest(to int, r *bftpb.Request) {
	b, _ := proto.Marshal(r)
	if s.manual != nil {
		s.manual.enqueue(&queued{kind: kindRequest, to: to, b: b})
		return
	}
	for c := s.copies(); c > 0; c-- {
		s.after(s.delay(), func() { s.replicas[to].deliverRequest(b) })
	}
}

// sendReply delivers a reply to a client.
func (s *Sim) sendReply(client int, rep *bftpb.Reply) {
	b, _ := proto.Marshal(rep)
	if s.manual != nil {
		s.manual.enqueue(&queued{kind: kindReply, from: int(rep.Replica), to: client, b: b})
		return
	}
	for c := s.copies(); c > 0; c-- {
		s.after(s.delay(), func() { s.clients[client].deliver(b) })
	}
}

// partition cuts the replicas into two sides until heal.
func (s *Sim) partition(side []bool) {
	n := len(s.replicas)
	s.net.cut = make([][]bool, n)
	for i := range s.net.cut {
		s.net.cut[i] = make([]bool, n)
		for j := range s.net.cut[i] {
			s.net.cut[i][j] = side[i] != side[j]
		}
	}
	s.tracef("partition %v", side)
}

func (s *Sim) healPartition() {
	s.net.cut = nil
	s.tracef("partition healed")
}
