package host

import (
	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Rejection builds the reply to a request that failed verification or the
// application's stateless validation (DESIGN.md §3.2: an error reply, never
// silence). Its result is the request's digest — which covers the client's
// signature, so a forger who corrupts a copy of a client's real request gets
// a rejection of the copy, not of the real one — followed by the reason.
// The reason comes from deterministic checks, so every correct replica sends
// the same result and the client accepts it on f+1 matching replies.
func Rejection(dom *bft.Domain, replica bft.ReplicaID, req *bftpb.Request, reason error) *bftpb.Reply {
	d := dom.RequestDigest(req)
	result := append(d[:len(d):len(d)], reason.Error()...)
	return &bftpb.Reply{
		Client: req.Client, Timestamp: req.Timestamp, Replica: uint32(replica),
		Status: bftpb.ReplyStatus_REPLY_STATUS_REJECTED, Result: result,
	}
}
