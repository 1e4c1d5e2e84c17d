package txntest

import (
	"strings"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/partition"
)

func view(g bft.GroupID, replica int, infos ...partition.RecordInfo) RecordView {
	v := RecordView{Group: g, Replica: replica, Records: map[txn.TxnID]partition.RecordInfo{}}
	for _, in := range infos {
		v.Records[in.ID] = in
	}
	return v
}

func terminated(id byte, vote, outcome txn.Decision) partition.RecordInfo {
	return partition.RecordInfo{ID: txn.TxnID{id}, State: txn.StateTerminated, Multi: true, Update: true,
		Owner: bft.ClientID(make([]byte, 32)), Vote: vote, Outcome: outcome}
}

// The record checkers must be able to fail: fed records that break X2, X3
// or a group's agreement, they say so; fed consistent ones, they are silent.
func TestRecordCheckersReportBrokenRecords(t *testing.T) {
	ok := []RecordView{
		view(0, 0, terminated(1, txn.Commit, txn.Commit), terminated(2, txn.Abort, txn.Abort)),
		view(0, 1, terminated(1, txn.Commit, txn.Commit)),
		view(1, 0, terminated(1, txn.Commit, txn.Commit), terminated(2, txn.Commit, txn.Abort)),
	}
	if v := CheckRecords(ok, true); len(v) != 0 {
		t.Fatalf("consistent records reported: %v", v)
	}
	cases := []struct {
		name  string
		views []RecordView
		want  string
	}{
		{"X2: committed in one group, aborted in another", []RecordView{
			view(0, 0, terminated(1, txn.Commit, txn.Commit)),
			view(1, 0, terminated(1, txn.Commit, txn.Abort)),
		}, "X2:"},
		{"X3: pending after the run", []RecordView{
			view(0, 0, partition.RecordInfo{ID: txn.TxnID{3}, State: txn.StatePending, Owner: bft.ClientID(make([]byte, 32)), Vote: txn.Commit}),
		}, "X3:"},
		{"agreement: two votes in one group", []RecordView{
			view(0, 0, terminated(1, txn.Commit, txn.Commit)),
			view(0, 1, terminated(1, txn.Abort, txn.Abort)),
		}, "agreement:"},
		{"agreement: two outcomes in one group", []RecordView{
			view(0, 0, terminated(1, txn.Commit, txn.Commit)),
			view(0, 1, terminated(1, txn.Commit, txn.Abort)),
		}, "agreement:"},
	}
	for _, c := range cases {
		got := CheckRecords(c.views, true)
		found := false
		for _, v := range got {
			found = found || strings.HasPrefix(v, c.want)
		}
		if !found {
			t.Errorf("%s: got %v, want a %q violation", c.name, got, c.want)
		}
	}
}
