package bft

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Signatures and MACs never cover raw protobuf bytes. Each covers canonical
// bytes that start with a domain tag, the cluster id and the group, then the
// message kind and its fields in a fixed binary layout (big-endian integers,
// length-prefixed byte strings). A signature of one kind, cluster or group
// therefore means nothing as another.
//
// Each part of that matters. A PREPARE and a COMMIT carry the same fields
// (v, s, d, i): without the kind byte a replica's PREPARE would verify as
// its COMMIT, and 2f+1 PREPAREs would pass for a commit certificate. The
// cluster id and group keep a certificate made in one group from counting
// in another group of the cluster, whose replicas have the same message
// formats. Length prefixes keep variable fields from running into each
// other, so two different messages never have the same bytes. And raw
// protobuf bytes are not canonical (field order, unknown fields, default
// values), so what a signature covers would depend on the encoder.

// Message kinds inside the canonical bytes.
const (
	kindPrePrepare byte = 1
	kindPrepare    byte = 2
	kindCommit     byte = 3
	kindCheckpoint byte = 4
	kindViewChange byte = 5
	kindNewView    byte = 6
)

const (
	tagProtocol = "AUGUSTUS-BFT-v1\x00"
	tagRequest  = "AUGUSTUS-REQ-v1\x00"
	tagReply    = "AUGUSTUS-RPL-v1\x00"
	tagBatch    = "AUGUSTUS-BAT-v1\x00"
)

// Domain builds the canonical bytes for one cluster and group. Protocol
// messages, client requests and replies start with different tags, so
// bytes signed as one can never be taken for another.
type Domain struct {
	protocol []byte // tagProtocol | cluster | group
	request  []byte
	reply    []byte
}

// NewDomain returns the signing domain of a group of a cluster. Each prefix
// is tag | len(cluster id) | cluster id | group.
func NewDomain(clusterID string, group GroupID) Domain {
	mk := func(tag string) []byte {
		b := append([]byte(tag), 0, 0, 0, 0)
		binary.BigEndian.PutUint32(b[len(tag):], uint32(len(clusterID)))
		b = append(b, clusterID...)
		return binary.BigEndian.AppendUint32(b, uint32(group))
	}
	return Domain{protocol: mk(tagProtocol), request: mk(tagRequest), reply: mk(tagReply)}
}

// appendBytes appends v with a 4-byte big-endian length prefix.
func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// header starts the canonical bytes of a protocol message of kind: the
// protocol prefix and the kind.
func (d *Domain) header(kind byte, capacity int) []byte {
	b := make([]byte, 0, len(d.protocol)+1+capacity)
	b = append(b, d.protocol...)
	return append(b, kind)
}

// phaseBytes covers PRE-PREPARE, PREPARE and COMMIT: (view, seq, digest, replica).
// The replica is covered too, so a vote cannot be claimed for another
// sender.
func (d *Domain) phaseBytes(kind byte, view, seq uint64, digest []byte, replica uint32) []byte {
	b := d.header(kind, 8+8+4+len(digest)+4)
	b = binary.BigEndian.AppendUint64(b, view)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = appendBytes(b, digest)
	return binary.BigEndian.AppendUint32(b, replica)
}

// PrePrepareBytes returns what a PRE-PREPARE's signature covers (not the body).
// The body is bound through the digest, which every receiver checks
// against it (Checker.Batch); so the same signed header can travel with or
// without the body, in certificates and NEW-VIEWs.
func (d *Domain) PrePrepareBytes(m *bftpb.PrePrepare) []byte {
	return d.phaseBytes(kindPrePrepare, m.View, m.Seq, m.Digest, m.Replica)
}

// PrepareBytes returns what a PREPARE's signature covers.
func (d *Domain) PrepareBytes(m *bftpb.Prepare) []byte {
	return d.phaseBytes(kindPrepare, m.View, m.Seq, m.Digest, m.Replica)
}

// CommitBytes returns what a COMMIT's signature covers.
func (d *Domain) CommitBytes(m *bftpb.Commit) []byte {
	return d.phaseBytes(kindCommit, m.View, m.Seq, m.Digest, m.Replica)
}

// CheckpointBytes returns what a CHECKPOINT's signature covers.
func (d *Domain) CheckpointBytes(m *bftpb.Checkpoint) []byte {
	b := d.header(kindCheckpoint, 8+4+len(m.StateDigest)+4)
	b = binary.BigEndian.AppendUint64(b, m.Seq)
	b = appendBytes(b, m.StateDigest)
	return binary.BigEndian.AppendUint32(b, m.Replica)
}

