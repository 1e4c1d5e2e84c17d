package txn

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

// ResultKind names what a group answered. Its value is the first byte of the
// result's encoding.
type ResultKind byte

// The results a group returns. Results are deterministic: every correct
// replica of a group returns the same bytes for the same call at the same
// point of the order, and a client accepts a result on f+1 matching replies
// (K2).
const (
	// ResultVote is a group's vote on a transaction: commit or abort with a
	// typed reason, the read results of a commit, the owner's watermark.
	ResultVote ResultKind = 'V'
	// ResultAck acknowledges "transaction t terminated here with outcome
	// o" (E8, E10); signed when it answers a certificate (W2 uses it).
	ResultAck ResultKind = 'A'
	// ResultQueued says a metadata transaction waits behind pending data
	// transactions, naming them (M4).
	ResultQueued ResultKind = 'Q'
	// ResultRefusal is a reply that is not a vote (T3, E8, E10, W2).
	ResultRefusal ResultKind = 'X'
	// ResultProofAck confirms a termination proof (W2, K3).
	ResultProofAck ResultKind = 'P'
	// ResultQuery answers a watermark query (W3).
	ResultQuery ResultKind = 'W'
)

// String names the result kind.
func (k ResultKind) String() string {
	switch k {
	case ResultVote:
		return "vote"
	case ResultAck:
		return "ack"
	case ResultQueued:
		return "queued"
	case ResultRefusal:
		return "refusal"
	case ResultProofAck:
		return "proof-ack"
	case ResultQuery:
		return "query"
	}
	return "unknown"
}

// Reason is the typed reason of an abort vote.
type Reason uint8

// Abort reasons. Their values are part of result encodings.
const (
	ReasonNone Reason = iota
	// ReasonConflict: a lock conflicts with a pending transaction (E3),
	// named in Result.Named[0] with its encoding.
	ReasonConflict
	// ReasonCompare: the comparison at operation Result.Op failed (E4).
	ReasonCompare
	// ReasonKeyExists: the insert at operation Result.Op met an existing
	// key (E5).
	ReasonKeyExists
	// ReasonNotFound: the write or delete at operation Result.Op met an
	// absent key (E5).
	ReasonNotFound
	// ReasonStaleMetadata: the metadata version the transaction carries is
	// not the group's (Result.Version, K1), or a metadata transaction is
	// queued (M4) and Result.Named lists what it waits for.
	ReasonStaleMetadata
	// ReasonWrongGroups: the declared groups are not the ones the group's
	// partition map assigns (T5); Result.Want lists those.
	ReasonWrongGroups
	// ReasonStaleNonce: the nonce is below the owner's watermark (E2).
	ReasonStaleNonce
	// ReasonSecondID: another transaction is recorded under the nonce (E2).
	ReasonSecondID
	// ReasonBeyondWindow: the nonce is at or beyond w+P, or at most the
	// owner's abort mark (E2).
	ReasonBeyondWindow
	// ReasonTerminatedEarly: an ABORT certificate of another group, or the
	// owner's release, reached this group before the transaction (E8, E10).
	ReasonTerminatedEarly
	// ReasonMapChange: the partition-map write at operation Result.Op
	// would move data this group holds (M3).
	ReasonMapChange
	// ReasonTooLarge: the read results exceed Limits.MaxResultBytes.
	ReasonTooLarge
	reasonEnd
)

// String names the reason (bounded metric label values).
func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "none"
	case ReasonConflict:
		return "conflict"
	case ReasonCompare:
		return "comparison_failed"
	case ReasonKeyExists:
		return "key_exists"
	case ReasonNotFound:
		return "not_found"
	case ReasonStaleMetadata:
		return "stale_metadata"
	case ReasonWrongGroups:
		return "wrong_groups"
	case ReasonStaleNonce:
		return "stale_nonce"
	case ReasonSecondID:
		return "second_id"
	case ReasonBeyondWindow:
		return "beyond_window"
	case ReasonTerminatedEarly:
		return "terminated_early"
	case ReasonMapChange:
		return "map_change"
	case ReasonTooLarge:
		return "too_large"
	}
	return "unknown"
}

