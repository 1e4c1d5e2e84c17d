package txntest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// ByzClient is a Byzantine client of txn.md's list. It holds an admitted
// key (owners are admitted clients) and sends raw calls through the
// production group clients: it cannot forge envelopes of other clients (the
// PBFT layer checks their signatures) but may put anything inside its own.
// None of what it does may break a checker, block correct clients forever
// (X3) or split a transaction (X2).
type ByzClient struct {
	c     *Cluster
	conns *Conns
	idx   int
	nonce uint64
	keys  func() [][]byte // the workload's keys, to conflict with
	// own are the keys Byzantine clients write (one per group): their
	// writes are garbage the correct workload must never read, so they go
	// there, while their reads of the workload's keys make correct writers
	// conflict with them (K4).
	own [][]byte
	// seen are transactions and certificates it observed (its own), to
	// replay.
	seen  [][]byte
	certs []txn.Certificate
	// Abandoned counts the transactions it left pending after their votes.
	Abandoned int
	Actions   map[string]int
}

// ByzKinds are the misbehaviours a ByzClient draws from.
var ByzKinds = []string{"abandon", "partial", "nonmatching", "second-id", "beyond-window", "replay", "forge-owner",
	"bad-cert", "withhold-cert", "lying-watermark", "release-other", "relay-outside", "flood", "meta-no-admin"}

// NewByzClient connects a Byzantine client with key index idx.
func NewByzClient(c *Cluster, idx int, keys func() [][]byte) *ByzClient {
	return &ByzClient{c: c, conns: c.Connect(idx, 4, 500_000), idx: idx, nonce: 1, keys: keys, own: ByzKeys(c), Actions: map[string]int{}}
}

// Conns returns its connections (ticked by the simulation).
func (b *ByzClient) Conns() *Conns { return b.conns }

func (b *ByzClient) rng() interface{ IntN(int) int } { return b.c.W.Rand() }

// build makes a transaction of the client's own over the given ops, with
// its groups from the partition map at metadata version 0.
func (b *ByzClient) build(ops []txn.Op, nonce, watermark uint64) (*txn.Txn, []byte) {
	groups := txn.InvolvedGroups(ops, b.c.Map)
	gv := make([]txn.GroupVersion, len(groups))
	for i, g := range groups {
		gv[i] = txn.GroupVersion{Group: g}
	}
	t := &txn.Txn{Ops: ops, Groups: gv, Owner: b.conns.ID(), Nonce: nonce, Watermark: watermark}
	enc := t.Encode()
	id := txn.ID(ClusterID, enc)
	b.c.W.Tracef("byzantine client %d: txn %x nonce %d groups %v (%d ops)", b.idx, id[:4], nonce, t.GroupIDs(), len(ops))
	return t, enc
}

// ByzKeys are the keys Byzantine clients write: one per group.
func ByzKeys(c *Cluster) [][]byte {
	n := len(c.Groups)
	var out [][]byte
	for g := 0; g < n; g++ {
		out = append(out, GroupKey(g, n, "zz-byzantine"))
	}
	return out
}

// writeOps writes garbage to one or two Byzantine keys and reads one to
// three workload keys (usually in several groups): a pending one holds W
// locks on its own keys and R locks the correct writers conflict with.
func (b *ByzClient) writeOps() []txn.Op {
	var ops []txn.Op
	used := map[string]bool{}
	for i := 0; i < 1+b.rng().IntN(2); i++ {
		k := b.own[b.rng().IntN(len(b.own))]
		if used[string(k)] {
			continue
		}
		used[string(k)] = true
		// write or insert: one of them fails (key exists or not found), a
		// deterministic abort vote; both are what a client may send.
		kind := txn.OpWrite
		if b.rng().IntN(2) == 0 {
			kind = txn.OpInsert
		}
		ops = append(ops, txn.Op{Kind: kind, Key: k, Value: []byte(fmt.Sprintf("byz-%d-%d", b.idx, b.nonce))})
	}
	keys := b.keys()
	for i := 0; i < 1+b.rng().IntN(3) && len(keys) > 0; i++ {
		k := keys[b.rng().IntN(len(keys))]
		if used[string(k)] {
			continue
		}
		used[string(k)] = true
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: k})
	}
	return ops
}

// Idle reports whether the client has no call outstanding or queued.
func (b *ByzClient) Idle() bool {
	for _, g := range b.conns.groups {
		if g.Core().Outstanding() > 0 || g.Core().Queued() > 0 {
			return false
		}
	}
	return true
}

