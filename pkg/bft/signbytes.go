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

// Domain builds the canonical bytes for one cluster and group.
type Domain struct {
	protocol []byte // tagProtocol | cluster | group
	request  []byte
	reply    []byte
}

// NewDomain returns the signing domain of a group of a cluster.
func NewDomain(clusterID string, group GroupID) Domain {
	mk := func(tag string) []byte {
		b := append([]byte(tag), 0, 0, 0, 0)
		binary.BigEndian.PutUint32(b[len(tag):], uint32(len(clusterID)))
		b = append(b, clusterID...)
		return binary.BigEndian.AppendUint32(b, uint32(group))
	}
	return Domain{protocol: mk(tagProtocol), request: mk(tagRequest), reply: mk(tagReply)}
}

func appendBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func (d *Domain) header(kind byte, capacity int) []byte {
	b := make([]byte, 0, len(d.protocol)+1+capacity)
	b = append(b, d.protocol...)
	return append(b, kind)
}

// phaseBytes covers PRE-PREPARE, PREPARE and COMMIT: (view, seq, digest, replica).
func (d *Domain) phaseBytes(kind byte, view, seq uint64, digest []byte, replica uint32) []byte {
	b := d.header(kind, 8+8+4+len(digest)+4)
	b = binary.BigEndian.AppendUint64(b, view)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = appendBytes(b, digest)
	return binary.BigEndian.AppendUint32(b, replica)
}

// PrePrepareBytes returns what a PRE-PREPARE's signature covers (not the body).
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
// of each PRE-PREPARE in O.
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
// client, timestamp, low watermark and the SHA-256 of the payload.
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
// The empty (null) batch has a digest too (V4).
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
// request digests.
func batchDigestFromRequestDigests(ds []Digest) Digest {
	b := make([]byte, 0, len(tagBatch)+4+32*len(ds))
	b = append(b, tagBatch...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ds)))
	for i := range ds {
		b = append(b, ds[i][:]...)
	}
	return sha256.Sum256(b)
}

// ReplyBytes returns what a reply's MAC covers.
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