// hasOp reports whether the reason names an operation.
func (r Reason) hasOp() bool {
	return r == ReasonCompare || r == ReasonKeyExists || r == ReasonNotFound || r == ReasonMapChange
}

// RefusalCode is the typed reason of a refusal.
type RefusalCode uint8

// Refusal codes.
const (
	// RefuseNoRecord: a copy of a transaction not from its owner, and no
	// record of it here (T3). For recovery (K4) it means the blocker is
	// gone.
	RefuseNoRecord RefusalCode = 1 + iota
	// RefuseNotOwner: a release without certificate from a client other
	// than the owner (E8).
	RefuseNotOwner
	// RefuseVoteMismatch: the certificate's part for this group claims a
	// vote this group did not cast (E10).
	RefuseVoteMismatch
	// RefusePending: a termination proof for a transaction still pending
	// here: send the outcome first (W2).
	RefusePending
	// RefuseOutcomeMismatch: a proof's outcome is not the one recorded
	// here (W2).
	RefuseOutcomeMismatch
	// RefuseInvalid: a call that fails validation at execution (it cannot
	// happen after Validate; kept so execution never depends on it).
	RefuseInvalid
	refuseEnd
)

// String names the code.
func (c RefusalCode) String() string {
	switch c {
	case RefuseNoRecord:
		return "no_record"
	case RefuseNotOwner:
		return "not_owner"
	case RefuseVoteMismatch:
		return "vote_mismatch"
	case RefusePending:
		return "pending"
	case RefuseOutcomeMismatch:
		return "outcome_mismatch"
	case RefuseInvalid:
		return "invalid"
	}
	return "unknown"
}

// Named is a pending (or queued) transaction a reply names so any client can
// recover it (E3, M4, K4): its encoding, and an admin signature for a
// metadata transaction.
type Named struct {
	Txn   []byte
	Admin *AdminSig
}

// KV is one entry of a read-range.
type KV struct {
	Key, Value []byte
}

// Read is the result of one read or read-range operation at a group.
type Read struct {
	// Op is the operation's index in the transaction.
	Op int
	// Range is set for a read-range: Entries holds the group's entries.
	Range bool
	// Present and Value answer a read.
	Present bool
	Value   []byte
	// Entries answer a read-range, in key order; the range stopped early
	// at this group iff len(Entries) equals the operation's limit (T1).
	Entries []KV
}

// RecordState is the state of a transaction record at a group.
type RecordState uint8

// Record states.
const (
	StatePending RecordState = 1 + iota
	StateQueued
	StateTerminated
)

// String names the state.
func (s RecordState) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateQueued:
		return "queued"
	case StateTerminated:
		return "terminated"
	}
	return "unknown"
}

// QueryRecord is one record an owner has at a group (W3).
type QueryRecord struct {
	Nonce uint64
	ID    TxnID
	State RecordState
	// Vote is the group's vote (zero while queued).
	Vote Decision
	// Outcome is the outcome of a terminated record.
	Outcome Decision
	// Unproven is set on a commit-voted multi-group update whose
	// termination proof has not arrived (W2).
	Unproven bool
	// Txn names the transaction when the owner has something left to do
	// for it (pending, queued or unproven): its encoding, to finish it
	// (K3, K4).
	Txn *Named
}

// QueryResult answers a watermark query (W3).
type QueryResult struct {
	Group     bft.GroupID
	Watermark uint64
	// HasMark and Mark give the owner's abort mark b (E2).
	HasMark bool
	Mark    uint64
	// Records are the owner's records from the query's From, in nonce
	// order.
	Records []QueryRecord
	// More is set when records were left out to bound the reply; ask again
	// From Next.
	More bool
	Next uint64
}

