package bft

import (
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// errSafety is the error of a violated safety invariant, one that at most
// f faulty replicas cannot cause; the node stops on it (fail).
func errSafety(format string, args ...any) error {
	return fmt.Errorf("bft: safety violation: "+format, args...)
}

// execRecord remembers, for a batch handed to the host, what to answer
// once it reports the results: the requests executed (one result each, in
// order), the duplicates to answer from the cache, the stale ones, the
// clients whose low watermark may have moved, and whether the batch ends
// at a checkpoint.
type execRecord struct {
	executed   []reqKey   // one per result
	duplicates []reqKey   // resend the cached reply
	stale      []reqKey   // answer STALE
	clients    []ClientID // touched by the batch
	checkpoint bool
}

// buildExecution decides, deterministically and in batch order, what each
// request of a committed batch gets (C2, N7), updates the client table and
// returns the Execution for the host.
//
// The client table changes here, when the batch is handed out, not when its
// execution is reported. Hand-off follows sequence order, so every correct
// replica makes the same decisions from the same replicated table, and each
// batch sees the effects of the ones before it: a request executed at s is
// a duplicate at s+1 even while s is still executing. The changes travel in
// the Execution and the host commits them atomically with the state (P2),
// so the in-memory table runs ahead of the durable one by the batches in
// (lastExecuted, execCursor]; a state transfer replaces both
// (StateInstalled).
func (n *Node) buildExecution(sl *slot, b *bftpb.Batch) Execution {
	ex := Execution{
		Seq: sl.seq, View: sl.commitView, Digest: sl.commitDigest, Batch: b,
		Checkpoint: sl.seq%n.cfg.CheckpointInterval == 0,
	}
	rec := &execRecord{checkpoint: ex.Checkpoint}
	// One ClientUpdate per client, in the order of the client's first request
	// in the batch (index finds it; no map is iterated), so every correct
	// replica hands the host the same updates in the same order and the
	// stored table, part of the state digest, agrees at each checkpoint (G1).
	index := make(map[ClientID]int)
	for _, r := range b.Requests {
		c := ClientID(r.Client)
		cs := n.clients.get(c)
		i, ok := index[c]
		if !ok {
			i = len(ex.Clients)
			index[c] = i
			ex.Clients = append(ex.Clients, ClientUpdate{Client: c})
			rec.clients = append(rec.clients, c)
		}
		upd := &ex.Clients[i]
		disp, low := n.clients.classify(cs, r)
		// C2: the request's low, signed by its client, raises the client's
		// watermark; cached replies at or below it are forgotten, since the
		// client declared it will not ask for them again.
		upd.Delete = append(upd.Delete, cs.raiseLow(low)...)
		upd.Low = cs.low
		key := reqKey{c, r.Timestamp}
		switch disp {
		// The reply slot is taken now (not done) so that a copy later in this
		// batch, or in a later one, is a duplicate; the result arrives with
		// Executed. Put names the result by its index in Execute.
		case dispExecute:
			upd.Put = append(upd.Put, PutReply{Timestamp: r.Timestamp, Result: len(ex.Execute)})
			cs.replies[r.Timestamp] = &cachedReply{}
			ex.Execute = append(ex.Execute, r)
			rec.executed = append(rec.executed, key)
		// N7: a request already executed (a client's retransmission that a
		// primary batched again, or the same request in two batches) is not
		// executed twice; its client gets the cached reply (C2).
		case dispDuplicate:
			rec.duplicates = append(rec.duplicates, key)
		case dispStale:
			rec.stale = append(rec.stale, key)
		// Above the window: neither executed nor answered; the client
		// retransmits once its window moves. A correct primary does not batch
		// it (cutBatch), a faulty one may.
		case dispRefused:
			n.stats.Dropped[dropRequest]++
		}
	}
	// A put overwritten by a later low in the same batch is deleted again:
	// drop puts at or below the final low so the host's writes stay simple.
	for i := range ex.Clients {
		upd := &ex.Clients[i]
		kept := upd.Put[:0]
		for _, p := range upd.Put {
			if p.Timestamp > upd.Low {
				kept = append(kept, p)
			}
		}
		upd.Put = kept
	}
	n.execInfo[sl.seq] = rec
	return ex
}

// Executed reports that the host executed batch seq and durably committed
// its state, its client updates and seq (P2). results holds one result per
// Execution.Execute element; stateDigest is the application's state digest
// after the batch, required when Execution.Checkpoint is set (G1).
// Reports for batches that a state transfer superseded are ignored.
//
// Reports come in order, one per batch handed out: seq is lastExecuted+1
// and at most execCursor (see tryExecute). Anything else is a host bug and
// is refused.
func (n *Node) Executed(seq SeqNum, results [][]byte, stateDigest []byte) error {
	if n.stopped != nil {
		return n.stopped
	}
	if seq <= n.lastExecuted {
		return nil // superseded by a state transfer
	}
	rec := n.execInfo[seq]
	if seq != n.lastExecuted+1 || seq > n.execCursor || rec == nil {
		return fmt.Errorf("%w: executed %d, expected %d (handed out up to %d)", ErrUnexpectedReply, seq, n.lastExecuted+1, n.execCursor)
	}
	// One result per executed request, in order, or the replies below would
	// go to the wrong requests.
	if len(results) != len(rec.executed) {
		return fmt.Errorf("%w: %d results for %d requests at seq %d", ErrUnexpectedReply, len(results), len(rec.executed), seq)
	}
	// G1: a batch that ends at a checkpoint must come with the state digest
	// after it.
	var digest Digest
	if rec.checkpoint {
		d, ok := digestFrom(stateDigest)
		if !ok {
			return fmt.Errorf("%w: checkpoint at seq %d needs a 32-byte state digest, got %d bytes", ErrUnexpectedReply, seq, len(stateDigest))
		}
		digest = d
	}
	// From here the report is accepted: the state after seq is durable (P2).
	delete(n.execInfo, seq)
	n.lastExecuted = seq
	n.stats.BatchesExecuted++
	n.stats.RequestsExecuted += uint64(len(results))

	progressed := false
	// C3: every request executed, duplicate or stale gets its reply, and
	// leaves the pending set.
	for i, key := range rec.executed {
		if cr := n.clients.m[key.client].replies[key.ts]; cr != nil {
			cr.result, cr.done = results[i], true
		}
		n.reply(key, bftpb.ReplyStatus_REPLY_STATUS_OK, results[i], 0)
		progressed = n.reqs.remove(key) || progressed
		delete(n.reqs.inflight, key)
	}
	// Reports come in order, so the batch that executed a duplicate's first
	// copy has reported (it is this one or an earlier one) and its result is
	// cached; a reply the client's low has since dropped is not resent.
	for _, key := range rec.duplicates {
		if cr := n.clients.m[key.client].replies[key.ts]; cr != nil && cr.done {
			n.reply(key, bftpb.ReplyStatus_REPLY_STATUS_OK, cr.result, 0)
		}
		progressed = n.reqs.remove(key) || progressed
		delete(n.reqs.inflight, key)
	}
	// A STALE reply carries the low watermark, so a client that restarted
	// below its old timestamps learns where to start (C2).
	for _, key := range rec.stale {
		cs := n.clients.m[key.client]
		n.reply(key, bftpb.ReplyStatus_REPLY_STATUS_STALE, nil, cs.low)
		progressed = n.reqs.remove(key) || progressed
		delete(n.reqs.inflight, key)
	}
	// Requests the new low watermarks made stale will never execute.
	for _, c := range rec.clients {
		if n.reqs.removeUpTo(c, n.clients.m[c].low) > 0 {
			progressed = true
		}
	}
	// Nothing of this batch is in flight any more, including requests the
	// table skipped.
	if sl := n.slots[seq]; sl != nil {
		for _, r := range sl.bodies[sl.commitDigest].GetRequests() {
			delete(n.reqs.inflight, reqKey{ClientID(r.Client), r.Timestamp})
		}
	}
	// V1: restart the timer if requests still wait, stop it otherwise; an
	// execution in the new view ends the back-off (V6).
	if progressed || len(rec.executed) > 0 {
		n.vc.attempts = 0
	}
	if progressed {
		n.reqTimer.stop()
		if n.reqs.len() > 0 && !n.viewChanging && !n.IsPrimary() {
			n.reqTimer.start(n.now, n.backoff(n.cfg.RequestTimeout))
		}
	}
	// G1: the own CHECKPOINT, now that the state after seq is durable. Not
	// earlier: the CHECKPOINT vouches for a state this replica must be able
	// to serve in state transfer (G3), and after a crash it would otherwise
	// have signed a digest of a state it no longer holds.
	if rec.checkpoint {
		n.takeCheckpoint(seq, digest)
	}
	// A pending checkpoint certificate (stabilize) is adopted once execution
	// reaches it, its digest compared with this replica's own.
	if n.pending != nil && SeqNum(n.pending.Seq) <= n.lastExecuted {
		cert := n.pending
		n.pending = nil
		n.stabilize(cert)
	}
	n.tryExecute()
	return nil
}

// StateInstalled reports that the host installed the state of the current
// StateTarget (G3): seq is the target's seq and clients the client table
// of the installed state. Execution resumes after seq.
//
// The store now holds the certified state at seq, so the execution cursor
// jumps there (lastExecuted = execCursor = seq), the records of batches
// handed out before the transfer are dropped (the host voided their
// results), and the client table becomes the installed one: it is part of
// the replicated state, so it is the group's table at seq (C2). Pending
// requests that table would no longer execute are forgotten.
func (n *Node) StateInstalled(seq SeqNum, clients []*bftpb.ClientRecord) error {
	if n.stopped != nil {
		return n.stopped
	}
	if n.transfer == nil || n.transfer.Seq != seq {
		return fmt.Errorf("bft: state installed at seq %d, but the state transfer target is %v", seq, n.transfer)
	}
	// The installed state's digest is now this replica's own at seq. The host
	// checked the state against the certificate's digest, which 2f+1
	// replicas signed, at least f+1 of them correct (G3).
	n.ownCps[seq] = n.transfer.Digest
	n.transfer = nil
	n.lastExecuted, n.execCursor = seq, seq
	for s := range n.execInfo {
		if s <= seq {
			delete(n.execInfo, s)
		}
	}
	n.clients.restore(clients)
	// Pending requests the installed table executed, or made stale, are done
	// here as well; a backup that kept them would run its request timer for
	// them and start a needless view change (V1).
	for _, p := range n.reqs.ordered() {
		if disp, _ := n.clients.classify(n.clients.m[p.key.client], p.req); disp != dispExecute {
			n.reqs.remove(p.key)
		}
	}
	// In-flight marks refer to batches handed out before the transfer.
	n.reqs.inflight = make(map[reqKey]SeqNum)
	// V1: the installed state may have executed what this backup waited for.
	n.reqTimer.stop()
	if n.reqs.len() > 0 && !n.viewChanging && !n.IsPrimary() {
		n.reqTimer.start(n.now, n.backoff(n.cfg.RequestTimeout))
	}
	n.stats.StateTransfers++
	// A primary never proposes at or below the installed checkpoint (N1).
	if n.nextSeq <= seq {
		n.nextSeq = seq + 1
	}
	n.tryExecute()
	return nil
}
