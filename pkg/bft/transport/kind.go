package transport

import "github.com/augustus-db/augustus/pkg/bft/bftpb"

// Kind is the kind of a message on the wire. It is the bounded value of the
// "kind" label of the traffic metrics and what an Interceptor sees.
type Kind uint8

// The kinds of bftpb.Message bodies, then those of the client and
// state-transfer streams.
const (
	KindUnknown Kind = iota
	KindRequest
	KindPrePrepare
	KindPrepare
	KindCommit
	KindCheckpoint
	KindViewChange
	KindNewView
	KindStatus
	KindFetch
	KindCommittedBatch
	KindBatchBody
	KindCheckpointCert
	// KindClientRequest is a bftpb.Request on a client stream.
	KindClientRequest
	// KindReply is a bftpb.Reply on a client stream.
	KindReply
	// KindStateChunk is a StateChunk of a FetchState stream.
	KindStateChunk

	numKinds
)

var kindNames = [numKinds]string{
	KindUnknown:        "unknown",
	KindRequest:        "request",
	KindPrePrepare:     "pre_prepare",
	KindPrepare:        "prepare",
	KindCommit:         "commit",
	KindCheckpoint:     "checkpoint",
	KindViewChange:     "view_change",
	KindNewView:        "new_view",
	KindStatus:         "status",
	KindFetch:          "fetch",
	KindCommittedBatch: "committed_batch",
	KindBatchBody:      "batch_body",
	KindCheckpointCert: "checkpoint_cert",
	KindClientRequest:  "client_request",
	KindReply:          "reply",
	KindStateChunk:     "state_chunk",
}

// String returns the metric label of k.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return kindNames[KindUnknown]
}

// KindOf returns the kind of m's body; KindUnknown if it has none.
func KindOf(m *bftpb.Message) Kind {
	switch m.GetBody().(type) {
	case *bftpb.Message_Request:
		return KindRequest
	case *bftpb.Message_PrePrepare:
		return KindPrePrepare
	case *bftpb.Message_Prepare:
		return KindPrepare
	case *bftpb.Message_Commit:
		return KindCommit
	case *bftpb.Message_Checkpoint:
		return KindCheckpoint
	case *bftpb.Message_ViewChange:
		return KindViewChange
	case *bftpb.Message_NewView:
		return KindNewView
	case *bftpb.Message_Status:
		return KindStatus
	case *bftpb.Message_Fetch:
		return KindFetch
	case *bftpb.Message_CommittedBatch:
		return KindCommittedBatch
	case *bftpb.Message_BatchBody:
		return KindBatchBody
	case *bftpb.Message_CheckpointCert:
		return KindCheckpointCert
	default:
		return KindUnknown
	}
}