// Result is a decoded result. Which fields are set depends on Kind.
type Result struct {
	Kind ResultKind
	// Signed: the runtime signs this result (SignBytes is non-nil).
	Signed bool
	// ID and Group identify the transaction and the answering group.
	ID    TxnID
	Group bft.GroupID
	// Decision is the vote (ResultVote) or the outcome (ResultAck).
	Decision Decision
	// Watermark is the owner's watermark at the group after this call
	// (W3).
	Watermark uint64
	// Reason, Op, Version, Named and Want describe an abort vote; Named also
	// lists what a queued metadata transaction waits for.
	Reason  Reason
	Op      int
	Version uint64
	Named   []Named
	Want    []bft.GroupID
	// Reads are a commit vote's read results.
	Reads []Read
	// Code and Message describe a refusal.
	Code    RefusalCode
	Message string
	// Query answers a CallQuery.
	Query *QueryResult
}

// The result layouts. Votes, acks, queued replies, refusals and proof acks
// share a fixed header, so that SignBytes reads what it needs at fixed
// offsets:
//
//	header   := kind(1) flags(1) id(32) group(4, big-endian) decision(1)   (39 bytes)
//	vote     := header uvarint(watermark) reason(1) [reason payload] [reads, commit only]
//	ack      := header uvarint(watermark)
//	queued   := header uvarint(watermark) uvarint(#named) { named }
//	refusal  := header uvarint(watermark) code(1) bytes(message)
//	proofack := header uvarint(watermark)
//	query    := 'W' uvarint(group) uvarint(watermark) hasMark(1) [uvarint(mark)]
//	            uvarint(#records) { record } more(1) uvarint(next)
//	payload  := named (conflict) | uvarint(op) (compare, key exists, not found, map change)
//	            | uvarint(version) uvarint(#named) { named } (stale metadata)
//	            | uvarint(#groups) { uvarint(group) } (wrong groups) | nothing
//	named    := bytes(txn) admin
//	reads    := uvarint(#reads) { uvarint(op) 0 present(1) [bytes(value)] | uvarint(op) 1 uvarint(#entries) { bytes(key) bytes(value) } }
//	record   := uvarint(nonce) id(32) state(1) vote(1) outcome(1) unproven(1) hasTxn(1) [named]
//
// flags bit 0 marks a result the runtime must sign; only votes and acks set
// it. The decision byte is 0 in queued replies, refusals and proof acks.
// Decoding is strict and canonical.
const (
	resultHeaderSize = 39
	resultFlagSigned = 1
)

// AppendHeader appends a result header.
func appendHeader(b []byte, kind ResultKind, signed bool, id TxnID, g bft.GroupID, dec Decision) []byte {
	var flags byte
	if signed {
		flags = resultFlagSigned
	}
	b = append(b, byte(kind), flags)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(g))
	return append(b, byte(dec))
}

// Encode returns the result's encoding.
func (res *Result) Encode() []byte { return res.AppendEncode(nil) }

// AppendEncode appends the result's encoding to b.
func (res *Result) AppendEncode(b []byte) []byte {
	if res.Kind == ResultQuery {
		return appendQuery(b, res.Query)
	}
	signed := res.Signed && (res.Kind == ResultVote || res.Kind == ResultAck)
	dec := res.Decision
	if res.Kind != ResultVote && res.Kind != ResultAck {
		dec = 0
	}
	b = appendHeader(b, res.Kind, signed, res.ID, res.Group, dec)
	b = wire.AppendUvarint(b, res.Watermark)
	switch res.Kind {
	case ResultVote:
		b = AppendVoteBody(b, res)
	case ResultQueued:
		b = appendNamedList(b, res.Named)
	case ResultRefusal:
		b = append(b, byte(res.Code))
		b = wire.AppendString(b, res.Message)
	}
	return b
}

// AppendVote appends a vote result built from a stored body (see
// AppendVoteBody): engines answer re-deliveries (E1) this way.
func AppendVote(b []byte, signed bool, id TxnID, g bft.GroupID, dec Decision, watermark uint64, body []byte) []byte {
	b = appendHeader(b, ResultVote, signed, id, g, dec)
	b = wire.AppendUvarint(b, watermark)
	return append(b, body...)
}

