package coord

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// Start-up (W3). A client that restarts does not know which of its nonces
// were in flight. It asks every group, with a query that uses no nonce, for
// its watermark, abort mark and records there (with the encoding of every
// transaction it still owes something: pending, queued, or a commit-voted
// multi-group update without its termination proof), then:
//
//   - its next nonce is above everything any group has seen of it: every
//     recorded nonce, every group's watermark, every abort mark. That skips
//     every nonce it may have had in flight: the query's envelope carries a
//     later timestamp than any envelope the previous incarnation sent, so
//     once it executed at a group, none of those executes there any more
//     (pbft.md C2) — and every other way a nonce can reach a group (a relay,
//     an ABORT certificate) needs a group that recorded it, or that raised
//     its abort mark past it, which the query shows;
//   - it finishes every transaction it still owes something (K3, K4): it
//     re-sends each to every declared group as its owner (recorded votes
//     come back unchanged and signed, E1; a group that never received it
//     votes now), decides, terminates and proves it like any attempt;
//   - its watermark is the lowest of those nonces (or the next nonce): every
//     lower nonce is terminated everywhere.
//
// A fresh client gets empty answers and starts at nonce 0.

type startup struct {
	pending int
	next    uint64
	resume  map[txn.TxnID]*txn.QueryRecord
	waiters []func(error)
	err     error
}

// Startup runs the start-up query and calls done when the core is ready
// (transactions started before wait), or with the error that stopped it
// (ErrStartup wrapping a group's rejection or the Env's error). Calling it
// again after it succeeded calls done(nil) at once.
func (c *Core) Startup(done func(error)) {
	if c.ready {
		done(nil)
		return
	}
	if c.startup != nil {
		c.startup.waiters = append(c.startup.waiters, done)
		return
	}
	s := &startup{pending: len(c.groups), resume: make(map[txn.TxnID]*txn.QueryRecord), waiters: []func(error){done}}
	c.startup = s
	for _, g := range c.groups {
		c.query(s, g, 0)
	}
}

func (c *Core) query(s *startup, g bft.GroupID, from uint64) {
	c.env.Invoke(g, txn.NewQueryCall(from), func(res client.Result) { c.onQuery(s, g, res) })
}

func (c *Core) onQuery(s *startup, g bft.GroupID, res client.Result) {
	if c.startup != s {
		return
	}
	fail := func(err error) {
		c.startup = nil
		for _, w := range s.waiters {
			w(fmt.Errorf("%w: query of group %d: %w", ErrStartup, g, err))
		}
	}
	if res.Err != nil {
		fail(res.Err)
		return
	}
	out, err := txn.DecodeResult(res.Value)
	switch {
	case err != nil:
		// The start-up query is the first call a client makes, so a group
		// running another application (augustus start --app noop or log)
		// shows here: its replicas executed the call and answered, in f+1
		// matching replies, with bytes that are no transaction result.
		fail(fmt.Errorf("%w: they answered the start-up query with something that is not a transaction result (%w); "+
			"start them with --app txn", ErrNotTxnEngine, err))
		return
	case out.Kind != txn.ResultQuery || out.Query.Group != g:
		fail(fmt.Errorf("%w: %s", errAnomaly, out.String()))
		return
	}
	q := out.Query
	s.next = max(s.next, q.Watermark)
	if q.HasMark {
		s.next = max(s.next, q.Mark+1)
	}
	for i := range q.Records {
		rec := &q.Records[i]
		s.next = max(s.next, rec.Nonce+1)
		if rec.Txn != nil {
			if _, ok := s.resume[rec.ID]; !ok {
				s.resume[rec.ID] = rec
			}
		}
	}
	if q.More && q.Next > 0 {
		c.query(s, g, q.Next)
		return
	}
	if s.pending--; s.pending > 0 {
		return
	}
	c.finishStartup(s)
}

func (c *Core) finishStartup(s *startup) {
	c.startup = nil
	c.nextNonce, c.watermark = s.next, s.next
	recs := make([]*txn.QueryRecord, 0, len(s.resume))
	for _, rec := range s.resume {
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b *txn.QueryRecord) int { return cmp.Compare(a.Nonce, b.Nonce) })
	var runs []*run
	for _, rec := range recs {
		enc := bytes.Clone(rec.Txn.Txn)
		t, err := c.cfg.Limits.CheckEncoded(enc)
		if err != nil || !bytes.Equal([]byte(t.Owner), []byte(c.cfg.Owner)) || t.Nonce != rec.Nonce || c.dom.ID(enc) != rec.ID {
			c.anomaly("resume_mismatch", "nonce", rec.Nonce, "err", err)
			continue
		}
		if _, dup := c.unfinished[t.Nonce]; dup {
			c.anomaly("resume_second_id", "nonce", rec.Nonce)
			continue
		}
		var admin *txn.AdminSig
		if rec.Txn.Admin != nil {
			a := *rec.Txn.Admin
			admin = &a
		}
		r := newRun(c, t, enc, rec.ID, admin, true)
		r.resumed = true
		c.unfinished[t.Nonce] = r
		c.watermark = min(c.watermark, t.Nonce)
		runs = append(runs, r)
	}
	c.cfg.Metrics.unfinished(len(c.unfinished))
	c.ready = true
	for _, r := range runs {
		r.start()
	}
	for _, w := range s.waiters {
		w(nil)
	}
	c.drainWaiting()
}
