package partition

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Lock keys carry their keyspace, so a metadata key and a user key with the
// same bytes never meet in the lock table: 'd' user data, 'm' metadata. An
// unbounded range ends at the next prefix, never beyond its keyspace.
const (
	lockSpaceData = 'd'
	lockSpaceMeta = 'm'
)

func lockKey(meta bool, key []byte) []byte {
	p := byte(lockSpaceData)
	if meta {
		p = lockSpaceMeta
	}
	b := make([]byte, 0, 1+len(key))
	b = append(b, p)
	return append(b, key...)
}

func lockEnd(meta bool, end []byte) []byte {
	if end == nil {
		p := byte(lockSpaceData + 1)
		if meta {
			p = lockSpaceMeta + 1
		}
		return []byte{p}
	}
	return lockKey(meta, end)
}

func keyspace(meta bool) storage.Keyspace {
	if meta {
		return storage.Metadata
	}
	return storage.UserData
}

// plan is what a transaction asks of this group: the locks it must hold
// (L5) and what computing them read (the entries of its ranges).
type plan struct {
	locks []lock
	// here[i] tells whether operation i runs at this group: a metadata
	// operation at every declared group, a point operation at its key's
	// group, a range at every group holding part of it (T5).
	here []bool
	// entries[i] are the entries of range operation i at this group, in
	// key order: at most Limit for a read-range, Limit+1 for a cmp-range
	// (one more tells that the range holds too many).
	entries [][]txn.KV
	// mapOp is the operation writing the partition map (-1: none), newMap
	// the map it writes and spans the spans it moves away from this group,
	// which must be empty here (M3).
	mapOp  int
	newMap *oracle.Map
	spans  []oracle.Span
}

// runsHere reports whether op runs at this group.
func (e *Engine) runsHere(op *txn.Op) bool {
	if op.Meta {
		return true
	}
	if !op.Kind.IsRange() {
		return e.pmap.KeyGroup(op.Key) == e.self
	}
	var buf [8]bft.GroupID
	return slices.Contains(e.pmap.AppendRangeGroups(buf[:0], op.Key, op.End), e.self)
}

// plan computes t's lock set at this group (L5, L2), reading the ranges it
// covers from the committed state:
//   - cmp and read take R on their key; write takes W; insert and delete
//     take SW and W on their key;
//   - read-range takes SR on the span it covers — [start, end), or [start,
//     last returned key] when it stopped early at its limit (T1) — and R on
//     every present key it returned; cmp-range the same over [start, end);
//   - every data transaction takes R on the metadata version key (M2, its
//     cmp on the version), a metadata transaction W (it increments it);
//   - a partition-map write takes SR on every span it moves away from this
//     group (M3: those spans must be empty here, and stay so until it
//     terminates).
func (e *Engine) plan(r reader, t *txn.Txn) (*plan, error) {
	p := &plan{here: make([]bool, len(t.Ops)), entries: make([][]txn.KV, len(t.Ops)), mapOp: -1}
	meta := t.WritesMetadata()
	vmode := modeR
	if meta {
		vmode = modeW
	}
	p.locks = append(p.locks, lock{Mode: vmode, Start: lockKey(true, txn.MetaVersionKey)})
	for i := range t.Ops {
		op := &t.Ops[i]
		if !e.runsHere(op) {
			continue
		}
		p.here[i] = true
		switch op.Kind {
		case txn.OpCmp, txn.OpRead:
			p.locks = append(p.locks, lock{Mode: modeR, Start: lockKey(op.Meta, op.Key)})
		case txn.OpWrite:
			p.locks = append(p.locks, lock{Mode: modeW, Start: lockKey(op.Meta, op.Key)})
			if op.Meta && bytes.Equal(op.Key, txn.MetaPartitionsKey) {
				if err := e.planMapChange(r, p, i, op.Value); err != nil {
					return nil, err
				}
			}
		case txn.OpInsert, txn.OpDelete:
			k := lockKey(op.Meta, op.Key)
			p.locks = append(p.locks, lock{Mode: modeSW, Start: k}, lock{Mode: modeW, Start: k})
		case txn.OpReadRange, txn.OpCmpRange:
			limit := int(op.Limit)
			if op.Kind == txn.OpCmpRange {
				limit++
			}
			ents, err := scanRange(r, keyspace(op.Meta), op.Key, op.End, limit)
			if err != nil {
				return nil, err
			}
			p.entries[i] = ents
			end := lockEnd(op.Meta, op.End)
			if op.Kind == txn.OpReadRange && len(ents) == int(op.Limit) {
				// Stopped early: lock only [start, last returned key] (T1),
				// so a client scans a large range in bounded chunks.
				end = append(lockKey(op.Meta, ents[len(ents)-1].Key), 0)
			}
			p.locks = append(p.locks, lock{Mode: modeSR, Start: lockKey(op.Meta, op.Key), End: end})
			for _, kv := range ents {
				p.locks = append(p.locks, lock{Mode: modeR, Start: lockKey(op.Meta, kv.Key)})
			}
		}
	}
	return p, nil
}