// AppendVoteBody appends what follows a vote's watermark: the reason, its
// payload and, for a commit, the reads. Engines store this body with a
// record and answer re-deliveries (E1) with it verbatim.
func AppendVoteBody(b []byte, res *Result) []byte {
	reason := res.Reason
	if res.Decision == Commit {
		reason = ReasonNone
	}
	b = append(b, byte(reason))
	switch {
	case reason == ReasonConflict:
		var n Named
		if len(res.Named) > 0 {
			n = res.Named[0]
		}
		b = appendNamed(b, n)
	case reason.hasOp():
		b = wire.AppendUvarint(b, uint64(res.Op))
	case reason == ReasonStaleMetadata:
		b = wire.AppendUvarint(b, res.Version)
		b = appendNamedList(b, res.Named)
	case reason == ReasonWrongGroups:
		b = wire.AppendUvarint(b, uint64(len(res.Want)))
		for _, g := range res.Want {
			b = wire.AppendUvarint(b, uint64(g))
		}
	}
	if res.Decision == Commit {
		b = AppendReads(b, res.Reads)
	}
	return b
}

func appendNamed(b []byte, n Named) []byte {
	b = wire.AppendBytes(b, n.Txn)
	return appendAdmin(b, n.Admin)
}

func appendNamedList(b []byte, ns []Named) []byte {
	b = wire.AppendUvarint(b, uint64(len(ns)))
	for _, n := range ns {
		b = appendNamed(b, n)
	}
	return b
}

// AppendReads appends the encoding of read results.
func AppendReads(b []byte, reads []Read) []byte {
	b = wire.AppendUvarint(b, uint64(len(reads)))
	for i := range reads {
		rd := &reads[i]
		b = wire.AppendUvarint(b, uint64(rd.Op))
		if !rd.Range {
			b = append(b, 0)
			b = wire.AppendBool(b, rd.Present)
			if rd.Present {
				b = wire.AppendBytes(b, rd.Value)
			}
			continue
		}
		b = append(b, 1)
		b = wire.AppendUvarint(b, uint64(len(rd.Entries)))
		for _, kv := range rd.Entries {
			b = wire.AppendBytes(b, kv.Key)
			b = wire.AppendBytes(b, kv.Value)
		}
	}
	return b
}

func appendQuery(b []byte, q *QueryResult) []byte {
	if q == nil {
		q = &QueryResult{}
	}
	b = append(b, byte(ResultQuery))
	b = wire.AppendUvarint(b, uint64(q.Group))
	b = wire.AppendUvarint(b, q.Watermark)
	b = wire.AppendBool(b, q.HasMark)
	if q.HasMark {
		b = wire.AppendUvarint(b, q.Mark)
	}
	b = wire.AppendUvarint(b, uint64(len(q.Records)))
	for i := range q.Records {
		b = AppendQueryRecord(b, &q.Records[i])
	}
	b = wire.AppendBool(b, q.More)
	return wire.AppendUvarint(b, q.Next)
}

// AppendQueryRecord appends one record of a query result.
func AppendQueryRecord(b []byte, rec *QueryRecord) []byte {
	b = wire.AppendUvarint(b, rec.Nonce)
	b = append(b, rec.ID[:]...)
	b = append(b, byte(rec.State), byte(rec.Vote), byte(rec.Outcome))
	b = wire.AppendBool(b, rec.Unproven)
	b = wire.AppendBool(b, rec.Txn != nil)
	if rec.Txn != nil {
		b = appendNamed(b, *rec.Txn)
	}
	return b
}

// Decoder bounds for results (they only keep malformed bytes from making the
// decoder allocate).
const (
	maxDecodeNamed   = 1 << 16
	maxDecodeReads   = 1 << 20
	maxDecodeRecords = 1 << 20
)

