package bft

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Record keys. Slot records sort by seq, so the log below a stable
// checkpoint is one key range; view records sort by view.
//
// Integers are big-endian, so byte order is numeric order, and "everything
// at or below s" or "every view below v" is a single range the host deletes
// at once (G2, enterView). A key names the protocol slot of a message — its
// seq, view, kind and sender — never its content: each sender's message has
// its own record, and the node keeps one message per slot (the first, or an
// O entry that replaces a buffered PRE-PREPARE), so writing it again (with a
// body it lacked) replaces the record.
//
//	's' seq(8) view(8) kind(1) replica(4)   PRE-PREPARE, PREPARE, COMMIT
//	'v' view(8) kind(1) replica(4)          VIEW-CHANGE, NEW-VIEW
//	'c' seq(8) replica(4)                   CHECKPOINT (own)
const (
	prefixSlot       = 's'
	prefixView       = 'v'
	prefixCheckpoint = 'c'
)

// RecordKey returns the key under which the host stores rec.
func RecordKey(rec *bftpb.LogRecord) []byte {
	switch r := rec.Record.(type) {
	case *bftpb.LogRecord_PrePrepare:
		return slotKey(r.PrePrepare.Seq, r.PrePrepare.View, kindPrePrepare, r.PrePrepare.Replica)
	case *bftpb.LogRecord_Prepare:
		return slotKey(r.Prepare.Seq, r.Prepare.View, kindPrepare, r.Prepare.Replica)
	case *bftpb.LogRecord_Commit:
		return slotKey(r.Commit.Seq, r.Commit.View, kindCommit, r.Commit.Replica)
	case *bftpb.LogRecord_ViewChange:
		return viewKey(r.ViewChange.View, kindViewChange, r.ViewChange.Replica)
	case *bftpb.LogRecord_NewView:
		return viewKey(r.NewView.View, kindNewView, r.NewView.Replica)
	case *bftpb.LogRecord_Checkpoint:
		b := []byte{prefixCheckpoint}
		b = binary.BigEndian.AppendUint64(b, r.Checkpoint.Seq)
		return binary.BigEndian.AppendUint32(b, r.Checkpoint.Replica)
	}
	return nil
}

// slotKey is the key of a PRE-PREPARE, PREPARE or COMMIT record.
func slotKey(seq, view uint64, kind byte, replica uint32) []byte {
	b := make([]byte, 0, 22)
	b = append(b, prefixSlot)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint64(b, view)
	b = append(b, kind)
	return binary.BigEndian.AppendUint32(b, replica)
}

// viewKey is the key of a VIEW-CHANGE or NEW-VIEW record.
func viewKey(view uint64, kind byte, replica uint32) []byte {
	b := make([]byte, 0, 14)
	b = append(b, prefixView)
	b = binary.BigEndian.AppendUint64(b, view)
	b = append(b, kind)
	return binary.BigEndian.AppendUint32(b, replica)
}

// prefixUpTo is the range of the records under prefix whose leading number
// is at most v.
func prefixUpTo(prefix byte, v uint64) KeyRange {
	end := binary.BigEndian.AppendUint64([]byte{prefix}, v+1)
	if v == ^uint64(0) {
		end = []byte{prefix + 1}
	}
	return KeyRange{Start: []byte{prefix}, End: end}
}

// The records a stable checkpoint at s makes useless (G2), and those that
// entering view v makes useless (VIEW-CHANGEs and NEW-VIEWs of older views).
func slotRecordsUpTo(s SeqNum) KeyRange       { return prefixUpTo(prefixSlot, uint64(s)) }
func checkpointRecordsUpTo(s SeqNum) KeyRange { return prefixUpTo(prefixCheckpoint, uint64(s)) }
func viewRecordsBelow(v View) KeyRange {
	return KeyRange{Start: []byte{prefixView}, End: binary.BigEndian.AppendUint64([]byte{prefixView}, uint64(v))}
}