// ViewChangeBytes returns what a VIEW-CHANGE's signature covers: the new
// view, the sender, its stable checkpoint and, for each prepared certificate,
// (seq, view, digest). The certificates' own signatures prove themselves.
// Covering the list binds the set of certificates to the sender: a relay
// cannot drop one, which could hide a committed batch from V4. The
// checkpoint certificate's signatures are not covered: any valid
// certificate for (s_c, digest) proves the same.
func (d *Domain) ViewChangeBytes(m *bftpb.ViewChange) []byte {
	b := d.header(kindViewChange, 8+4+8+36+4+len(m.Prepared)*52)
	b = binary.BigEndian.AppendUint64(b, m.View)
	b = binary.BigEndian.AppendUint32(b, m.Replica)
	b = binary.BigEndian.AppendUint64(b, m.StableSeq)
	b = appendBytes(b, m.StableDigest)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.Prepared)))
	for _, p := range m.Prepared {
		pp := p.GetPrePrepare()
		b = binary.BigEndian.AppendUint64(b, pp.GetSeq())
		b = binary.BigEndian.AppendUint64(b, pp.GetView())
		b = appendBytes(b, pp.GetDigest())
	}
	return b
}

// NewViewBytes returns what a NEW-VIEW's signature covers: the view, the
// sender, a digest of each VIEW-CHANGE's signed bytes and the (seq, digest)
// of each PRE-PREPARE in O. The hashes bind V without repeating it. The
// view of O's PRE-PREPAREs is not covered here: each is signed on its own
// and must be of the NEW-VIEW's view (Checker.newView).
func (d *Domain) NewViewBytes(m *bftpb.NewView) []byte {
	b := d.header(kindNewView, 8+4+4+len(m.ViewChanges)*36+4+len(m.PrePrepares)*44)
	b = binary.BigEndian.AppendUint64(b, m.View)
	b = binary.BigEndian.AppendUint32(b, m.Replica)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.ViewChanges)))
	for _, vc := range m.ViewChanges {
		b = binary.BigEndian.AppendUint32(b, vc.GetReplica())
		h := sha256.Sum256(d.ViewChangeBytes(vc))
		b = append(b, h[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.PrePrepares)))
	for _, pp := range m.PrePrepares {
		b = binary.BigEndian.AppendUint64(b, pp.GetSeq())
		b = appendBytes(b, pp.GetDigest())
	}
	return b
}

// RequestBytes returns what a client's signature of a request covers: the
// client, timestamp, low watermark and the SHA-256 of the payload. The low
// watermark is covered, so nobody but the client can raise it and make its
// pending requests stale (C2); the payload enters by its hash, so the signed
// bytes are small whatever its size.
func (d *Domain) RequestBytes(r *bftpb.Request) []byte {
	b := make([]byte, 0, len(d.request)+4+len(r.Client)+8+8+32)
	b = append(b, d.request...)
	b = appendBytes(b, r.Client)
	b = binary.BigEndian.AppendUint64(b, r.Timestamp)
	b = binary.BigEndian.AppendUint64(b, r.Low)
	h := sha256.Sum256(r.Payload)
	return append(b, h[:]...)
}

// RequestDigest identifies a request: it covers the signed bytes and the
// signature, so two requests with the same digest are byte-identical in
// everything that is executed.
func (d *Domain) RequestDigest(r *bftpb.Request) Digest {
	b := appendBytes(d.RequestBytes(r), r.Signature)
	return sha256.Sum256(b)
}

// BatchDigest is the digest of a batch: SHA-256 over the request digests.
// The empty (null) batch has a digest too (V4). It covers the number and
// the order of the requests: the same requests in another order are another
// batch, since the order of execution is part of what replicas agree on.
func (d *Domain) BatchDigest(batch *bftpb.Batch) Digest {
	reqs := batch.GetRequests()
	b := make([]byte, 0, len(tagBatch)+4+32*len(reqs))
	b = append(b, tagBatch...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(reqs)))
	for _, r := range reqs {
		rd := d.RequestDigest(r)
		b = append(b, rd[:]...)
	}
	return sha256.Sum256(b)
}

// batchDigestFromRequestDigests computes BatchDigest from precomputed
// request digests. The primary uses it when it cuts a batch, with digests
// computed once per request on arrival (onRequest), so proposing never
// hashes payloads again.
func batchDigestFromRequestDigests(ds []Digest) Digest {
	b := make([]byte, 0, len(tagBatch)+4+32*len(ds))
	b = append(b, tagBatch...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ds)))
	for i := range ds {
		b = append(b, ds[i][:]...)
	}
	return sha256.Sum256(b)
}

// ReplyBytes returns what a reply's MAC covers (the pairwise key of replica
// and client, DESIGN.md §3). The status and low are covered, so a STALE
// answer cannot be turned into OK or the reverse, and so are, by hash, the
// result and the signatures the runtime adds to results other groups must
// verify.
func (d *Domain) ReplyBytes(r *bftpb.Reply) []byte {
	b := make([]byte, 0, len(d.reply)+8+4+len(r.Client)+8+4+4+32+8+32)
	b = append(b, d.reply...)
	b = binary.BigEndian.AppendUint64(b, r.View)
	b = appendBytes(b, r.Client)
	b = binary.BigEndian.AppendUint64(b, r.Timestamp)
	b = binary.BigEndian.AppendUint32(b, r.Replica)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Status))
	h := sha256.Sum256(r.Result)
	b = append(b, h[:]...)
	b = binary.BigEndian.AppendUint64(b, r.Low)
	h = sha256.Sum256(r.Signatures)
	return append(b, h[:]...)
}
