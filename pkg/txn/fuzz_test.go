package txn

import (
	"bytes"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

func seedTxn() *Txn {
	return &Txn{
		Ops: []Op{
			{Kind: OpCmp, Key: []byte("a"), Value: []byte("1")},
			{Kind: OpCmp, Key: []byte("b"), Absent: true},
			{Kind: OpRead, Key: []byte("c")},
			{Kind: OpReadRange, Key: []byte("d"), End: []byte("e"), Limit: 3},
			{Kind: OpReadRange, Key: []byte{}, Limit: 1, Meta: true},
			{Kind: OpInsert, Key: []byte("f"), Value: []byte("2")},
			{Kind: OpWrite, Key: []byte("g"), Value: []byte{}},
			{Kind: OpDelete, Key: []byte("h")},
			{Kind: OpCmpRange, Key: []byte("i"), End: []byte("j"), Limit: 2, Digests: []GroupDigest{{Group: 1}, {Group: 3}}},
		},
		Groups: []GroupVersion{{Group: 1, Version: 2}, {Group: 3, Version: 2}},
		Owner:  bft.ClientID(bytes.Repeat([]byte{9}, 32)), Nonce: 300, Watermark: 299,
	}
}

// Every decoder of network bytes accepts only canonical encodings: whatever it
// accepts re-encodes to the same bytes (DESIGN.md §8: fuzz every decoder).
func FuzzDecodeTxn(f *testing.F) {
	f.Add(seedTxn().Encode())
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := Decode(b)
		if err != nil {
			return
		}
		if got := tx.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("accepted a non-canonical encoding:\n in  %x\n out %x", b, got)
		}
		_ = DefaultLimits().Check(tx)
	})
}

func FuzzDecodeCall(f *testing.F) {
	enc := seedTxn().Encode()
	sigs := GroupSigs{Group: 1, Sigs: []ReplicaSig{{Replica: 0, Sig: make([]byte, SignatureSize)}, {Replica: 2, Sig: make([]byte, auth.TreeSignatureSize(2))}}}
	f.Add(NewTxnCall(enc, nil))
	f.Add(NewTxnCall(enc, &AdminSig{}))
	f.Add(NewRelayCall(enc, nil, Relay{Decision: Commit, Votes: sigs}))
	f.Add(NewOutcomeCall(enc, nil, Certificate{Decision: Abort, Parts: []GroupSigs{sigs}}))
	f.Add(NewReleaseCall(enc, Commit))
	f.Add(NewProofCall(enc, nil, Commit, []GroupSigs{sigs}))
	f.Add(NewQueryCall(7))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCall(b)
		if err != nil {
			return
		}
		if got := c.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("accepted a non-canonical call:\n in  %x\n out %x", b, got)
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	named := Named{Txn: seedTxn().Encode()}
	for _, res := range []*Result{
		{Kind: ResultVote, Signed: true, Decision: Commit, Watermark: 3, Reads: []Read{
			{Op: 2, Present: true, Value: []byte("v")}, {Op: 3, Range: true, Entries: []KV{{Key: []byte("d"), Value: []byte("x")}}}}},
		{Kind: ResultVote, Decision: Abort, Reason: ReasonConflict, Named: []Named{named}},
		{Kind: ResultVote, Decision: Abort, Reason: ReasonStaleMetadata, Version: 4, Named: []Named{named}},
		{Kind: ResultVote, Decision: Abort, Reason: ReasonWrongGroups, Want: []bft.GroupID{1, 2}},
		{Kind: ResultVote, Decision: Abort, Reason: ReasonCompare, Op: 3},
		{Kind: ResultAck, Signed: true, Decision: Abort},
		{Kind: ResultQueued, Named: []Named{named}},
		{Kind: ResultRefusal, Code: RefuseNoRecord, Message: "no record"},
		{Kind: ResultProofAck},
		{Kind: ResultQuery, Query: &QueryResult{Group: 2, HasMark: true, Mark: 9, Records: []QueryRecord{{Nonce: 1, State: StatePending, Vote: Commit, Txn: &named}}}},
	} {
		f.Add(res.Encode())
	}
	d := NewDomain("fuzz")
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = d.SignBytes(b) // must not panic on any bytes
		res, err := DecodeResult(b)
		if err != nil {
			return
		}
		if got := res.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("accepted a non-canonical result:\n in  %x\n out %x", b, got)
		}
		_ = res.Err()
	})
}
