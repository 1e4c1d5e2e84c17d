package coord

import (
	"bytes"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// Recovery of transactions other owners left pending (K4, paper §3.4).
//
// A group's abort vote for a conflict names the pending transaction it
// conflicts with (E3), with its full encoding; a "queued" reply or a
// stale-metadata vote names what a queued metadata transaction waits for
// (M4). The group client accepted that reply on f+1 matching replies (K2),
// so the name is the group's. After a grace period — the owner may still be
// finishing it — this client terminates the named transaction itself: it
// re-sends it byte-identical to the group that named it, which answers with
// its recorded vote, signed (E1; a copy from another client is answered only
// from records, T3), relays it with those votes to the transaction's other
// groups (T3: the votes show the owner sent it), and terminates it with a
// certificate (E10). Many clients may do this at once: votes are final, so
// every certificate anyone can build says the same (E10).

// recoverNamed schedules the recovery of every transaction in named, which
// group from named.
func (c *Core) recoverNamed(named []txn.Named, from bft.GroupID) {
	now := c.env.Now()
	for _, n := range named {
		t, err := c.cfg.Limits.CheckEncoded(n.Txn)
		if err != nil {
			c.anomaly("named_malformed", "group", from, "err", err)
			continue
		}
		if !t.MultiGroup() {
			continue // E7: a single-group transaction is never pending
		}
		if bytes.Equal([]byte(t.Owner), []byte(c.cfg.Owner)) {
			// Our own: it terminates by itself (K3), or is resumed after a
			// restart (W3); recovering it would only race our own run.
			continue
		}
		i := slices.IndexFunc(t.Groups, func(gv txn.GroupVersion) bool { return gv.Group == from })
		if i < 0 {
			c.anomaly("named_elsewhere", "group", from)
			continue
		}
		enc := bytes.Clone(n.Txn)
		t, _ = txn.Decode(enc) // alias the copy, not the reply
		id := c.dom.ID(enc)
		if c.recoveries[id] != nil {
			continue
		}
		if at, ok := c.recent[id]; ok && now.Sub(at) < 4*c.cfg.Tuning.RecoveryGrace {
			continue
		}
		var admin *txn.AdminSig
		if n.Admin != nil {
			a := *n.Admin
			admin = &a
		}
		r := newRun(c, t, enc, id, admin, false)
		r.from = i
		c.recoveries[id] = r
		r.after(c.cfg.Tuning.RecoveryGrace, r.start)
	}
}

// recoveryFinished forgets a finished recovery (remembering it for a while)
// and lets the retries waiting for it go (request.retry).
func (c *Core) recoveryFinished(r *run) {
	if c.recoveries[r.id] == r {
		delete(c.recoveries, r.id)
	}
	if ws := c.waiters[r.id]; ws != nil {
		delete(c.waiters, r.id)
		for _, w := range ws {
			w()
		}
	}
	c.noteRecent(r.id)
	c.cfg.Metrics.recovery(r.result)
}

// recovering reports whether this client's recovery of id is past its grace
// period and terminating the transaction.
func (c *Core) recovering(id txn.TxnID) bool {
	r := c.recoveries[id]
	return r != nil && r.started && !r.finished
}
