package partition

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md T4: stateless validation, the same at every replica (the harness
// checks that every replica returns the same error text): decoding, limits,
// the receiving group in the declared set, the signatures T3 and E10 rely
// on, and the shape of each call kind.
func TestRuleT4ValidateRefusesWhatNoStateCouldMakeValid(t *testing.T) {
	w := newWorld(t, 2, 3)
	c := w.client(1)
	g := w.groups[0]
	single := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")))
	multiRO := c.build(txn.NewBuilder().Read(k("a")).Read(highKey))
	multiUp := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Insert(highKey, []byte("1")))
	onlyOne := c.build(txn.NewBuilder().Insert(highKey, []byte("1")))
	unknownGroup := c.buildAt(txn.NewBuilder().Read(k("a")), []txn.GroupVersion{{Group: 0}, {Group: 9}})

	cases := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"garbage", []byte("hello"), txn.ErrMalformed},
		{"empty", nil, txn.ErrMalformed},
		{"truncated transaction", txn.NewTxnCall(single.enc[:len(single.enc)-1], nil), txn.ErrMalformed},
		{"not involved", onlyOne.call(), txn.ErrNotInvolved},
		{"unknown group", unknownGroup.call(), txn.ErrInvalid},
		{"certificate for a single-group transaction", txn.NewOutcomeCall(single.enc, nil, w.abortCert(single, 0)), txn.ErrInvalid},
		{"release of an update", txn.NewReleaseCall(multiUp.enc, txn.Commit), txn.ErrInvalid},
		{"release of a single-group transaction", txn.NewReleaseCall(single.enc, txn.Commit), txn.ErrInvalid},
		{"proof for a read-only transaction", txn.NewProofCall(multiRO.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(multiRO.id, 1, txn.Commit)}), txn.ErrInvalid},
		{"proof with votes for acks", txn.NewProofCall(multiUp.enc, nil, txn.Commit, []txn.GroupSigs{w.votes(multiUp.id, 1, txn.Commit)}), txn.ErrSignature},
		{"proof missing a group", txn.NewProofCall(multiUp.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(multiUp.id, 0, txn.Commit)}), txn.ErrInvalid},
		{"relay with forged votes", txn.NewRelayCall(multiUp.enc, nil, txn.Relay{Decision: txn.Abort, Votes: w.votes(multiUp.id, 1, txn.Commit)}), txn.ErrSignature},
	}
	for _, tc := range cases {
		_, err := g.call(c.id, tc.payload)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	for name, ok := range map[string][]byte{
		"query":      txn.NewQueryCall(0),
		"single":     single.call(),
		"release":    txn.NewReleaseCall(multiRO.enc, txn.Commit),
		"proof":      txn.NewProofCall(multiUp.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(multiUp.id, 1, txn.Commit)}),
		"own part":   txn.NewOutcomeCall(multiUp.enc, nil, txn.Certificate{Decision: txn.Abort, Parts: []txn.GroupSigs{{Group: 0, Sigs: []txn.ReplicaSig{{Replica: 2, Sig: make([]byte, txn.SignatureSize)}, {Replica: 3, Sig: make([]byte, txn.SignatureSize)}}}}}),
		"commit own": txn.NewOutcomeCall(multiUp.enc, nil, txn.Certificate{Decision: txn.Commit, Parts: []txn.GroupSigs{{Group: 0, Sigs: []txn.ReplicaSig{{Replica: 0, Sig: make([]byte, txn.SignatureSize)}, {Replica: 3, Sig: make([]byte, txn.SignatureSize)}}}, w.votes(multiUp.id, 1, txn.Commit)}}),
	} {
		require.NoError(t, g.validate(ok), name)
	}
}

// Execute never trusts Validate: a call that fails validation reaching it
// anyway gets the same refusal at every replica, and nothing changes.
func TestExecuteRefusesUndecodableCallsDeterministically(t *testing.T) {
	w := newWorld(t, 2, 3)
	g := w.groups[0]
	before := g.sums()[0]
	raw := g.exec(host.Call{Client: bft.ClientID("x"), Payload: []byte("junk")})[0]
	res, err := txn.DecodeResult(raw)
	require.NoError(t, err)
	require.Equal(t, txn.RefuseInvalid, res.Code)
	require.Equal(t, before, g.sums()[0])
}

// Any bytes: Validate never panics, and whatever it accepts executes without
// a local fault at every replica alike.
func FuzzValidateThenExecute(f *testing.F) {
	w := newWorld(f, 2, 2)
	c := w.client(1)
	x := c.build(txn.NewBuilder().Insert(k("a"), []byte("1")).Read(highKey))
	f.Add(x.call())
	f.Add(txn.NewOutcomeCall(x.enc, nil, w.abortCert(x, 1)))
	f.Add(txn.NewReleaseCall(x.enc, txn.Abort))
	f.Add(txn.NewQueryCall(3))
	f.Add(txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 1, txn.Commit)}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		g := w.groups[0]
		if g.engine().Validate(payload) != nil {
			return
		}
		g.seq++
		var first []byte
		for i, r := range g.replicas {
			b := r.store.NewIndexedBatch()
			res, err := r.engine.Execute(g.seq, []host.Call{{Client: c.id, Payload: payload}}, b)
			if err != nil {
				t.Fatalf("local fault on a valid call: %v", err)
			}
			if err := r.store.Commit(b, false); err != nil {
				t.Fatal(err)
			}
			_ = b.Close()
			if _, err := txn.DecodeResult(res[0]); err != nil {
				t.Fatalf("undecodable result: %v", err)
			}
			if i == 0 {
				first = res[0]
			} else if string(first) != string(res[0]) {
				t.Fatalf("replicas disagree")
			}
		}
	})
}

