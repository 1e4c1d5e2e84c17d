package coord

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// echoEnv answers every call at once as a correct group would, without
// engines or crypto (signatures are well-formed filler: the core checks
// their shape, the group client their validity), so a benchmark measures
// the core alone: encoding, ids, routing, decoding, certificates,
// termination and proofs.
type echoEnv struct {
	now     time.Time
	pending []func()
	sigs    []client.Signed
	// signed and reads describe the transactions benchmarked (so the env
	// need not decode them): whether votes are signed, which operations
	// are reads.
	signed bool
	reads  []int
}

func (e *echoEnv) Invoke(g bft.GroupID, payload []byte, done func(client.Result)) {
	call, err := txn.DecodeCall(payload)
	if err != nil {
		panic(err)
	}
	var res txn.Result
	var sigs []client.Signed
	if call.Kind == txn.CallQuery {
		res = txn.Result{Kind: txn.ResultQuery, Query: &txn.QueryResult{Group: g}}
	} else {
		res = txn.Result{ID: txn.ID(worldCluster, call.Txn), Group: g}
		switch call.Kind {
		case txn.CallTxn:
			res.Kind, res.Decision, res.Signed = txn.ResultVote, txn.Commit, e.signed
			for _, i := range e.reads {
				res.Reads = append(res.Reads, txn.Read{Op: i, Present: true, Value: []byte("value")})
			}
		case txn.CallOutcome:
			res.Kind, res.Decision, res.Signed = txn.ResultAck, call.Cert.Decision, true
		case txn.CallRelease:
			res.Kind, res.Decision = txn.ResultAck, call.Decision
		case txn.CallProof:
			res.Kind = txn.ResultProofAck
		}
		if res.Signed {
			sigs = e.sigs
		}
	}
	out := client.Result{Value: res.Encode(), Sigs: sigs}
	e.pending = append(e.pending, func() { done(out) })
}

func (e *echoEnv) AfterFunc(time.Duration, func()) func() { return func() {} }
func (e *echoEnv) Now() time.Time                         { return e.now }

func (e *echoEnv) drain() {
	for len(e.pending) > 0 {
		f := e.pending[0]
		e.pending = e.pending[1:]
		f()
	}
}

func benchCore(b *testing.B, signed bool, reads []int, build func(i int) *txn.Builder) {
	pubs := map[bft.GroupID][]ed25519.PublicKey{}
	for g := range 2 {
		for r := range 4 {
			pubs[bft.GroupID(g)] = append(pubs[bft.GroupID(g)], seedKey(byte(1+4*g+r)).Public().(ed25519.PublicKey))
		}
	}
	keys, err := txn.NewKeys(worldCluster, pubs, nil)
	if err != nil {
		b.Fatal(err)
	}
	pmap, err := oracle.FromCluster(&cluster.Cluster{Partitions: cluster.SplitFirstByte(2)})
	if err != nil {
		b.Fatal(err)
	}
	env := &echoEnv{now: time.Unix(1, 0), signed: signed, reads: reads}
	for r := range 2 {
		env.sigs = append(env.sigs, client.Signed{Replica: bft.ReplicaID(r), Signature: make([]byte, 64)})
	}
	owner := bft.ClientID(seedKey(99).Public().(ed25519.PublicKey))
	c, err := NewCore(Config{Owner: owner, Keys: keys, Map: pmap}, env)
	if err != nil {
		b.Fatal(err)
	}
	c.Startup(func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	})
	env.drain()
	ops := make([][]txn.Op, 64)
	for i := range ops {
		ops[i] = build(i).Ops()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ok := false
		c.start(ops[i%len(ops)], Options{}, func(_ *Result, err error) {
			if err != nil {
				b.Fatal(err)
			}
			ok = true
		})
		env.drain()
		if !ok || !c.Idle() {
			b.Fatal("not finished")
		}
	}
}

// BenchmarkCore measures the core's CPU per transaction, from Start to the
// last proof, with groups that answer at once: single-group (E7),
// multi-group read-only (E8: votes and the owner's release), multi-group
// update (E9, E10, K3, W2: votes, certificate, outcome, proofs).
func BenchmarkCore(b *testing.B) {
	key := func(g, i int) []byte { return []byte{byte(0x10 + 0x80*g), byte(i)} }
	b.Run("single", func(b *testing.B) {
		benchCore(b, false, []int{0}, func(i int) *txn.Builder {
			return txn.NewBuilder().Read(key(0, i)).Write(key(0, i+1), []byte("value"))
		})
	})
	b.Run("multi_read", func(b *testing.B) {
		benchCore(b, false, nil, func(i int) *txn.Builder { return txn.NewBuilder().Read(key(0, i)).Read(key(1, i)) })
	})
	b.Run("multi_update", func(b *testing.B) {
		benchCore(b, true, nil, func(i int) *txn.Builder {
			return txn.NewBuilder().Cmp(key(0, i), []byte("value")).Write(key(0, i), []byte("value2")).
				Cmp(key(1, i), []byte("value")).Write(key(1, i), []byte("value2"))
		})
	})
}
