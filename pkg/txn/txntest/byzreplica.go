package txntest

import (
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/bfttest"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// TxnLiar is a Byzantine replica at the transaction layer (txn.md's list):
// it orders correctly (the PBFT layer's faults are bfttest's behaviours) but
// lies in what it answers clients: wrong votes, wrong results, a wrong
// conflicting transaction named, signatures on the wrong vote, refusals
// where a vote is due. Clients accept nothing on its word alone (K2: f+1
// matching replies, certificates of f+1 valid signatures).
type TxnLiar struct {
	// Mode picks the lie: "vote", "reads", "named", "sign", "refuse", or
	// "" for any of them at random; or "tree" (never drawn at random, so
	// the seeds keep their meaning): its signature trees are forged, each
	// message getting the next one's signature, a lone one a changed path
	// or root signature.
	Mode string
	// Other is a transaction encoding to name falsely (mode "named").
	Other []byte
	// Forged, if set, counts the signatures forged in mode "tree".
	Forged *int
}

func (l TxnLiar) Name() string                               { return "txn-liar-" + l.Mode }
func (TxnLiar) Benign() bool                                 { return false }
func (TxnLiar) Init(*bfttest.SimReplica)                     {}
func (TxnLiar) Tick(*bfttest.SimReplica)                     {}
func (TxnLiar) Incoming(*bfttest.SimReplica, *bftpb.Message) {}
func (TxnLiar) Snapshot(_ *bfttest.SimReplica, c []storage.Chunk) []storage.Chunk {
	return c
}
func (TxnLiar) Outgoing(_ *bfttest.SimReplica, _ int, m *bftpb.Message) []*bftpb.Message {
	return []*bftpb.Message{m}
}

func (l TxnLiar) mode(r *bfttest.SimReplica) string {
	if l.Mode != "" {
		return l.Mode
	}
	modes := []string{"vote", "reads", "named", "sign", "refuse"}
	return modes[r.Group().World().Rand().IntN(len(modes))]
}

// Reply rewrites the transaction results in an OK reply.
func (l TxnLiar) Reply(r *bfttest.SimReplica, rep *bftpb.Reply) *bftpb.Reply {
	if rep.Status != bftpb.ReplyStatus_REPLY_STATUS_OK {
		return rep
	}
	results, rejected, err := envelope.DecodeOutcomes(rep.Result)
	if err != nil {
		return rep
	}
	changed := false
	mode := l.mode(r)
	for i, b := range results {
		res, err := txn.DecodeResult(b)
		if err != nil || res.Kind != txn.ResultVote {
			continue
		}
		switch mode {
		case "vote":
			if res.Decision == txn.Commit {
				res.Decision, res.Reason, res.Reads = txn.Abort, txn.ReasonConflict, nil
			} else {
				res.Decision, res.Reason, res.Named = txn.Commit, 0, nil
			}
		case "reads":
			for j := range res.Reads {
				for k := range res.Reads[j].Entries {
					res.Reads[j].Entries[k].Value = append([]byte("lie-"), res.Reads[j].Entries[k].Value...)
				}
			}
		case "named":
			if res.Decision != txn.Abort || len(l.Other) == 0 {
				continue
			}
			res.Reason, res.Named = txn.ReasonConflict, []txn.Named{{Txn: l.Other}}
		case "refuse":
			res.Kind, res.Code, res.Message = txn.ResultRefusal, txn.RefuseNoRecord, "no record (a lie)"
		default:
			continue // "sign" lies in TamperSign
		}
		results[i] = res.Encode()
		changed = true
	}
	if !changed {
		return rep
	}
	c := proto.Clone(rep).(*bftpb.Reply)
	c.Result = envelope.EncodeResults(results)
	if slices.ContainsFunc(rejected, func(r string) bool { return r != "" }) {
		c.Result = envelope.EncodeOutcomes(results, rejected)
	}
	return c
}

// TamperSign signs the opposite vote in mode "sign": a signature on the
// wrong vote must not let anyone build a certificate (E9, E10, K2).
func (l TxnLiar) TamperSign(r *bfttest.SimReplica, rep *bftpb.Reply, sign [][]byte) [][]byte {
	if l.mode(r) != "sign" || sign == nil {
		return sign
	}
	results, _, err := envelope.DecodeOutcomes(rep.Result)
	if err != nil || len(results) != len(sign) {
		return sign
	}
	dom := txn.NewDomain(ClusterID)
	for i, b := range results {
		res, err := txn.DecodeResult(b)
		if err != nil || sign[i] == nil || res.Kind != txn.ResultVote {
			continue
		}
		wrong := txn.Commit
		if res.Decision == txn.Commit {
			wrong = txn.Abort
		}
		sign[i] = dom.VoteBytes(res.ID, bft.GroupID(r.Group().ID), wrong)
	}
	return sign
}

// TamperTree, in mode "tree", hands each message of the round the
// signature of the next (a valid root signature with another leaf's path)
// and corrupts a lone signature: a client must refuse the reply (K2), and
// no certificate may carry it (E10).
func (l TxnLiar) TamperTree(r *bfttest.SimReplica, sigs [][]byte) {
	if l.Mode != "tree" || len(sigs) == 0 {
		return
	}
	if l.Forged != nil {
		*l.Forged += len(sigs)
	}
	if len(sigs) == 1 {
		b := slices.Clone(sigs[0])
		b[r.Group().World().Rand().IntN(len(b))] ^= 1
		sigs[0] = b
		return
	}
	first := sigs[0]
	copy(sigs, sigs[1:])
	sigs[len(sigs)-1] = first
}
