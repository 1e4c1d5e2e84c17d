package coord

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// bankAccounts are spread over both groups.
var bankAccounts = [][]byte{[]byte("a0"), []byte("a1"), []byte("a2"), {0x90, 0}, {0x90, 1}, {0x91, 2}}

const bankBalance = 100

// A bank under faults: correct clients move money between accounts in both
// groups (read both balances, then compare-and-write both: K1–K5 at work on
// every conflict), while Byzantine owners abandon transfers after the votes
// (K4 must finish them), one replica per group is Byzantine (K2), the
// network delays and loses messages and one client crashes and restarts
// mid-run (W3). At the end every correct transfer terminated, nothing is
// pending (an audit reading every account commits), no correct group
// answered anything anomalous, and the total is unchanged (X2).
func TestBankAcrossGroupsUnderFaults(t *testing.T) {
	seeds := 6
	if s, err := strconv.Atoi(os.Getenv("COORD_SEEDS")); err == nil {
		seeds = s
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runBank(t, seed) })
	}
}

func runBank(t *testing.T, seed uint64) {
	w := newWorld(t, 2, 100+seed)
	behaviours := []string{"wrong results", "wrong votes", "bad signatures", "refusals", "silence"}
	for i, g := range w.groups {
		g.replicas[(int(seed)+i)%4].byz = byzantine[behaviours[(int(seed)+i)%len(behaviours)]]
	}
	m := NewMetrics(nil)
	setup := w.newClient(40, observe(nil, m))
	b := txn.NewBuilder()
	for _, a := range bankAccounts {
		b.Insert(a, []byte(strconv.Itoa(bankBalance)))
	}
	_, err := setup.do(b)
	require.NoError(t, err)
	w.settle()
	w.drop = 0.05
	w.minDelay, w.maxDelay = time.Millisecond, 8*time.Millisecond

	var clients []*wclient
	for i := range 3 {
		clients = append(clients, w.newClient(byte(50+i), observe(nil, m)))
	}
	byz := w.newRaw(90)
	byzNonce := uint64(0)
	const transfers = 8
	done := make([]int, len(clients))
	var transfer func(ci int)
	transfer = func(ci int) {
		c := clients[ci]
		if done[ci] == transfers || c.core == nil {
			return
		}
		from := bankAccounts[w.rng.IntN(len(bankAccounts))]
		to := bankAccounts[w.rng.IntN(len(bankAccounts))]
		if string(from) == string(to) {
			w.after(0, func() { transfer(ci) })
			return
		}
		amount := 1 + w.rng.IntN(5)
		c.core.Start(txn.NewBuilder().Read(from).Read(to).Ops(), Options{}, func(res *Result, err error) {
			if err != nil {
				w.after(time.Millisecond, func() { transfer(ci) })
				return
			}
			fv, tv := res.Ops[0].Value, res.Ops[1].Value
			fb, _ := strconv.Atoi(string(fv))
			tb, _ := strconv.Atoi(string(tv))
			ops := txn.NewBuilder().Cmp(from, fv).Cmp(to, tv).
				Write(from, []byte(strconv.Itoa(fb-amount))).Write(to, []byte(strconv.Itoa(tb+amount))).Ops()
			if w.rng.IntN(4) == 0 {
				// A Byzantine owner sends the same transfer as its own and
				// walks away after the votes.
				bt := &txn.Txn{Ops: ops, Owner: byz.id, Nonce: byzNonce, Watermark: byzNonce}
				for _, g := range txn.InvolvedGroups(ops, w.pmap) {
					bt.Groups = append(bt.Groups, txn.GroupVersion{Group: g})
				}
				byzNonce++
				enc := bt.Encode()
				for _, gv := range bt.Groups {
					(*wenv)(byz).Invoke(gv.Group, txn.NewTxnCall(enc, nil), func(client.Result) {})
				}
				w.after(time.Millisecond, func() { transfer(ci) })
				return
			}
			c.core.Start(ops, Options{}, func(res *Result, err error) {
				if err == nil {
					done[ci]++
				}
				w.after(time.Millisecond, func() { transfer(ci) })
			})
		})
	}
	for ci := range clients {
		w.runUntil("start-up", time.Minute, func() bool { return clients[ci].started })
		w.after(0, func() { transfer(ci) })
	}
	// One client crashes mid-run and restarts (W3).
	w.runFor(150 * time.Millisecond)
	victim := clients[int(seed)%len(clients)]
	w.cut[string(victim.id)] = true
	victim.crash()
	w.runFor(50 * time.Millisecond)
	delete(w.cut, string(victim.id))
	victim.boot()
	vi := int(seed) % len(clients)
	w.runUntil("restart", time.Minute, func() bool { return victim.started })
	w.after(0, func() { transfer(vi) })

	w.runUntil("every transfer", 10*time.Minute, func() bool {
		for _, d := range done {
			if d < transfers {
				return false
			}
		}
		return true
	})
	w.drop = 0
	w.settle()
	// The audit: every account, in one multi-group read-only transaction.
	audit := txn.NewBuilder()
	for _, a := range bankAccounts {
		audit.Read(a)
	}
	res, err := setup.do(audit)
	require.NoError(t, err)
	total := 0
	for _, op := range res.Ops {
		n, err := strconv.Atoi(string(op.Value))
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, bankBalance*len(bankAccounts), total, "money created or destroyed")
	w.settle()
	require.Empty(t, anomalies(m))
	for _, c := range append(clients, setup) {
		st := c.core.Stats()
		require.Equal(t, st.NextNonce, st.Watermark, "everything finished and proven")
	}
	// Correct replicas agree on the state of every group.
	for _, g := range w.groups {
		sums := g.sums()
		for i := 1; i < len(sums); i++ {
			require.Equal(t, sums[0], sums[i])
		}
	}
}
