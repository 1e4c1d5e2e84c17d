package txn

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

// The canonical encoding of a transaction (T2). Protobuf's deterministic
// marshaling is not canonical across versions, so the layout is ours and
// fixed:
//
//	txn    := format(1 byte, = 1) owner(32 bytes) uvarint(nonce) uvarint(watermark)
//	          uvarint(#groups ≥ 1) { uvarint(group) uvarint(version) }   groups strictly increasing
//	          uvarint(#ops ≥ 1) { op }
//	op     := kind(1 byte) flags(1 byte) bytes(key)
//	          [bytes(value)]   cmp without absent, insert, write
//	          [bytes(end)]     a range with flagBounded; end sorts after key
//	          [uvarint(limit ≥ 1)]   read-range, cmp-range
//	          [uvarint(#digests ≥ 1) { uvarint(group) digest(32 bytes) }]   cmp-range, groups strictly increasing
//	flags  := bit 0 meta, bit 1 absent (cmp only), bit 2 bounded (ranges only)
//	bytes  := uvarint(length) and the bytes
//
// Varints are minimal; point keys are non-empty; no trailing bytes. The
// decoder accepts exactly the byte strings Encode produces, so
// Decode(Encode(t)) equals t and Encode(Decode(b)) equals b for every b it
// accepts; two encodings of one transaction are therefore byte-identical,
// and a transaction re-sent for recovery (K4) has the same id.

const (
	txnFormat = 1

	flagMeta    = 1 << 0
	flagAbsent  = 1 << 1
	flagBounded = 1 << 2
	flagsKnown  = flagMeta | flagAbsent | flagBounded
)

// Hard bounds of the decoder, independent of Limits: they only keep a
// malformed input from making the decoder allocate. Limits (checked by
// Validate) are far tighter.
const (
	maxDecodeGroups = 1 << 16
	maxDecodeOps    = 1 << 20
)

// Encode returns the canonical encoding of t. It does not check t: encode
// only transactions that Check accepts (the Builder does).
func (t *Txn) Encode() []byte { return t.AppendEncode(make([]byte, 0, t.encodedSize())) }

func (t *Txn) encodedSize() int {
	n := 1 + OwnerSize + 2*binary.MaxVarintLen64 + binary.MaxVarintLen32 + len(t.Groups)*(2*binary.MaxVarintLen64)
	n += binary.MaxVarintLen32
	for i := range t.Ops {
		op := &t.Ops[i]
		n += 2 + 3*binary.MaxVarintLen32 + len(op.Key) + len(op.Value) + len(op.End) + binary.MaxVarintLen32
		n += len(op.Digests) * (binary.MaxVarintLen32 + 32)
	}
	return n
}

// AppendEncode appends the canonical encoding of t to b.
func (t *Txn) AppendEncode(b []byte) []byte {
	b = append(b, txnFormat)
	var owner [OwnerSize]byte
	copy(owner[:], t.Owner)
	b = append(b, owner[:]...)
	b = wire.AppendUvarint(b, t.Nonce)
	b = wire.AppendUvarint(b, t.Watermark)
	b = wire.AppendUvarint(b, uint64(len(t.Groups)))
	for _, gv := range t.Groups {
		b = wire.AppendUvarint(b, uint64(gv.Group))
		b = wire.AppendUvarint(b, gv.Version)
	}
	b = wire.AppendUvarint(b, uint64(len(t.Ops)))
	for i := range t.Ops {
		b = appendOp(b, &t.Ops[i])
	}
	return b
}

func appendOp(b []byte, op *Op) []byte {
	var flags byte
	if op.Meta {
		flags |= flagMeta
	}
	if op.Kind == OpCmp && op.Absent {
		flags |= flagAbsent
	}
	if op.Kind.IsRange() && op.End != nil {
		flags |= flagBounded
	}
	b = append(b, byte(op.Kind), flags)
	b = wire.AppendBytes(b, op.Key)
	if op.Kind.hasValue() && flags&flagAbsent == 0 {
		b = wire.AppendBytes(b, op.Value)
	}
	if flags&flagBounded != 0 {
		b = wire.AppendBytes(b, op.End)
	}
	if op.Kind.IsRange() {
		b = wire.AppendUvarint(b, uint64(op.Limit))
	}
	if op.Kind == OpCmpRange {
		b = wire.AppendUvarint(b, uint64(len(op.Digests)))
		for _, d := range op.Digests {
			b = wire.AppendUvarint(b, uint64(d.Group))
			b = append(b, d.Digest[:]...)
		}
	}
	return b
}

// Decode decodes a canonical transaction encoding strictly (see Encode).
// The returned transaction's byte strings alias b.
func Decode(b []byte) (*Txn, error) {
	r := wire.NewReader(b)
	t := decodeTxn(r)
	if err := r.Done("transaction"); err != nil {
		return nil, err
	}
	return t, nil
}

