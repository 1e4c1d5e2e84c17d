package session

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// commit ends the transaction (DESIGN.md §6): nothing to send if it wrote
// nothing and all its reads came from at most one short transaction;
// otherwise ONE short transaction carrying the guards of everything read and
// the writes. Whatever the outcome, the transaction is over.
func (t *Txn) commit(ctx context.Context) error {
	if t.state != txnActive {
		return nil
	}
	defer func() { t.state = txnDone }()
	writes, wops := t.writeOps()
	if len(wops) == 0 && t.readTxns <= 1 {
		return nil // a single read-only short transaction is serializable by itself
	}
	guards, err := t.guardOps()
	if err != nil {
		return err
	}
	ops := append(guards, wops...)
	if len(ops) == 0 {
		return nil
	}
	if err := t.checkSize(ops); err != nil {
		return err
	}
	if len(wops) == 0 {
		t.s.env.Stats.GuardTxns.Add(1)
	} else {
		t.s.env.Stats.CommitTxns.Add(1)
	}
	_, err = t.s.env.Store.Do(ctx, coord.Ops(ops), coord.Options{PinVersion: true, MetadataVersion: t.version})
	if err == nil {
		return nil
	}
	var ae *coord.AbortedError
	if errors.As(err, &ae) && (ae.Cause.Reason == txn.ReasonKeyExists || ae.Cause.Reason == txn.ReasonCompare) {
		// An insert that met an existing key, or the cmp-absent of a key
		// inserted and deleted again, is a duplicate (1062); a failed guard
		// is a serialization failure.
		if i := ae.Cause.Op - len(guards); i >= 0 && i < len(writes) && writes[i].dup != nil &&
			(ae.Cause.Reason == txn.ReasonKeyExists || writes[i].base == baseAssumedAbsent) {
			return DupEntry(writes[i].dup.Entry, writes[i].dup.Key)
		}
		t.s.env.Stats.Conflicts.Add(1)
		return Serialization("a value this transaction read has changed")
	}
	return t.mapErr(err)
}

// writeOps returns the operations of the buffered writes, in key order, and
// the write each belongs to.
func (t *Txn) writeOps() ([]*write, []txn.Op) {
	var ws []*write
	var ops []txn.Op
	for _, k := range t.wkeys {
		w := t.writes[k]
		key := []byte(k)
		var op txn.Op
		switch {
		case w.base == baseRead && w.baseVal.present || w.base == baseAssumedPresent:
			if !w.present {
				op = txn.Op{Kind: txn.OpDelete, Key: key}
			} else if w.base == baseRead && bytes.Equal(w.baseVal.value, w.value) {
				continue // unchanged
			} else {
				op = txn.Op{Kind: txn.OpWrite, Key: key, Value: nonNil(w.value)}
			}
		default: // known or assumed absent
			switch {
			case w.present:
				op = txn.Op{Kind: txn.OpInsert, Key: key, Value: nonNil(w.value)}
			case w.base == baseAssumedAbsent:
				// Inserted and deleted again: the insert still asserted the
				// key was new, and MySQL would have refused a duplicate.
				op = txn.Op{Kind: txn.OpCmp, Key: key, Absent: true}
			default:
				continue
			}
		}
		ws = append(ws, w)
		ops = append(ops, op)
	}
	return ws, ops
}

// guardOps returns the guards of everything the transaction read: cmp on
// each key read (cmp absent for one read as missing) that no range read
// covers with the same answer, and cmp-range over each range read, split in
// pieces of at most MaxRangeLimit entries, with one digest per involved
// group over that group's entries (T1).
func (t *Txn) guardOps() ([]txn.Op, error) {
	var ops []txn.Op
	for _, k := range slices.Sorted(maps.Keys(t.reads)) {
		c := t.reads[k]
		key := []byte(k)
		if r := t.covering(key); r != nil {
			if rc, _ := r.find(key); rc.present == c.present && bytes.Equal(rc.value, c.value) {
				continue // the range's guard covers it
			}
		}
		if c.present {
			ops = append(ops, txn.Op{Kind: txn.OpCmp, Key: key, Value: nonNil(c.value)})
		} else {
			ops = append(ops, txn.Op{Kind: txn.OpCmp, Key: key, Absent: true})
		}
	}
	max := t.s.env.limits().MaxRangeLimit
	for _, r := range t.ranges {
		start, entries := r.start, r.entries
		for {
			n := min(len(entries), max)
			end := r.end
			if n < len(entries) {
				end = entries[n].Key
			}
			ops = append(ops, RangeGuard(t.pmap, start, end, entries[:n]))
			if n == len(entries) {
				break
			}
			start, entries = end, entries[n:]
		}
	}
	return ops, nil
}

// RangeGuard builds the cmp-range of [start, end) holding entries: one
// digest per group the partition map (at the pinned version) gives the
// span, over that group's entries in key order (txn.md T1).
func RangeGuard(pmap *oracle.Map, start, end []byte, entries []txn.KV) txn.Op {
	groups := pmap.AppendRangeGroups(nil, start, end)
	hashers := make(map[bft.GroupID]*txn.RangeHasher, len(groups))
	for _, g := range groups {
		hashers[g] = txn.NewRangeHasher()
	}
	for _, e := range entries {
		if h := hashers[pmap.KeyGroup(e.Key)]; h != nil {
			h.Add(e.Key, e.Value)
		}
	}
	ds := make([]txn.GroupDigest, len(groups))
	for i, g := range groups {
		ds[i] = txn.GroupDigest{Group: g, Digest: hashers[g].Sum()}
	}
	return txn.Op{Kind: txn.OpCmpRange, Key: nonNil(start), End: end, Limit: uint32(max(len(entries), 1)), Digests: ds}
}

// checkSize refuses, with a message saying what to change, a commit the
// groups would refuse for its size.
func (t *Txn) checkSize(ops []txn.Op) error {
	lim := t.s.env.limits()
	if len(ops) > lim.MaxOps {
		return TooLarge("the commit needs operations:", len(ops), lim.MaxOps,
			"change fewer rows in one transaction (e.g. UPDATE/DELETE ... LIMIT, or smaller INSERT batches), or read less in it (each value read is guarded at commit)")
	}
	size := 0
	for i := range ops {
		size += len(ops[i].Key) + len(ops[i].End) + len(ops[i].Value) + 8 + 40*len(ops[i].Digests)
	}
	if size > lim.MaxTxnBytes-1024 {
		return TooLarge("the commit needs bytes:", size, lim.MaxTxnBytes,
			"change fewer or smaller rows in one transaction")
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