// DecodeResult decodes a result strictly. Byte strings alias b.
func DecodeResult(b []byte) (*Result, error) {
	r := wire.NewReader(b)
	res := &Result{Kind: ResultKind(r.Byte("result kind"))}
	if r.Err() != nil {
		return nil, r.Err()
	}
	switch res.Kind {
	case ResultQuery:
		res.Query = readQuery(r)
		if err := r.Done("query result"); err != nil {
			return nil, err
		}
		return res, nil
	case ResultVote, ResultAck, ResultQueued, ResultRefusal, ResultProofAck:
	default:
		r.Failf("unknown result kind %#x", byte(res.Kind))
		return nil, r.Err()
	}
	flags := r.Byte("flags")
	copy(res.ID[:], r.Fixed("id", 32))
	res.Group = bft.GroupID(r.Uint32("group"))
	dec := Decision(r.Byte("decision"))
	if r.Err() != nil {
		return nil, r.Err()
	}
	switch res.Kind {
	case ResultVote, ResultAck:
		if flags&^resultFlagSigned != 0 {
			r.Failf("unknown result flags %#x", flags)
		}
		if !dec.valid() {
			r.Failf("%s: decision %d", res.Kind, dec)
		}
	default:
		if flags != 0 || dec != 0 {
			r.Failf("%s: flags %#x, decision %d must be zero", res.Kind, flags, dec)
		}
	}
	res.Signed = flags&resultFlagSigned != 0
	res.Decision = dec
	res.Watermark = r.Uvarint("watermark")
	switch res.Kind {
	case ResultVote:
		readVoteBody(r, res)
	case ResultQueued:
		res.Named = readNamedList(r)
	case ResultRefusal:
		res.Code = RefusalCode(r.Byte("refusal code"))
		if r.Err() == nil && (res.Code == 0 || res.Code >= refuseEnd) {
			r.Failf("unknown refusal code %d", res.Code)
		}
		res.Message = string(r.Bytes("refusal message", 0))
	}
	if err := r.Done(res.Kind.String() + " result"); err != nil {
		return nil, err
	}
	return res, nil
}

func readVoteBody(r *wire.Reader, res *Result) {
	res.Reason = Reason(r.Byte("reason"))
	if r.Err() != nil {
		return
	}
	switch {
	case res.Reason >= reasonEnd:
		r.Failf("unknown abort reason %d", res.Reason)
		return
	case res.Decision == Commit && res.Reason != ReasonNone:
		r.Failf("commit vote with abort reason %s", res.Reason)
		return
	case res.Decision == Abort && res.Reason == ReasonNone:
		r.Failf("abort vote without a reason")
		return
	}
	switch {
	case res.Reason == ReasonConflict:
		res.Named = []Named{readNamed(r)}
	case res.Reason.hasOp():
		res.Op = int(r.Uvarint32("operation"))
	case res.Reason == ReasonStaleMetadata:
		res.Version = r.Uvarint("version")
		res.Named = readNamedList(r)
	case res.Reason == ReasonWrongGroups:
		n := r.Count("groups", 1, maxDecodeGroups)
		res.Want = make([]bft.GroupID, n)
		for i := range res.Want {
			res.Want[i] = bft.GroupID(r.Uvarint32("group"))
			if i > 0 && r.Err() == nil && res.Want[i] <= res.Want[i-1] {
				r.Failf("groups not strictly increasing")
			}
		}
	}
	if res.Decision == Commit {
		res.Reads = readReads(r)
	}
}

func readNamed(r *wire.Reader) Named {
	return Named{Txn: r.Bytes("named transaction", 0), Admin: readAdmin(r)}
}

func readNamedList(r *wire.Reader) []Named {
	n := r.Count("named", 2, maxDecodeNamed)
	if n == 0 {
		return nil
	}
	out := make([]Named, n)
	for i := range out {
		out[i] = readNamed(r)
	}
	return out
}

