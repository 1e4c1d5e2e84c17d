package partition

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// RecordInfo is what a group's record says of one transaction: the facts
// the checkers of txn.md X2 and X3 compare across groups and replicas.
type RecordInfo struct {
	ID      txn.TxnID
	State   txn.RecordState
	Multi   bool
	Update  bool
	Meta    bool
	Owner   bft.ClientID
	Nonce   uint64
	Vote    txn.Decision
	Outcome txn.Decision // of a terminated record
	Proven  bool         // W2: the owner's termination proof arrived
	Txn     []byte       // the transaction's encoding
}

// Inspect reads every transaction record in a store (an engine, a
// snapshot): the simulator's and the process tests' window into what each
// replica decided. It reads; it changes nothing.
func Inspect(r host.Reader) ([]RecordInfo, error) {
	var out []RecordInfo
	var proofs []int // records whose proof mark to read once the scan is over
	err := r.Scan(storage.TxnRecords, []byte{prefixRecord}, []byte{prefixRecord + 1}, 0, func(k, v []byte) error {
		if len(k) != 1+len(txn.TxnID{}) {
			return fmt.Errorf("%w: record key of %d bytes", errCorrupt, len(k))
		}
		rec, err := decodeRecord(v)
		if err != nil {
			return err
		}
		info := RecordInfo{State: rec.state, Multi: rec.multi, Update: rec.update, Meta: rec.meta, Owner: rec.owner,
			Nonce: rec.nonce, Vote: rec.vote, Outcome: rec.outcome, Proven: rec.proven, Txn: rec.txn}
		copy(info.ID[:], k[1:])
		if rec.mayBeMarked() {
			proofs = append(proofs, len(out))
		}
		out = append(out, info)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("partition: inspect: %w", err)
	}
	// The marks are read after the scan, not inside its callback: a read
	// inside a scan would take the store's read lock twice.
	for _, i := range proofs {
		_, ok, err := get(r, storage.TxnRecords, provenKey(out[i].ID))
		if err != nil {
			return nil, fmt.Errorf("partition: inspect: proof mark of %s: %w", out[i].ID, err)
		}
		out[i].Proven = ok
	}
	return out, nil
}
