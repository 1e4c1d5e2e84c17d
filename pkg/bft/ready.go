package bft

import "github.com/augustus-db/augustus/pkg/bft/bftpb"

// Ready is what the host must do after feeding the node. Order matters:
//  1. persist HardState, Records and Deletes in one atomic write (P1);
//  2. send Messages and Replies only once that write is durable (synced —
//     by a sync of its own or, with a sequential log, by a later sync that
//     covers it and other rounds too: group commit, pkg/bft/host);
//  3. execute Executions in order, each committing its state changes, its
//     client updates and its sequence number atomically (P2), and report each
//     with Node.Executed;
//  4. start StateTarget, if set, and report it with Node.StateInstalled;
//  5. call Node.Advance.
//
// Why persist before send (P1): a message that left before its record was
// durable could be contradicted after a crash. A backup that forgot its
// PREPARE could accept another PRE-PREPARE for the same (v, s) and PREPARE
// that too; a primary that forgot a PRE-PREPARE could assign its seq again;
// a replica that forgot its view change could go back to the old view.
// Each makes a correct replica look faulty, and the protocol's bound of f
// faults no longer holds. One write per round keeps that to one fsync for
// all the round's messages.
//
// Executions of one Ready may be reported after later Readys (asynchronous
// execution), but in order.
type Ready struct {
	// HardState is set when the view, the view-change flag or the stable
	// checkpoint changed.
	HardState *bftpb.HardState
	// Records are log records to store under their keys (RecordKey): the
	// messages this replica signed, and the PRE-PREPAREs, PREPAREs and
	// COMMITs it received, from which a restart rebuilds its certificates.
	Records []Record
	// Deletes are key ranges of records the log no longer needs (G2): below
	// a new stable checkpoint, and view records below a view entered.
	Deletes []KeyRange
	// Messages go to other replicas of the group, signed already (Status
	// and Fetch are unsigned hints); whatever a replica must not contradict
	// later is in Records of this Ready or an earlier one.
	Messages []Outbound
	// Replies go to clients; the host adds the MAC. They need no record: a
	// lost reply is sent again when the client retransmits (C4).
	Replies []*bftpb.Reply
	// Executions are committed batches to execute, in sequence order (N7).
	Executions []Execution
	// StateTarget asks the host to fetch the state at a stable checkpoint
	// from peers (G3). A newer target replaces an older one.
	StateTarget *StateTarget
}

// Empty reports whether there is nothing to do.
func (rd *Ready) Empty() bool {
	return rd.HardState == nil && len(rd.Records) == 0 && len(rd.Deletes) == 0 &&
		len(rd.Messages) == 0 && len(rd.Replies) == 0 && len(rd.Executions) == 0 && rd.StateTarget == nil
}

// MustSync reports whether step 1 has anything to persist. (A host may
// leave that write unsynced when the round sends nothing: P1 asks for
// durability before a message leaves, and the next synced write makes the
// earlier ones durable too.)
func (rd *Ready) MustSync() bool {
	return rd.HardState != nil || len(rd.Records) > 0 || len(rd.Deletes) > 0
}

// Record is one log record and the key to store it under.
type Record struct {
	Key    []byte
	Record *bftpb.LogRecord
}

// KeyRange is [Start, End) in the record key space.
type KeyRange struct {
	Start, End []byte
}

// Outbound is a message to one replica, or to every other replica when
// Broadcast is set.
type Outbound struct {
	To        ReplicaID
	Broadcast bool
	Msg       *bftpb.Message
}

// Execution is one committed batch to execute.
type Execution struct {
	// Seq, View and Digest identify the batch as it committed (N6).
	Seq    SeqNum
	View   View
	Digest Digest
	// Batch is the batch as ordered (empty for a null batch).
	Batch *bftpb.Batch
	// Execute lists the requests to execute, in order: the batch minus the
	// requests already executed, below the client's window or above it (C2).
	// The host returns one result per element.
	Execute []*bftpb.Request
	// Clients lists the changes to the client table to persist atomically
	// with the results.
	Clients []ClientUpdate
	// Checkpoint asks for the state digest after this batch (G1).
	Checkpoint bool
}

// ClientUpdate is the change one batch makes to one client's record.
type ClientUpdate struct {
	Client ClientID
	// Low is the client's low watermark after the batch.
	Low uint64
	// Put are the replies to cache: result i of the batch for Timestamp.
	Put []PutReply
	// Delete are cached replies at or below Low to forget.
	Delete []uint64
}

// PutReply caches the result of Execute[Result] under Timestamp.
type PutReply struct {
	Timestamp uint64
	Result    int
}

// StateTarget is a stable checkpoint whose state the replica must fetch.
// The host checks the fetched state against Digest before it installs it,
// so a peer that serves another state is caught (G3).
type StateTarget struct {
	Seq    SeqNum
	Digest Digest
	// Cert proves Digest with 2f+1 signed checkpoints.
	Cert *bftpb.CheckpointCert
}
