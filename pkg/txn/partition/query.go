package partition

import (
	"fmt"
	"math"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
)

// query answers a watermark query (W3) for the calling client: its watermark
// and abort mark here, and its records from nonce from on, with the encoding
// of every one it still has to finish (pending, queued, or a commit-voted
// multi-group update without its termination proof, K3, K4). It uses no
// nonce, so a client that restarts can learn where it stands. The reply is
// bounded by Limits.MaxResultBytes; More and Next page through the rest.
func (e *Engine) query(r reader, client bft.ClientID, from uint64) ([]byte, error) {
	s, err := e.ownerState(r, client)
	if err != nil {
		return nil, err
	}
	q := &txn.QueryResult{Group: e.self, Watermark: s.w, HasMark: s.hasMark, Mark: s.mark}
	if len(client) != txn.OwnerSize {
		return (&txn.Result{Kind: txn.ResultQuery, Query: q}).Encode(), nil
	}
	from = max(from, s.w)
	type entry struct {
		nonce uint64
		id    txn.TxnID
	}
	var entries []entry
	end := nonceKey(client, math.MaxUint64)
	err = r.Scan(storage.TxnRecords, nonceKey(client, from), end, 0, func(k, v []byte) error {
		if len(v) != 32 || len(k) != 1+txn.OwnerSize+8 {
			return fmt.Errorf("%w: nonce index entry", errCorrupt)
		}
		entries = append(entries, entry{nonce: beUint64(k[1+txn.OwnerSize:]), id: txn.TxnID(v)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("partition: query: %w", err)
	}
	// The last nonce (MaxUint64) lies outside the scan's exclusive end.
	if v, ok, err := get(r, storage.TxnRecords, end); err != nil {
		return nil, err
	} else if ok && len(v) == 32 {
		entries = append(entries, entry{nonce: math.MaxUint64, id: txn.TxnID(v)})
	}
	size := 64
	for _, en := range entries {
		rec, err := e.loadRecord(r, en.id)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, fmt.Errorf("%w: nonce index names %s without a record", errCorrupt, en.id)
		}
		qr := txn.QueryRecord{Nonce: en.nonce, ID: en.id, State: rec.state, Vote: rec.vote, Outcome: rec.outcome,
			Unproven: rec.multi && rec.update && rec.vote == txn.Commit && !rec.proven}
		if rec.state == txn.StateTerminated && qr.Outcome == 0 {
			qr.Outcome = rec.vote
		}
		if rec.blocksWatermark() {
			n := rec.named()
			qr.Txn = &n
		}
		n := len(txn.AppendQueryRecord(nil, &qr))
		if size+n > e.limits.MaxResultBytes && len(q.Records) > 0 {
			q.More, q.Next = true, en.nonce
			break
		}
		size += n
		q.Records = append(q.Records, qr)
	}
	return (&txn.Result{Kind: txn.ResultQuery, Query: q}).Encode(), nil
}
