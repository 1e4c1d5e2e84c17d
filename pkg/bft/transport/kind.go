package transport

import "github.com/augustus-db/augustus/pkg/bft/bftpb"

// Kind is the kind of a message on the wire. It is the bounded value of the
// "kind" label of the traffic metrics and what an Interceptor sees.
//
// The label values are one vocabulary with the augustus_bft_* metrics: a
// replica message's kind is bftpb.KindName of its body ("pre-prepare",
// "view-change", "forward", ...), and the client stream's kinds are named in
// the same style. "request" means one thing in every metric: a client's
// signed request (on a client stream here; rejected by verification in
// augustus_bft_rejected_messages_total). A request a replica forwards to
// another is "forward", and the transport's own handshake message on a
// client stream is "bind".
type Kind uint8

// The kinds of bftpb.Message bodies, then those of the client and
// state-transfer streams.
const (
	KindUnknown Kind = iota
	// KindForward is a client request one replica forwards to another
	// (a bftpb.Message with a Request body).
	KindForward
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
	// KindClientRequest is a client's signed bftpb.Request on a client
	// stream (label "request").
	KindClientRequest
	// KindBind is the proof of a client's key that binds a client stream to
	// its client id (label "bind"; see BindSignBytes).
	KindBind
	// KindReply is a bftpb.Reply on a client stream.
	KindReply
	// KindStateChunk is a StateChunk of a FetchState stream.
	KindStateChunk

	numKinds
)

// kindNames are the label values. Those of replica messages are taken from
// bftpb.KindName, the reference, so the two vocabularies cannot drift.
var kindNames = [numKinds]string{
	KindUnknown:        "unknown",
	KindForward:        bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Request{}}),
	KindPrePrepare:     bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_PrePrepare{}}),
	KindPrepare:        bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Prepare{}}),
	KindCommit:         bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Commit{}}),
	KindCheckpoint:     bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Checkpoint{}}),
	KindViewChange:     bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_ViewChange{}}),
	KindNewView:        bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_NewView{}}),
	KindStatus:         bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Status{}}),
	KindFetch:          bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_Fetch{}}),
	KindCommittedBatch: bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_CommittedBatch{}}),
	KindBatchBody:      bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_BatchBody{}}),
	KindCheckpointCert: bftpb.KindName(&bftpb.Message{Body: &bftpb.Message_CheckpointCert{}}),
	KindClientRequest:  "request",
	KindBind:           "bind",
	KindReply:          "reply",
	KindStateChunk:     "state-chunk",
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
		return KindForward
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
