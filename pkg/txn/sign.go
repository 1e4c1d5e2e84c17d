package txn

import (
	"encoding/binary"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Signed byte strings. Each starts with its own domain tag and the cluster
// id, so a vote can never pass for an acknowledgement (E9), nor a signature
// of one cluster for one of another:
//
//	vote  := "AUGUSTUS-TXN-VOTE-v1\0" len(cluster)(4) cluster id(32) group(4) decision(1)
//	ack   := "AUGUSTUS-TXN-ACK-v1\0"  len(cluster)(4) cluster id(32) group(4) outcome(1)
//	admin := "AUGUSTUS-TXN-ADMIN-v1\0" len(cluster)(4) cluster id(32)
//
// Integers are big-endian. Replicas sign votes and acknowledgements with
// their Ed25519 replica keys; the runtime signs after execution, and the
// signatures never enter the replicated state (E1, E9). Admins sign the id of
// a metadata transaction (M5).
const (
	tagVote  = "AUGUSTUS-TXN-VOTE-v1\x00"
	tagAck   = "AUGUSTUS-TXN-ACK-v1\x00"
	tagAdmin = "AUGUSTUS-TXN-ADMIN-v1\x00"
)

// Domain builds the signed byte strings of one cluster. It is immutable and
// safe for concurrent use.
type Domain struct {
	clusterID string
	vote      []byte
	ack       []byte
	admin     []byte
}

// NewDomain returns the signing domain of a cluster.
func NewDomain(clusterID string) *Domain {
	mk := func(tag string) []byte {
		b := make([]byte, 0, len(tag)+4+len(clusterID))
		b = append(b, tag...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(clusterID)))
		return append(b, clusterID...)
	}
	return &Domain{clusterID: clusterID, vote: mk(tagVote), ack: mk(tagAck), admin: mk(tagAdmin)}
}

// ClusterID returns the domain's cluster id.
func (d *Domain) ClusterID() string { return d.clusterID }

// ID returns the id of a transaction encoding in this cluster.
func (d *Domain) ID(enc []byte) TxnID { return ID(d.clusterID, enc) }

func (d *Domain) decisionBytes(prefix []byte, id TxnID, g bft.GroupID, dec Decision) []byte {
	b := make([]byte, 0, len(prefix)+32+4+1)
	b = append(b, prefix...)
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(g))
	return append(b, byte(dec))
}

// VoteBytes returns the bytes a replica of group g signs for its vote dec on
// transaction id (E9).
func (d *Domain) VoteBytes(id TxnID, g bft.GroupID, dec Decision) []byte {
	return d.decisionBytes(d.vote, id, g, dec)
}

// AckBytes returns the bytes a replica of group g signs to acknowledge that
// transaction id terminated there with outcome dec (E10, W2).
func (d *Domain) AckBytes(id TxnID, g bft.GroupID, dec Decision) []byte {
	return d.decisionBytes(d.ack, id, g, dec)
}

// AdminBytes returns the bytes an admin signs to authorize metadata
// transaction id (M5).
func (d *Domain) AdminBytes(id TxnID) []byte {
	b := make([]byte, 0, len(d.admin)+32)
	b = append(b, d.admin...)
	return append(b, id[:]...)
}

// SignBytes returns what the replica runtime must sign for a result, or nil
// if the result needs no signature. It is a pure function of the result's
// bytes: signed votes and acknowledgements carry a flag and the fields their
// signed bytes cover (id, group, decision) at fixed offsets, so the runtime
// and the client (which verifies f+1 signatures over it, K2) agree without
// decoding the rest.
func (d *Domain) SignBytes(result []byte) []byte {
	if len(result) < resultHeaderSize || result[1]&resultFlagSigned == 0 {
		return nil
	}
	var prefix []byte
	switch ResultKind(result[0]) {
	case ResultVote:
		prefix = d.vote
	case ResultAck:
		prefix = d.ack
	default:
		return nil
	}
	dec := Decision(result[38])
	if !dec.valid() {
		return nil
	}
	var id TxnID
	copy(id[:], result[2:34])
	return d.decisionBytes(prefix, id, bft.GroupID(binary.BigEndian.Uint32(result[34:38])), dec)
}

// SignBytes is Domain.SignBytes for a cluster id (it builds the domain on
// each call; hold a Domain on hot paths).
func SignBytes(clusterID string, result []byte) []byte {
	return NewDomain(clusterID).SignBytes(result)
}
