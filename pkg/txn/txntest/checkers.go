package txntest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

// The record checkers read what every correct replica's engine recorded
// (partition.Inspect) and compare across replicas and groups:
//
//   - within a group, correct replicas agree on every vote and outcome they
//     both recorded (the PBFT layer's agreement, seen at this layer);
//   - X2: a multi-group update — a Byzantine owner's too — has one outcome
//     in every group that terminated it: never COMMIT in one and ABORT in
//     another;
//   - X3: once the network healed and the clients finished, nothing is left
//     pending or queued: abandoned transactions were recovered (K4).
//
// They return what they found, one violation per line.

// RecordView is what one replica recorded: its group and slot, and its
// records by transaction.
type RecordView struct {
	Group   bft.GroupID
	Replica int
	Records map[txn.TxnID]partition.RecordInfo
}

// ReadRecords reads the records of store r.
func ReadRecords(g bft.GroupID, replica int, r host.Reader) (RecordView, error) {
	infos, err := partition.Inspect(r)
	if err != nil {
		return RecordView{}, err
	}
	v := RecordView{Group: g, Replica: replica, Records: make(map[txn.TxnID]partition.RecordInfo, len(infos))}
	for _, in := range infos {
		v.Records[in.ID] = in
	}
	return v, nil
}

// CheckRecords checks agreement within each group and X2 across groups; if
// final, also X3 (nothing pending or queued).
func CheckRecords(views []RecordView, final bool) []string {
	var out []string
	type seen struct {
		info    partition.RecordInfo
		replica int
	}
	byGroup := map[bft.GroupID]map[txn.TxnID]seen{}
	// Within a group: one vote and one outcome per transaction.
	for _, v := range views {
		m := byGroup[v.Group]
		if m == nil {
			m = map[txn.TxnID]seen{}
			byGroup[v.Group] = m
		}
		for id, in := range v.Records {
			if final && (in.State == txn.StatePending || in.State == txn.StateQueued) {
				out = append(out, fmt.Sprintf("X3: group %d replica %d still holds %s %v (owner %x nonce %d, vote %s%s) after the run", v.Group, v.Replica, in.State, id, in.Owner[:4], in.Nonce, in.Vote, describeOps(in.Txn)))
			}
			prev, ok := m[id]
			if !ok {
				m[id] = seen{in, v.Replica}
				continue
			}
			if in.State != txn.StateQueued && prev.info.State != txn.StateQueued && in.Vote != prev.info.Vote {
				out = append(out, fmt.Sprintf("agreement: group %d replicas %d and %d voted %s and %s on %v", v.Group, prev.replica, v.Replica, prev.info.Vote, in.Vote, id))
			}
			if in.State == txn.StateTerminated && prev.info.State == txn.StateTerminated && in.Outcome != prev.info.Outcome {
				out = append(out, fmt.Sprintf("agreement: group %d replicas %d and %d terminated %v with %s and %s", v.Group, prev.replica, v.Replica, id, prev.info.Outcome, in.Outcome))
			}
			if in.State == txn.StateTerminated {
				m[id] = seen{in, v.Replica}
			}
		}
	}
	// X2: one outcome across groups.
	outcomes := map[txn.TxnID]map[bft.GroupID]txn.Decision{}
	for g, m := range byGroup {
		for id, s := range m {
			if s.info.State != txn.StateTerminated || !s.info.Multi || !s.info.Update {
				continue
			}
			if outcomes[id] == nil {
				outcomes[id] = map[bft.GroupID]txn.Decision{}
			}
			outcomes[id][g] = s.info.Outcome
		}
	}
	ids := make([]txn.TxnID, 0, len(outcomes))
	for id := range outcomes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	for _, id := range ids {
		var commit, abort []bft.GroupID
		for g, d := range outcomes[id] {
			if d == txn.Commit {
				commit = append(commit, g)
			} else {
				abort = append(abort, g)
			}
		}
		if len(commit) > 0 && len(abort) > 0 {
			sort.Slice(commit, func(i, j int) bool { return commit[i] < commit[j] })
			sort.Slice(abort, func(i, j int) bool { return abort[i] < abort[j] })
			out = append(out, fmt.Sprintf("X2: %v committed in groups %v and aborted in groups %v", id, commit, abort))
		}
	}
	return out
}

// describeOps lists a recorded transaction's operations and groups, for
// a violation's message.
func describeOps(enc []byte) string {
	t, err := txn.Decode(enc)
	if err != nil {
		return ""
	}
	var ops []string
	for _, op := range t.Ops {
		ops = append(ops, fmt.Sprintf("%v %q", op.Kind, op.Key))
	}
	return fmt.Sprintf("; groups %v: %s", t.GroupIDs(), strings.Join(ops, ", "))
}