func readReads(r *wire.Reader) []Read {
	n := r.Count("reads", 3, maxDecodeReads)
	if n == 0 {
		return nil
	}
	out := make([]Read, n)
	for i := range out {
		rd := &out[i]
		rd.Op = int(r.Uvarint32("read operation"))
		if i > 0 && r.Err() == nil && rd.Op <= out[i-1].Op {
			r.Failf("reads not in strictly increasing operation order")
			return nil
		}
		switch r.Byte("read kind") {
		case 0:
			rd.Present = r.Bool("present")
			if rd.Present {
				rd.Value = r.Bytes("value", 0)
			}
		case 1:
			rd.Range = true
			m := r.Count("entries", 2, 0)
			if m > 0 {
				rd.Entries = make([]KV, m)
			}
			for j := range rd.Entries {
				rd.Entries[j] = KV{Key: r.Bytes("key", 0), Value: r.Bytes("value", 0)}
				if j > 0 && r.Err() == nil && bytes.Compare(rd.Entries[j].Key, rd.Entries[j-1].Key) <= 0 {
					r.Failf("range entries not in strictly increasing key order")
				}
			}
		default:
			r.Failf("unknown read kind")
		}
		if r.Err() != nil {
			return nil
		}
	}
	return out
}

func readQuery(r *wire.Reader) *QueryResult {
	q := &QueryResult{Group: bft.GroupID(r.Uvarint32("group")), Watermark: r.Uvarint("watermark")}
	q.HasMark = r.Bool("has mark")
	if q.HasMark {
		q.Mark = r.Uvarint("mark")
	}
	n := r.Count("records", 37, maxDecodeRecords)
	if n > 0 {
		q.Records = make([]QueryRecord, n)
	}
	for i := range q.Records {
		rec := &q.Records[i]
		rec.Nonce = r.Uvarint("nonce")
		if i > 0 && r.Err() == nil && rec.Nonce <= q.Records[i-1].Nonce {
			r.Failf("records not in strictly increasing nonce order")
		}
		copy(rec.ID[:], r.Fixed("id", 32))
		rec.State = RecordState(r.Byte("state"))
		rec.Vote = Decision(r.Byte("vote"))
		rec.Outcome = Decision(r.Byte("outcome"))
		if r.Err() == nil {
			switch {
			case rec.State < StatePending || rec.State > StateTerminated:
				r.Failf("record state %d", rec.State)
			case rec.Vote != 0 && !rec.Vote.valid(), rec.Outcome != 0 && !rec.Outcome.valid():
				r.Failf("record decision out of range")
			}
		}
		rec.Unproven = r.Bool("unproven")
		if r.Bool("has transaction") {
			n := readNamed(r)
			rec.Txn = &n
		}
		if r.Err() != nil {
			return nil
		}
	}
	q.More = r.Bool("more")
	q.Next = r.Uvarint("next")
	return q
}

// Err returns the result as an error: nil for a commit vote, an ack, a proof
// ack and a query; *AbortError for an abort vote; *QueuedError for a queued
// reply; *RefusalError for a refusal.
func (res *Result) Err() error {
	switch res.Kind {
	case ResultVote:
		if res.Decision == Commit {
			return nil
		}
		return &AbortError{Group: res.Group, Reason: res.Reason, Op: res.Op, Version: res.Version, Named: res.Named, Want: res.Want}
	case ResultQueued:
		return &QueuedError{Group: res.Group, Named: res.Named}
	case ResultRefusal:
		return &RefusalError{Group: res.Group, Code: res.Code, Message: res.Message}
	}
	return nil
}

// String describes a result briefly (for logs and test failures).
func (res *Result) String() string {
	switch res.Kind {
	case ResultVote:
		if res.Decision == Commit {
			return fmt.Sprintf("vote commit %s at group %d (%d reads)", res.ID, res.Group, len(res.Reads))
		}
		return fmt.Sprintf("vote abort %s at group %d: %s", res.ID, res.Group, res.Reason)
	case ResultAck:
		return fmt.Sprintf("ack %s %s at group %d", res.Decision, res.ID, res.Group)
	case ResultQueued:
		return fmt.Sprintf("queued %s at group %d behind %d", res.ID, res.Group, len(res.Named))
	case ResultRefusal:
		return fmt.Sprintf("refusal %s at group %d: %s", res.Code, res.Group, res.Message)
	case ResultProofAck:
		return fmt.Sprintf("proof ack %s at group %d", res.ID, res.Group)
	case ResultQuery:
		return fmt.Sprintf("query result at group %d", res.Query.Group)
	}
	return "unknown result"
}