// planMapChange adds the SR locks of a partition-map write (M3).
func (e *Engine) planMapChange(_ reader, p *plan, i int, value []byte) error {
	m, err := oracle.Decode(value)
	if err != nil {
		// Validate decoded it; every replica sees the same bytes.
		return fmt.Errorf("%w: partition map write: %w", errCorrupt, err)
	}
	p.mapOp, p.newMap = i, m
	for _, s := range oracle.Moved(e.pmap, m) {
		if !slices.Contains(s.Old, e.self) {
			continue
		}
		p.spans = append(p.spans, s)
		p.locks = append(p.locks, lock{Mode: modeSR, Start: lockKey(false, s.Start), End: lockEnd(false, s.End)})
	}
	return nil
}

// scanRange returns at most limit present entries of [start, end) in ks,
// copied.
func scanRange(r reader, ks storage.Keyspace, start, end []byte, limit int) ([]txn.KV, error) {
	var out []txn.KV
	err := r.Scan(ks, start, end, limit, func(k, v []byte) error {
		out = append(out, txn.KV{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("partition: scan %s: %w", ks, err)
	}
	return out, nil
}

// verdict is the result of evaluating a transaction whose locks are held.
type verdict struct {
	reason  txn.Reason
	op      int
	version uint64
	reads   []txn.Read
	updates []update
}

// evaluate runs E4 and E5 with the locks held: the comparisons (the metadata
// version first, then cmp and cmp-range in operation order), then the update
// preconditions (insert on absent, write and delete on existing, and a map
// change only over spans empty here, M3), then the queries; it buffers the
// updates. Queries and preconditions read the committed state: a
// transaction never sees its own updates.
func (e *Engine) evaluate(r reader, t *txn.Txn, p *plan) (verdict, error) {
	ver, err := e.version(r)
	if err != nil {
		return verdict{}, err
	}
	if want, _ := t.Involves(e.self); want != ver {
		return verdict{reason: txn.ReasonStaleMetadata, version: ver}, nil
	}
	for i := range t.Ops {
		op := &t.Ops[i]
		if !p.here[i] {
			continue
		}
		switch op.Kind {
		case txn.OpCmp:
			v, ok, err := get(r, keyspace(op.Meta), op.Key)
			if err != nil {
				return verdict{}, fmt.Errorf("partition: cmp: %w", err)
			}
			if (op.Absent && ok) || (!op.Absent && (!ok || !bytes.Equal(v, op.Value))) {
				return verdict{reason: txn.ReasonCompare, op: i}, nil
			}
		case txn.OpCmpRange:
			ents := p.entries[i]
			want, found := digestFor(op, e.self)
			if len(ents) > int(op.Limit) || !found || txn.RangeDigest(ents) != want {
				return verdict{reason: txn.ReasonCompare, op: i}, nil
			}
		}
	}
	for i := range t.Ops {
		op := &t.Ops[i]
		if !p.here[i] || !op.Kind.IsUpdate() {
			continue
		}
		_, ok, err := get(r, keyspace(op.Meta), op.Key)
		if err != nil {
			return verdict{}, fmt.Errorf("partition: precondition: %w", err)
		}
		switch {
		case op.Kind == txn.OpInsert && ok:
			return verdict{reason: txn.ReasonKeyExists, op: i}, nil
		case op.Kind != txn.OpInsert && !ok:
			return verdict{reason: txn.ReasonNotFound, op: i}, nil
		}
	}
	for _, s := range p.spans {
		ents, err := scanRange(r, storage.UserData, s.Start, s.End, 1)
		if err != nil {
			return verdict{}, err
		}
		if len(ents) > 0 {
			return verdict{reason: txn.ReasonMapChange, op: p.mapOp}, nil
		}
	}
	var v verdict
	size := 0
	for i := range t.Ops {
		op := &t.Ops[i]
		if !p.here[i] {
			continue
		}
		switch op.Kind {
		case txn.OpRead:
			val, ok, err := get(r, keyspace(op.Meta), op.Key)
			if err != nil {
				return verdict{}, fmt.Errorf("partition: read: %w", err)
			}
			v.reads = append(v.reads, txn.Read{Op: i, Present: ok, Value: val})
			size += len(val)
		case txn.OpReadRange:
			v.reads = append(v.reads, txn.Read{Op: i, Range: true, Entries: p.entries[i]})
			for _, kv := range p.entries[i] {
				size += len(kv.Key) + len(kv.Value)
			}
		case txn.OpInsert, txn.OpWrite:
			v.updates = append(v.updates, update{meta: op.Meta, key: op.Key, value: op.Value})
		case txn.OpDelete:
			v.updates = append(v.updates, update{meta: op.Meta, delete: true, key: op.Key})
		}
	}
	if size > e.limits.MaxResultBytes {
		return verdict{reason: txn.ReasonTooLarge}, nil
	}
	if t.WritesMetadata() {
		// M2: every metadata change increments the version in every group.
		v.updates = append(v.updates, update{meta: true, key: txn.MetaVersionKey, value: txn.EncodeVersion(ver + 1)})
	}
	return v, nil
}

func digestFor(op *txn.Op, g bft.GroupID) ([32]byte, bool) {
	for _, d := range op.Digests {
		if d.Group == g {
			return d.Digest, true
		}
	}
	return [32]byte{}, false
}