// ValidateCalls (host.CallsValidator) checks the signatures of many calls
// in one batch; each call's verdict must still be exactly what Validate
// says of it alone — the same error text, whatever travels with it — or
// replicas that computed a verdict one way and the other would answer
// differently (T4). Random envelopes of valid calls, calls with a forged
// signature (which fail the batch and send every call back to Validate),
// calls that fail for another reason after a deferred signature (an
// unknown replica in a certificate's second part), certificates of tree
// signatures (valid, another leaf's, malformed) and undecodable ones.
func TestRuleT4ValidateCallsGivesEachCallValidatesVerdict(t *testing.T) {
	w := newWorld(t, 3, 4)
	c := w.client(1)
	e := w.groups[0].engine()
	var pool [][]byte
	for i := range 6 {
		x := c.build(txn.NewBuilder().Insert(k(fmt.Sprintf("a%d", i)), []byte("1")).Insert(highKey, []byte("1")))
		cert := w.commitCert(x)
		pool = append(pool,
			txn.NewOutcomeCall(x.enc, nil, cert),
			txn.NewProofCall(x.enc, nil, txn.Commit, []txn.GroupSigs{w.acks(x.id, 1, txn.Commit)}),
			txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: w.votes(x.id, 1, txn.Commit)}))
		forged := w.commitCert(x)
		forged.Parts[1].Sigs[1].Sig[5] ^= 1
		pool = append(pool, txn.NewOutcomeCall(x.enc, nil, forged))
		badRelay := w.votes(x.id, 1, txn.Abort) // signed abort, claimed commit
		pool = append(pool, txn.NewRelayCall(x.enc, nil, txn.Relay{Decision: txn.Commit, Votes: badRelay}))
	}
	// Tree signatures (pkg/bft/auth, sigtree.go) in group 1's part: valid,
	// another leaf's (a valid root with the wrong path), and malformed
	// inside a valid size (depth 0), which fails a batch without a
	// signature check.
	tr := c.build(txn.NewBuilder().Insert(k("t"), []byte("1")).Insert(highKey, []byte("1")))
	leaves := [][]byte{w.dom.VoteBytes(tr.id, 1, txn.Commit), w.dom.VoteBytes(tr.id, 1, txn.Abort), w.dom.AckBytes(tr.id, 1, txn.Commit)}
	for _, mk := range []func(tree [][]byte) []byte{
		func(tree [][]byte) []byte { return tree[0] },
		func(tree [][]byte) []byte { return tree[1] },
		func(tree [][]byte) []byte { b := bytes.Clone(tree[0]); b[txn.SignatureSize] = 0; return b },
	} {
		cert := w.commitCert(tr)
		for i := range cert.Parts[1].Sigs {
			priv := w.privs[1][cert.Parts[1].Sigs[i].Replica]
			cert.Parts[1].Sigs[i].Sig = mk(auth.SignTree(func(m []byte) []byte { return ed25519.Sign(priv, m) }, leaves))
		}
		pool = append(pool, txn.NewOutcomeCall(tr.enc, nil, cert))
	}
	treeCalls := pool[len(pool)-3:]
	require.NoError(t, e.Validate(treeCalls[0]), "a certificate of tree signatures")
	require.ErrorIs(t, e.Validate(treeCalls[1]), txn.ErrSignature, "another leaf's path")
	require.ErrorIs(t, e.Validate(treeCalls[2]), txn.ErrSignature, "a malformed tree signature")
	three := c.build(txn.NewBuilder().Insert(k("b"), []byte("1")).Insert(highKey, []byte("1")).Insert([]byte{0xc0}, []byte("1")))
	late := w.commitCert(three)
	late.Parts[1].Sigs[1].Sig[0] ^= 1                // a forged signature in part 1 …
	late.Parts[2].Sigs[1].Replica = bft.ReplicaID(9) // … and a shape error in part 2
	pool = append(pool, txn.NewOutcomeCall(three.enc, nil, late), txn.NewOutcomeCall(three.enc, nil, w.commitCert(three)),
		[]byte("junk"), txn.NewQueryCall(0))

	same := func(t require.TestingT, calls [][]byte) {
		got := e.ValidateCalls(calls)
		require.Len(t, got, len(calls))
		for i, call := range calls {
			want := e.Validate(call)
			if want == nil {
				require.NoError(t, got[i], "call %d", i)
				continue
			}
			require.Error(t, got[i], "call %d: Validate says %v", i, want)
			require.Equal(t, want.Error(), got[i].Error(), "call %d", i)
		}
	}
	// Every call of the pool alone and beside two others (rapid's draws
	// favour small indexes, so the end of the pool needs this sweep).
	for i := range pool {
		same(t, [][]byte{pool[i]})
		same(t, [][]byte{pool[(i+1)%len(pool)], pool[i], pool[(i+7)%len(pool)]})
	}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(rt, "n")
		calls := make([][]byte, n)
		for i := range calls {
			calls[i] = pool[rapid.IntRange(0, len(pool)-1).Draw(rt, "call")]
		}
		same(rt, calls)
	})
}
