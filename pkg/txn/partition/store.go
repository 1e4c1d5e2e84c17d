package partition

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
	"github.com/augustus-db/augustus/pkg/txn/lockmgr"
)

// The transaction keyspace (storage.TxnRecords; replicated, digested and
// moved by state transfer, E11):
//
//	'r' id(32)              → record
//	'v' id(32)              → empty        the owner's termination proof arrived (W2)
//	'n' owner(32) nonce(8)  → id(32)       the owner's nonce index (E2, W1, W3)
//	'o' owner(32)           → owner state  watermark w and abort mark b (W1, E2)
//	'p' order(8)            → id(32)       pending and queued records in delivery order (E3, E11)
//	'c'                     → order(8)     the next delivery order
//
// User data lives in storage.UserData under the transaction's keys;
// metadata in storage.Metadata, with the version and the partition map under
// txn.MetaVersionKey and txn.MetaPartitionsKey.
const (
	prefixRecord  = 'r'
	prefixNonce   = 'n'
	prefixOwner   = 'o'
	prefixPending = 'p'
	prefixProven  = 'v'
)

var keyOrder = []byte{'c'}

func recordKey(id txn.TxnID) []byte {
	return append([]byte{prefixRecord}, id[:]...)
}

// provenKey marks a terminated multi-group update whose termination proof
// arrived (W2). A proof writes this small key instead of rewriting the
// record: the record, with the transaction and its reads, is the largest
// value of the keyspace, and every byte written there is digested (LtHash)
// and compacted again; the marker is deleted with the record.
func provenKey(id txn.TxnID) []byte {
	return append([]byte{prefixProven}, id[:]...)
}

func nonceKey(owner bft.ClientID, nonce uint64) []byte {
	b := make([]byte, 0, 1+txn.OwnerSize+8)
	b = append(b, prefixNonce)
	b = append(b, owner...)
	return binary.BigEndian.AppendUint64(b, nonce)
}

func ownerKey(owner bft.ClientID) []byte { return append([]byte{prefixOwner}, owner...) }

func pendingKey(order uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixPending}, order)
}

// reader is what Execute (an indexed storage.Batch) and Restored (the
// engine) both offer.
type reader interface {
	Get(ks storage.Keyspace, key []byte) ([]byte, error)
	Scan(ks storage.Keyspace, start, end []byte, limit int, fn func(key, value []byte) error) error
}

