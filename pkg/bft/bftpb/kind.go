package bftpb

// KindName names the body of a replica message, as logs, metric labels and
// the scenario scripts of pkg/bft/bfttest write it: "pre-prepare",
// "view-change", ...; a Request inside a Message is a request a replica
// forwards, "forward". (Hand-written; not generated.)
func KindName(m *Message) string {
	switch m.GetBody().(type) {
	case *Message_Request:
		return "forward"
	case *Message_PrePrepare:
		return "pre-prepare"
	case *Message_Prepare:
		return "prepare"
	case *Message_Commit:
		return "commit"
	case *Message_Checkpoint:
		return "checkpoint"
	case *Message_ViewChange:
		return "view-change"
	case *Message_NewView:
		return "new-view"
	case *Message_Status:
		return "status"
	case *Message_Fetch:
		return "fetch"
	case *Message_CommittedBatch:
		return "committed-batch"
	case *Message_BatchBody:
		return "batch-body"
	case *Message_CheckpointCert:
		return "checkpoint-cert"
	}
	return "unknown"
}