// restore rebuilds the node from what the host persisted (P3): the view
// and view-change flag, the stable checkpoint, every message of the log,
// its own VIEW-CHANGE and the NEW-VIEW of its view, and its checkpoints. It
// recomputes prepared and committed slots without sending anything: what it
// sent before is in the log, so it never signs a different message for a
// (view, seq) it signed before.
//
// Restore persists and sends nothing: what it rebuilds is on disk already,
// and lost messages are re-sent by retransmission (periodic). The first
// Ready after it carries only the committed batches the host had not
// executed, and a state target if the replica was behind its stable
// checkpoint.
func (n *Node) restore(r *Restored) error {
	// P3: the persisted view, and whether a view change to it was in
	// progress; P2: the stable checkpoint certificate, and h with it.
	hs := r.HardState
	if hs == nil {
		hs = &bftpb.HardState{}
	}
	n.view, n.viewChanging = View(hs.View), hs.ViewChanging
	if hs.Stable != nil && hs.Stable.Seq > 0 {
		n.stable, n.h = hs.Stable, SeqNum(hs.Stable.Seq)
	}
	// The host's applied seq and client table, committed in one batch with
	// the state (P2): everything up to lastExecuted is in the store, and
	// whatever was handed out beyond it is handed out again.
	n.lastExecuted, n.execCursor = r.LastExecuted, r.LastExecuted
	n.clients.restore(r.Clients)
	for _, rec := range r.Records {
		if err := n.restoreRecord(rec); err != nil {
			return err
		}
	}
	// Recompute what the messages prove, in seq order, and within a slot in
	// increasing view order, so that the prepared certificate of the highest
	// view is the one the slot keeps (V2), as it was before the crash.
	seqs := make([]SeqNum, 0, len(n.slots))
	for s := range n.slots {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	// maxOwn is the highest seq of a PRE-PREPARE this replica signed as
	// primary of the current view.
	var maxOwn SeqNum
	for _, s := range seqs {
		sl := n.slots[s]
		views := make([]View, 0, len(sl.phases))
		for v := range sl.phases {
			views = append(views, v)
		}
		sort.Slice(views, func(i, j int) bool { return views[i] < views[j] })
		for _, v := range views {
			ph := sl.phases[v]
			if ph.pp != nil && v == n.view && n.primaryOf(v) == n.cfg.ID && s > maxOwn {
				maxOwn = s
			}
			n.restorePhase(sl, ph)
		}
		// Executed already: in the store, never handed out again (executing a
		// batch twice would apply its requests twice: N7, C2).
		if s <= n.lastExecuted {
			sl.handedOff = true
		}
	}
	// Drop the phases of views before the current one (their certificates
	// stay in the slots), as enterView did before the crash: votes of an
	// older view can no longer complete anything in this one.
	for _, sl := range n.slots {
		for v := range sl.phases {
			if v < n.view {
				delete(sl.phases, v)
			}
		}
	}
	// P3: sequence numbers are never reused after a restart. A primary
	// continues after the last PRE-PREPARE it signed in its view (every one
	// sent was persisted first, P1; one lost in the crash was never sent, so
	// reusing its seq contradicts nothing), above h, and after O of its
	// NEW-VIEW. Reusing a seq it sent would mean a second PRE-PREPARE for (v,
	// s): backups that took the first refuse it (N2), others may prepare it,
	// and a correct replica would act as an equivocating primary, which the
	// bound of f faults does not allow for.
	n.nextSeq = maxOwn + 1
	if n.nextSeq <= n.h {
		n.nextSeq = n.h + 1
	}
	if n.vc.newView != nil {
		plan := computeNewView(n.vc.newView.ViewChanges, n.null)
		if n.nextSeq <= plan.maxS {
			n.nextSeq = plan.maxS + 1
		}
		n.vc.floor = plan.minS // V5, G2, as before the restart
		// PRE-PREPAREs of O above the high watermark wait for it to move,
		// as they did before the restart (V5).
		for _, pp := range n.vc.newView.PrePrepares {
			if SeqNum(pp.Seq) > n.highWatermark() {
				n.vc.deferred = append(n.vc.deferred, pp)
			}
		}
	}
	// Behind the stable checkpoint: a state transfer was running (or an
	// install was cut short). Start it again (G3).
	if n.lastExecuted < n.h {
		n.transfer = nil
		n.startTransfer(n.stable)
	}
	// Nothing rebuilt above is persisted or sent again; only the state
	// target, if any, goes out.
	n.rd = Ready{StateTarget: n.rd.StateTarget}
	n.tryExecute()
	return nil
}

// restoreRecord puts one record back. Records outside (h, h+L], or naming
// a replica outside the group, are skipped: the deletes of G2 go in one
// atomic write with the hard state, so a consistent store holds none, and
// a record is not trusted beyond what a consistent store can hold.
func (n *Node) restoreRecord(rec *bftpb.LogRecord) error {
	switch r := rec.Record.(type) {
	case *bftpb.LogRecord_PrePrepare:
		pp := r.PrePrepare
		if !n.restorable(pp.Seq) {
			return nil
		}
		d, ok := digestFrom(pp.Digest)
		if !ok {
			return fmt.Errorf("pre-prepare record with a %d-byte digest", len(pp.Digest))
		}
		sl := n.slotFor(SeqNum(pp.Seq))
		ph := sl.phase(View(pp.View), n.cfg.N)
		// One PRE-PREPARE per (v, s) and so one record; a body in it is the
		// batch's.
		if ph.pp == nil {
			ph.pp, ph.digest = header(pp), d
		}
		if pp.Batch != nil {
			sl.addBody(d, pp.Batch)
			sl.bodyPersisted[d] = true
		}
	case *bftpb.LogRecord_Prepare:
		p := r.Prepare
		if !n.restorable(p.Seq) || int(p.Replica) >= n.cfg.N {
			return nil
		}
		n.slotFor(SeqNum(p.Seq)).phase(View(p.View), n.cfg.N).prepares[p.Replica] = p
	case *bftpb.LogRecord_Commit:
		c := r.Commit
		if !n.restorable(c.Seq) || int(c.Replica) >= n.cfg.N {
			return nil
		}
		n.slotFor(SeqNum(c.Seq)).phase(View(c.View), n.cfg.N).commits[c.Replica] = c
	case *bftpb.LogRecord_ViewChange:
		vc := r.ViewChange
		// Own VIEW-CHANGEs since the last view entered (older ones were
		// deleted when it entered that view); records come in key order,
		// so by increasing view.
		if ReplicaID(vc.Replica) == n.cfg.ID && n.viewChanging && View(vc.View) <= n.view {
			// The same bound as when they were sent; periodic re-sends these,
			// so a VIEW-CHANGE lost in the crash still reaches the others (V6,
			// V7), and it is the persisted one, never a new signature (P3).
			n.vc.own = append(n.vc.own, vc)
			if len(n.vc.own) > maxOwnViewChanges {
				n.vc.own = n.vc.own[1:]
			}
			n.vc.store(vc, n.view+n.cfg.MaxFutureViews)
		}
	case *bftpb.LogRecord_NewView:
		// The NEW-VIEW of the view this replica had entered: floor, deferred
		// entries and relays come from it.
		if View(r.NewView.View) == n.view && !n.viewChanging {
			n.vc.newView = r.NewView
		}
	case *bftpb.LogRecord_Checkpoint:
		// Own CHECKPOINTs above h: the digests stabilize compares, and the
		// messages retransmit re-sends.
		cp := r.Checkpoint
		if SeqNum(cp.Seq) > n.h && ReplicaID(cp.Replica) == n.cfg.ID {
			d, _ := digestFrom(cp.StateDigest)
			n.ownCps[SeqNum(cp.Seq)] = d
			n.cps.add(cp)
		}
	default:
		return fmt.Errorf("unknown log record")
	}
	return nil
}

// restorable reports whether seq lies in the log's window (h, h+L].
func (n *Node) restorable(seq uint64) bool {
	s := SeqNum(seq)
	return s > n.h && s <= n.h+n.cfg.LogWindow
}

// restorePhase recomputes prepared and committed for one (view, seq) from
// restored messages, without sending anything. It counts as checkPrepared
// and checkCommitted do, with one difference: 2f+1 matching COMMITs mark the
// slot committed even if this replica had not prepared; they are a commit
// certificate, which proves the batch as in catch-up (G3).
//
// Only a view the replica had entered can hold a prepared phase: messages of
// a future view, or of the view a view change is heading for, were only
// buffered before the crash (N4). Marking them prepared would put a
// certificate of the target view itself into its VIEW-CHANGE (which V3
// rejects) and, once it entered that view, keep checkPrepared from ever
// sending its COMMIT (N5). A commit certificate (2f+1 COMMITs) proves its
// batch whatever the view, as in catch-up.
func (n *Node) restorePhase(sl *slot, ph *phase) {
	if ph.pp == nil {
		return
	}
	// N4: PREPAREs from distinct backups that match the PRE-PREPARE; the
	// primary's never counts, as in checkPrepared (its PRE-PREPARE stands for
	// it, N3), so a restored certificate is one the Checker would accept.
	primary := n.primaryOf(ph.view)
	var prepares []*bftpb.Prepare
	for id, p := range ph.prepares {
		if p != nil && ReplicaID(id) != primary && string(p.Digest) == string(ph.digest[:]) {
			prepares = append(prepares, p)
		}
	}
	// N4, V2 as in checkPrepared: the highest view's certificate per slot.
	entered := ph.view < n.view || (ph.view == n.view && !n.viewChanging)
	if entered && len(prepares) >= n.q.Prepares() && n.body(sl, ph.digest) != nil {
		ph.prepared = true
		if sl.prepared == nil || View(sl.prepared.PrePrepare.View) <= ph.view {
			sl.prepared = &bftpb.PreparedCert{PrePrepare: ph.pp, Prepares: prepares[:n.q.Prepares()]}
		}
	}
	// N6: COMMITs from any replica, this one included, that match.
	var commits []*bftpb.Commit
	for _, c := range ph.commits {
		if c != nil && string(c.Digest) == string(ph.digest[:]) {
			commits = append(commits, c)
		}
	}
	// 2f+1 matching COMMITs, whether or not this replica prepared (see
	// above).
	if len(commits) >= n.q.Quorum() && !sl.committed {
		sl.committed, sl.commitDigest, sl.commitView = true, ph.digest, ph.view
		sl.commitPP = ph.pp
		sl.commitCert = &bftpb.CommitCert{View: uint64(ph.view), Seq: uint64(sl.seq), Digest: ph.digest[:], Commits: commits[:n.q.Quorum()]}
	}
}
