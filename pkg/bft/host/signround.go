package host

import (
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// A driver signs the replies of one of the loop's rounds together
// (DESIGN.md §3.2): it collects them as PendingReplies, signs the bytes
// AppendSignBytes lists in one go (pkg/bft/auth, SignTree) and hands the
// signatures back with AttachSignatures. Production (pkg/bft/replica) and
// the simulator (pkg/bft/bfttest) share these two steps.

// PendingReply is a reply waiting for its signatures: Sign is what
// SignBytesOf returned for it (an entry per call result, nil where the
// result is not signed).
type PendingReply struct {
	Rep  *bftpb.Reply
	Sign [][]byte
}

// AppendSignBytes appends to dst the bytes reps ask to have signed, in
// order.
func AppendSignBytes(dst [][]byte, reps []PendingReply) [][]byte {
	for _, p := range reps {
		for _, b := range p.Sign {
			if b != nil {
				dst = append(dst, b)
			}
		}
	}
	return dst
}

// AttachSignatures sets the Signatures of each reply that asks for any from
// sigs: one signature per byte string AppendSignBytes listed for reps, in the
// same order. Call results not signed get an empty entry.
func AttachSignatures(reps []PendingReply, sigs [][]byte) {
	for _, p := range reps {
		if p.Sign == nil {
			continue
		}
		out := make([][]byte, len(p.Sign))
		for i, b := range p.Sign {
			if b != nil {
				out[i], sigs = sigs[0], sigs[1:]
			}
		}
		p.Rep.Signatures = envelope.EncodeResults(out)
	}
}