// Stop fails every call still outstanding: nothing is sent again.
func (b *ByzClient) Stop() {
	for _, g := range b.conns.groups {
		g.Core().FailAll(errors.New("txntest: the Byzantine client stopped"))
	}
}

func (b *ByzClient) next() uint64 { n := b.nonce; b.nonce++; return n }

// send sends a call to every group in gs, ignoring the results unless
// then is set.
func (b *ByzClient) send(gs []bft.GroupID, call []byte, then func(bft.GroupID, client.Result)) {
	for _, g := range gs {
		g := g
		b.conns.Invoke(g, call, func(r client.Result) {
			if then != nil {
				then(g, r)
			}
		})
	}
}

// Act performs one misbehaviour drawn at random (or kind).
func (b *ByzClient) Act(kind string) {
	if kind == "" {
		kind = ByzKinds[b.rng().IntN(len(ByzKinds))]
	}
	b.Actions[kind]++
	b.c.W.Tracef("byzantine client %d: %s", b.idx, kind)
	groups := b.c.Keys.Groups()
	switch kind {
	case "abandon", "partial":
		// Fig. 5: votes, then nothing. "partial" reaches only some of its
		// groups: the others learn it by relay during recovery (K4).
		t, enc := b.build(b.writeOps(), b.next(), 0)
		gs := t.GroupIDs()
		if kind == "partial" && len(gs) > 1 {
			gs = gs[:1+b.rng().IntN(len(gs)-1)]
		}
		b.seen = append(b.seen, enc)
		b.Abandoned++
		b.send(gs, txn.NewTxnCall(enc, nil), nil)
	case "nonmatching":
		// Under one nonce, different operations to different groups.
		n := b.next()
		for _, g := range groups {
			t, enc := b.build(b.writeOps(), n, 0)
			if slices.Contains(t.GroupIDs(), g) {
				b.send([]bft.GroupID{g}, txn.NewTxnCall(enc, nil), nil)
			}
		}
	case "second-id":
		// Two transactions under one nonce, to every group.
		n := b.next()
		for i := 0; i < 2; i++ {
			t, enc := b.build(b.writeOps(), n, 0)
			b.send(t.GroupIDs(), txn.NewTxnCall(enc, nil), nil)
		}
	case "beyond-window":
		t, enc := b.build(b.writeOps(), b.nonce+b.c.Limits.Window+10+uint64(b.rng().IntN(100)), 0)
		b.send(t.GroupIDs(), txn.NewTxnCall(enc, nil), nil)
	case "replay":
		// A transaction seen before, re-sent as is (answered from records or
		// refused: E1, T3, W2).
		if len(b.seen) == 0 {
			return
		}
		enc := b.seen[b.rng().IntN(len(b.seen))]
		b.send(groups, txn.NewTxnCall(enc, nil), nil)
		if len(b.certs) > 0 {
			cert := b.certs[b.rng().IntN(len(b.certs))]
			b.send(groups, txn.NewOutcomeCall(enc, nil, cert), nil)
		}
	case "forge-owner":
		// A transaction naming another owner, in this client's envelope: a
		// plain copy, answered only from records (T3).
		ops := b.writeOps()
		t, _ := b.build(ops, 1+uint64(b.rng().IntN(50)), 0)
		other := b.c.Connect(b.idx+1, 1, 500_000).ID()
		t.Owner = other
		b.send(t.GroupIDs(), txn.NewTxnCall(t.Encode(), nil), nil)
	case "bad-cert":
		// Certificates that must not verify: made of too few, forged,
		// wrong-group or another transaction's signatures.
		t, enc := b.build(b.writeOps(), b.next(), 0)
		gs := t.GroupIDs()
		b.seen = append(b.seen, enc)
		b.send(gs, txn.NewTxnCall(enc, nil), func(g bft.GroupID, r client.Result) {
			cert := txn.Certificate{Decision: txn.Commit}
			for _, h := range gs {
				part := txn.GroupSigs{Group: h}
				for i := 0; i < 1+b.rng().IntN(2); i++ {
					var s txn.ReplicaSig
					s.Replica = bft.ReplicaID(i)
					s.Sig = make([]byte, txn.SignatureSize)
					copy(s.Sig, fmt.Sprintf("forged-%d", b.rng().IntN(1000)))
					part.Sigs = append(part.Sigs, s)
				}
				cert.Parts = append(cert.Parts, part)
			}
			if len(r.Sigs) > 0 && len(gs) > 1 {
				// A real signed vote of g, filed under another group.
				cert.Parts[0].Group = gs[len(gs)-1]
			}
			b.certs = append(b.certs, cert)
			b.send(gs, txn.NewOutcomeCall(enc, nil, cert), nil)
		})
		b.Abandoned++
	case "withhold-cert":
		// Collect the votes, build a certificate, send it to one group only.
		t, enc := b.build(b.writeOps(), b.next(), 0)
		gs := t.GroupIDs()
		votes := map[bft.GroupID]client.Result{}
		b.Abandoned++
		b.send(gs, txn.NewTxnCall(enc, nil), func(g bft.GroupID, r client.Result) {
			votes[g] = r
			if len(votes) < len(gs) {
				return
			}
			cert, ok := certificateOf(t, votes)
			if !ok {
				return
			}
			b.certs = append(b.certs, cert)
			b.send(gs[:1], txn.NewOutcomeCall(enc, nil, cert), nil)
		})
	case "lying-watermark":
		// A watermark above nonces it still holds pending (W1: groups never
		// raise past a pending record).
		n := b.next()
		t, enc := b.build(b.writeOps(), n, 0)
		b.Abandoned++
		b.send(t.GroupIDs(), txn.NewTxnCall(enc, nil), nil)
		t2, enc2 := b.build(b.writeOps(), b.next(), n+1)
		b.send(t2.GroupIDs(), txn.NewTxnCall(enc2, nil), nil)
	case "release-other":
		// A bare release of a transaction it does not own (E8).
		if len(b.seen) == 0 {
			return
		}
		enc := b.seen[b.rng().IntN(len(b.seen))]
		b.send(groups, txn.NewReleaseCall(enc, txn.Abort), nil)
	case "relay-outside":
		// A relay sent to a group outside the declared set (T4).
		t, enc := b.build(b.writeOps(), b.next(), 0)
		var outside []bft.GroupID
		for _, g := range groups {
			if !slices.Contains(t.GroupIDs(), g) {
				outside = append(outside, g)
			}
		}
		if len(outside) == 0 {
			return
		}
		b.send(t.GroupIDs()[:1], txn.NewTxnCall(enc, nil), func(g bft.GroupID, r client.Result) {
			if len(r.Sigs) == 0 {
				return
			}
			relay := txn.Relay{Decision: txn.Commit, Votes: groupSigs(g, r.Sigs)}
			b.send(outside, txn.NewRelayCall(enc, nil, relay), nil)
		})
		b.Abandoned++
	case "flood":
		// Many pending transactions at once: bounded per owner (E2, P).
		for i := 0; i < 8; i++ {
			t, enc := b.build(b.writeOps(), b.next(), 0)
			b.send(t.GroupIDs(), txn.NewTxnCall(enc, nil), nil)
			b.Abandoned++
		}
	case "meta-no-admin":
		// A metadata write without an admin signature (M5): rejected.
		ops := []txn.Op{{Kind: txn.OpWrite, Meta: true, Key: []byte("schema"), Value: []byte("byz")}}
		gv := make([]txn.GroupVersion, len(groups))
		for i, g := range groups {
			gv[i] = txn.GroupVersion{Group: g}
		}
		t := &txn.Txn{Ops: ops, Groups: gv, Owner: b.conns.ID(), Nonce: b.next()}
		b.send(groups, txn.NewTxnCall(t.Encode(), nil), nil)
	}
}

// groupSigs turns a group client's signatures into a certificate part.
func groupSigs(g bft.GroupID, sigs []client.Signed) txn.GroupSigs {
	gs := txn.GroupSigs{Group: g}
	for _, s := range sigs {
		var rs txn.ReplicaSig
		rs.Replica = s.Replica
		rs.Sig = s.Signature
		gs.Sigs = append(gs.Sigs, rs)
	}
	return gs
}

// certificateOf builds the certificate the votes make (E10), with exactly
// f+1 signatures per part.
func certificateOf(t *txn.Txn, votes map[bft.GroupID]client.Result) (txn.Certificate, bool) {
	cert := txn.Certificate{Decision: txn.Commit}
	for _, g := range t.GroupIDs() {
		r := votes[g]
		res, err := txn.DecodeResult(r.Value)
		if r.Err != nil || err != nil || res.Kind != txn.ResultVote || len(r.Sigs) == 0 {
			return cert, false
		}
		part := groupSigs(g, r.Sigs)
		if res.Decision == txn.Abort {
			return txn.Certificate{Decision: txn.Abort, Parts: []txn.GroupSigs{part}}, true
		}
		cert.Parts = append(cert.Parts, part)
	}
	return cert, true
}