func decodeTxn(r *wire.Reader) *Txn {
	if f := r.Byte("format"); r.Err() == nil && f != txnFormat {
		r.Failf("transaction format %d, this build reads %d", f, txnFormat)
		return nil
	}
	t := &Txn{}
	t.Owner = bft.ClientID(r.Fixed("owner", OwnerSize))
	t.Nonce = r.Uvarint("nonce")
	t.Watermark = r.Uvarint("watermark")
	ng := r.Count("groups", 2, maxDecodeGroups)
	if r.Err() == nil && ng == 0 {
		r.Failf("no groups")
	}
	t.Groups = make([]GroupVersion, ng)
	for i := range t.Groups {
		t.Groups[i].Group = bft.GroupID(r.Uvarint32("group"))
		t.Groups[i].Version = r.Uvarint("version")
		if i > 0 && r.Err() == nil && t.Groups[i].Group <= t.Groups[i-1].Group {
			r.Failf("groups not strictly increasing at %d", i)
		}
	}
	nops := r.Count("operations", 3, maxDecodeOps)
	if r.Err() == nil && nops == 0 {
		r.Failf("no operations")
	}
	t.Ops = make([]Op, nops)
	for i := range t.Ops {
		decodeOp(r, &t.Ops[i], i)
		if r.Err() != nil {
			return nil
		}
	}
	if r.Err() != nil {
		return nil
	}
	return t
}

func decodeOp(r *wire.Reader, op *Op, i int) {
	op.Kind = OpKind(r.Byte("operation kind"))
	flags := r.Byte("operation flags")
	if r.Err() != nil {
		return
	}
	if !op.Kind.valid() {
		r.Failf("operation %d: unknown kind %d", i, op.Kind)
		return
	}
	switch {
	case flags&^flagsKnown != 0:
		r.Failf("operation %d: unknown flags %#x", i, flags)
		return
	case flags&flagAbsent != 0 && op.Kind != OpCmp:
		r.Failf("operation %d: %s cannot be absent", i, op.Kind)
		return
	case flags&flagBounded != 0 && !op.Kind.IsRange():
		r.Failf("operation %d: %s has no range end", i, op.Kind)
		return
	}
	op.Meta = flags&flagMeta != 0
	op.Absent = flags&flagAbsent != 0
	op.Key = r.Bytes("key", 0)
	if r.Err() == nil && len(op.Key) == 0 && !op.Kind.IsRange() {
		r.Failf("operation %d: empty key", i)
		return
	}
	if op.Kind.hasValue() && !op.Absent {
		op.Value = r.Bytes("value", 0)
	}
	if flags&flagBounded != 0 {
		op.End = r.Bytes("range end", 0)
		if r.Err() == nil && bytes.Compare(op.End, op.Key) <= 0 {
			r.Failf("operation %d: range end does not sort after its start", i)
			return
		}
	}
	if op.Kind.IsRange() {
		op.Limit = r.Uvarint32("limit")
		if r.Err() == nil && op.Limit == 0 {
			r.Failf("operation %d: zero limit", i)
			return
		}
	}
	if op.Kind == OpCmpRange {
		n := r.Count("digests", 33, maxDecodeGroups)
		if r.Err() == nil && n == 0 {
			r.Failf("operation %d: cmp-range without digests", i)
			return
		}
		op.Digests = make([]GroupDigest, n)
		for j := range op.Digests {
			op.Digests[j].Group = bft.GroupID(r.Uvarint32("digest group"))
			copy(op.Digests[j].Digest[:], r.Fixed("digest", 32))
			if j > 0 && r.Err() == nil && op.Digests[j].Group <= op.Digests[j-1].Group {
				r.Failf("operation %d: digest groups not strictly increasing", i)
				return
			}
		}
	}
}

// Domain tag of transaction ids (T2).
const tagTxnID = "AUGUSTUS-TXN-ID-v1\x00"

// ID returns the id of the transaction whose canonical encoding is enc in
// cluster clusterID: SHA-256(tag ‖ len(cluster id) ‖ cluster id ‖ "txn" ‖
// enc).
func ID(clusterID string, enc []byte) TxnID {
	h := sha256.New()
	var hdr [4]byte
	h.Write([]byte(tagTxnID))
	binary.BigEndian.PutUint32(hdr[:], uint32(len(clusterID)))
	h.Write(hdr[:])
	h.Write([]byte(clusterID))
	h.Write([]byte("txn"))
	h.Write(enc)
	var id TxnID
	h.Sum(id[:0])
	return id
}

// ID returns the transaction's id in cluster clusterID (it encodes t).
func (t *Txn) ID(clusterID string) TxnID { return ID(clusterID, t.Encode()) }