// get returns the value of key, or nil and false if it is absent.
func get(r reader, ks storage.Keyspace, key []byte) ([]byte, bool, error) {
	v, err := r.Get(ks, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return v, true, nil
}

// ownerState is an owner's watermark w and abort mark b at this group.
type ownerState struct {
	w       uint64
	hasMark bool
	mark    uint64
}

func (s ownerState) encode() []byte {
	b := wire.AppendUvarint(nil, s.w)
	b = wire.AppendBool(b, s.hasMark)
	if s.hasMark {
		b = wire.AppendUvarint(b, s.mark)
	}
	return b
}

func decodeOwnerState(b []byte) (ownerState, error) {
	r := wire.NewReader(b)
	s := ownerState{w: r.Uvarint("watermark")}
	if s.hasMark = r.Bool("has mark"); s.hasMark {
		s.mark = r.Uvarint("mark")
	}
	return s, r.Done("owner state")
}

// update is one buffered update (E5, E6).
type update struct {
	meta   bool
	delete bool
	key    []byte
	value  []byte
}

func (u *update) keyspace() storage.Keyspace {
	if u.meta {
		return storage.Metadata
	}
	return storage.UserData
}

// record is a transaction's record (E6, E11). A pending record holds its
// locks, buffered updates and vote; a queued one the locks it waits for; a
// terminated one its vote and outcome.
type record struct {
	state txn.RecordState
	// multi, update and meta classify the transaction (signing, W2, M4).
	multi, update, meta bool
	owner               bft.ClientID
	nonce               uint64
	// order is the delivery order (E3): pending conflicts are named by it,
	// and the lock table is rebuilt in it.
	order uint64
	txn   []byte
	admin *txn.AdminSig
	// vote is zero while queued; body is the vote's reason and reads,
	// returned verbatim on re-delivery (E1).
	vote txn.Decision
	body []byte
	// outcome and proven describe a terminated record (E10, W2). proven
	// is the record's flag (records of earlier builds) or the marker under
	// provenKey, which loadRecord reads.
	outcome txn.Decision
	proven  bool
	locks   []lock
	updates []update
}

// blocksWatermark reports whether the owner's watermark must stay at or
// below this record (W1, W2): it is pending or queued, or it is a
// commit-voted multi-group update whose termination proof has not arrived.
func (r *record) blocksWatermark() bool {
	switch r.state {
	case txn.StatePending, txn.StateQueued:
		return true
	}
	return r.needsProof() && !r.proven
}

// needsProof reports whether the record waits for its owner's termination
// proof before the watermark may pass it (W2): a multi-group update on which
// this group voted commit.
func (r *record) needsProof() bool { return r.multi && r.update && r.vote == txn.Commit }

// mayBeMarked reports whether the record's proof may be the mark under
// provenKey: it needs a proof, is terminated, and does not carry the flag.
func (r *record) mayBeMarked() bool {
	return !r.proven && r.needsProof() && r.state == txn.StateTerminated
}

// named returns the record as a transaction to recover (E3, M4).
func (r *record) named() txn.Named { return txn.Named{Txn: r.txn, Admin: r.admin} }

const recordFormat = 1

func (r *record) encode() []byte {
	n := 64 + len(r.txn) + len(r.body)
	for _, l := range r.locks {
		n += 12 + len(l.Start) + len(l.End)
	}
	for _, u := range r.updates {
		n += 12 + len(u.key) + len(u.value)
	}
	b := make([]byte, 0, n)
	b = append(b, recordFormat, byte(r.state))
	var flags byte
	if r.multi {
		flags |= 1
	}
	if r.update {
		flags |= 2
	}
	if r.meta {
		flags |= 4
	}
	if r.proven {
		flags |= 8
	}
	b = append(b, flags, byte(r.vote), byte(r.outcome))
	b = append(b, r.owner...)
	b = wire.AppendUvarint(b, r.nonce)
	b = wire.AppendUvarint(b, r.order)
	b = wire.AppendBytes(b, r.txn)
	if r.admin == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = append(b, r.admin.Key[:]...)
		b = append(b, r.admin.Sig[:]...)
	}
	b = wire.AppendBytes(b, r.body)
	// The certificate's place: always empty now. A certificate is verified
	// (Validate) and consumed when its outcome applies; the record keeps
	// the outcome, and nothing ever read the certificate back, while it
	// was most of a terminated record's bytes (docs/txn.md, E11).
	b = wire.AppendBytes(b, nil)
	b = wire.AppendUvarint(b, uint64(len(r.locks)))
	for _, l := range r.locks {
		b = append(b, byte(l.Mode))
		b = wire.AppendBytes(b, l.Start)
		b = wire.AppendBool(b, l.End != nil)
		if l.End != nil {
			b = wire.AppendBytes(b, l.End)
		}
	}
	b = wire.AppendUvarint(b, uint64(len(r.updates)))
	for _, u := range r.updates {
		var f byte
		if u.meta {
			f |= 1
		}
		if u.delete {
			f |= 2
		}
		b = append(b, f)
		b = wire.AppendBytes(b, u.key)
		if !u.delete {
			b = wire.AppendBytes(b, u.value)
		}
	}
	return b
}

// errCorrupt marks a record this engine did not write: a local fault (the
// store is replicated state every correct replica wrote the same way).
var errCorrupt = errors.New("partition: corrupt transaction record")

func decodeRecord(b []byte) (*record, error) {
	rd := wire.NewReader(b)
	if f := rd.Byte("format"); rd.Err() == nil && f != recordFormat {
		return nil, fmt.Errorf("%w: format %d", errCorrupt, f)
	}
	r := &record{state: txn.RecordState(rd.Byte("state"))}
	flags := rd.Byte("flags")
	r.multi, r.update, r.meta, r.proven = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0
	r.vote = txn.Decision(rd.Byte("vote"))
	r.outcome = txn.Decision(rd.Byte("outcome"))
	r.owner = bft.ClientID(rd.Fixed("owner", txn.OwnerSize))
	r.nonce = rd.Uvarint("nonce")
	r.order = rd.Uvarint("order")
	r.txn = rd.Bytes("txn", 0)
	if rd.Bool("admin") {
		r.admin = &txn.AdminSig{}
		copy(r.admin.Key[:], rd.Fixed("admin key", txn.OwnerSize))
		copy(r.admin.Sig[:], rd.Fixed("admin sig", txn.SignatureSize))
	}
	r.body = rd.Bytes("body", 0)
	_ = rd.Bytes("cert", 0) // written by earlier builds; not used
	nl := rd.Count("locks", 3, 0)
	if nl > 0 {
		r.locks = make([]lock, nl)
	}
	for i := range r.locks {
		r.locks[i].Mode = lockmgr.Mode(rd.Byte("mode"))
		r.locks[i].Start = rd.Bytes("start", 0)
		if rd.Bool("bounded") {
			r.locks[i].End = rd.Bytes("end", 0)
		}
	}
	nu := rd.Count("updates", 2, 0)
	if nu > 0 {
		r.updates = make([]update, nu)
	}
	for i := range r.updates {
		f := rd.Byte("update flags")
		u := &r.updates[i]
		u.meta, u.delete = f&1 != 0, f&2 != 0
		u.key = rd.Bytes("key", 0)
		if !u.delete {
			u.value = rd.Bytes("value", 0)
		}
	}
	if err := rd.Done("record"); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	return r, nil
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
