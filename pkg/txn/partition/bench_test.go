package partition

import (
	"crypto/ed25519"
	"encoding/binary"
	"testing"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/host"
	"github.com/augustus-db/augustus/pkg/txn"
)

func benchKey(prefix byte, i int) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefix}, uint64(i))
}

// execOne executes one call at replica 0 of g with the timer running only
// around Execute, and commits the batch (unsynced) outside the timer.
func execOne(b *testing.B, g *group, call host.Call) []byte {
	r := g.replicas[0]
	b.StopTimer()
	batch := r.store.NewIndexedBatch()
	g.seq++
	b.StartTimer()
	res, err := r.engine.Execute(g.seq, []host.Call{call}, batch)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := r.store.Commit(batch, false); err != nil {
		b.Fatal(err)
	}
	_ = batch.Close()
	b.StartTimer()
	return res[0]
}

// A single-group transaction of four operations (cmp, read, write, insert)
// executed on the fast path (E7), including the W1 raise that deletes the
// previous record.
func BenchmarkExecuteSingleGroup4Ops(b *testing.B) {
	w := newWorld(b, 2, 1)
	c := w.client(1)
	g := w.groups[0]
	// Seed the keys the transactions compare, read and write.
	seedB := txn.NewBuilder()
	for i := range 64 {
		seedB.Insert(benchKey(0x10, i), []byte("value-0123456789"))
	}
	g.exec(host.Call{Client: c.id, Payload: c.build(seedB).call()})
	calls := make([][]byte, b.N)
	for i := range calls {
		k := benchKey(0x10, i%64)
		bl := txn.NewBuilder().Cmp(k, []byte("value-0123456789")).Read(benchKey(0x10, (i+1)%64)).
			Write(k, []byte("value-0123456789")).Insert(benchKey(0x20, i), []byte("new-value"))
		t, err := bl.Build(txn.Header{Owner: c.id, Nonce: uint64(i + 1), Watermark: uint64(i + 1)}, []txn.GroupVersion{{Group: 0}}, w.limits)
		if err != nil {
			b.Fatal(err)
		}
		calls[i] = txn.NewTxnCall(t.Encode(), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		res := execOne(b, g, host.Call{Client: c.id, Payload: calls[i]})
		if res[0] != byte(txn.ResultVote) || res[38] != byte(txn.Commit) {
			b.Fatalf("unexpected result %x", res[:40])
		}
	}
}

// A multi-group update's vote at one group (E9: pending, signed), without
// the runtime's signature; the transaction is terminated outside the timer.
func BenchmarkExecuteMultiGroupVote(b *testing.B) {
	w := newWorld(b, 2, 1)
	c := w.client(1)
	g := w.groups[0]
	xs := make([]*tx, b.N)
	for i := range xs {
		bl := txn.NewBuilder().Insert(benchKey(0x10, i), []byte("v")).Read(benchKey(0x11, i)).Insert(benchKey(0x90, i), []byte("v")).Read(benchKey(0x91, i))
		t, err := bl.Build(txn.Header{Owner: c.id, Nonce: uint64(i), Watermark: uint64(i)}, []txn.GroupVersion{{Group: 0}, {Group: 1}}, w.limits)
		if err != nil {
			b.Fatal(err)
		}
		xs[i] = w.wrap(t)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		res := execOne(b, g, host.Call{Client: c.id, Payload: xs[i].call()})
		b.StopTimer()
		if res[38] != byte(txn.Commit) || g.engine().SignBytes(res) == nil {
			b.Fatalf("unexpected result %x", res[:40])
		}
		// Terminate (unmeasured) so the lock table and window stay small;
		// the proof lets the next transaction's watermark pass it.
		execOne(b, g, host.Call{Client: c.id, Payload: txn.NewOutcomeCall(xs[i].enc, nil, w.abortCert(xs[i], 1))})
		b.StopTimer()
		execOne(b, g, host.Call{Client: c.id, Payload: txn.NewProofCall(xs[i].enc, nil, txn.Abort, []txn.GroupSigs{w.acks(xs[i].id, 1, txn.Abort)})})
		b.StopTimer()
		b.StartTimer()
	}
}

// Validate of an outcome call carrying a COMMIT certificate of 2 groups ×
// (f+1) signatures (f=1) at one of the groups: the other group's two
// signatures are verified, the receiver's own part is compared with its
// record at execution instead (E10). Each iteration validates its own
// certificate: the verifier remembers the signatures it verified.
func BenchmarkValidateCertificate2Groups(b *testing.B) {
	w := newWorld(b, 2, 1)
	calls := benchOutcomeCalls(w, b.N)
	e := w.groups[0].engine()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := e.Validate(calls[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// The same certificate checked in full, as a client does (K2): all 2 × (f+1)
// signatures, each iteration its own.
func BenchmarkVerifyCertificate2GroupsInFull(b *testing.B) {
	w := newWorld(b, 2, 1)
	xs, certs := benchCommitted(w, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := w.keys.VerifyCertificate(xs[i].t, xs[i].id, &certs[i], bft.GroupID(0), false); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCommitted builds n distinct 2-group updates (a key of group 0 and
// highKey) of one client, each with its COMMIT certificate: a benchmark
// that verifies certificates needs a new one per iteration, since the
// verifier remembers the signatures it verified.
func benchCommitted(w *world, n int) ([]*tx, []txn.Certificate) {
	c := w.client(1)
	xs := make([]*tx, n)
	certs := make([]txn.Certificate, n)
	for i := range xs {
		xs[i] = c.build(txn.NewBuilder().Insert(benchKey(0x20, i), []byte("1")).Insert(highKey, []byte("1")))
		certs[i] = w.commitCert(xs[i])
	}
	return xs, certs
}

// benchOutcomeCalls is benchCommitted's transactions as outcome calls.
func benchOutcomeCalls(w *world, n int) [][]byte {
	xs, certs := benchCommitted(w, n)
	calls := make([][]byte, n)
	for i, x := range xs {
		calls[i] = txn.NewOutcomeCall(x.enc, nil, certs[i])
	}
	return calls
}

// Workload A's single-group transaction (4 reads, 4 writes of 4-byte values
// over a loaded store), executed and committed: what a replica's executor
// pays per transaction, the digest update included.
func BenchmarkExecuteAndCommitWorkloadA(b *testing.B) {
	const items = 20000
	w := newWorld(b, 1, 1)
	c := w.client(1)
	g := w.groups[0]
	nonce := uint64(1)
	for start := 0; start < items; start += 500 {
		bl := txn.NewBuilder()
		for i := start; i < start+500; i++ {
			bl.Insert(benchKey(0x10, i), []byte("v000"))
		}
		t, err := bl.Build(txn.Header{Owner: c.id, Nonce: nonce, Watermark: nonce}, []txn.GroupVersion{{Group: 0}}, w.limits)
		if err != nil {
			b.Fatal(err)
		}
		nonce++
		g.exec(host.Call{Client: c.id, Payload: txn.NewTxnCall(t.Encode(), nil)})
	}
	calls := make([][]byte, b.N)
	for i := range calls {
		bl := txn.NewBuilder()
		for j := range 4 {
			bl.Read(benchKey(0x10, (i*7919+j*104729)%items))
		}
		for j := range 4 {
			bl.Write(benchKey(0x10, (i*15485863+j*32452843)%items), []byte("v001"))
		}
		t, err := bl.Build(txn.Header{Owner: c.id, Nonce: nonce, Watermark: nonce}, []txn.GroupVersion{{Group: 0}}, w.limits)
		if err != nil {
			b.Fatal(err)
		}
		nonce++
		calls[i] = txn.NewTxnCall(t.Encode(), nil)
	}
	r := g.replicas[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		batch := r.store.NewIndexedBatch()
		g.seq++
		res, err := r.engine.Execute(g.seq, []host.Call{{Client: c.id, Payload: calls[i]}}, batch)
		if err != nil {
			b.Fatal(err)
		}
		if res[0][0] != byte(txn.ResultVote) || res[0][38] != byte(txn.Commit) {
			b.Fatalf("unexpected result %x", res[0][:40])
		}
		if err := r.store.Commit(batch, false); err != nil {
			b.Fatal(err)
		}
		_ = batch.Close()
	}
}

// One envelope's worth of outcome calls (32 COMMIT certificates of 2 groups,
// f=1) validated at group 0: one by one with Validate, and together with
// ValidateCalls (one batch verification of the 64 signatures of group 1).
// Every iteration has its own certificates: the verifier remembers the
// signatures it verified.
func benchValidateEnvelope(b *testing.B, together bool) { benchValidateEnvelopeOf(b, together, false) }

// benchValidateEnvelopeOf is benchValidateEnvelope; with trees, group 1's
// votes of each envelope's 32 transactions are signed as one signature tree
// per replica (pkg/bft/auth, sigtree.go), as group 1's replicas sign the
// votes of one round.
func benchValidateEnvelopeOf(b *testing.B, together, trees bool) {
	w := newWorld(b, 2, 4)
	var calls [][]byte
	if trees {
		xs, certs := benchCommitted(w, 32*b.N)
		for start := 0; start < len(xs); start += 32 {
			part := certs[start : start+32]
			for i := range part[0].Parts[1].Sigs {
				r := part[0].Parts[1].Sigs[i].Replica
				msgs := make([][]byte, len(part))
				for j := range part {
					msgs[j] = w.dom.VoteBytes(xs[start+j].id, 1, txn.Commit)
				}
				sigs := auth.SignTree(func(m []byte) []byte { return ed25519.Sign(w.privs[1][r], m) }, msgs)
				for j := range part {
					part[j].Parts[1].Sigs[i].Sig = sigs[j]
				}
			}
		}
		for i, x := range xs {
			calls = append(calls, txn.NewOutcomeCall(x.enc, nil, certs[i]))
		}
	} else {
		calls = benchOutcomeCalls(w, 32*b.N)
	}
	envs := make([][][]byte, b.N)
	for n := range envs {
		envs[n] = calls[32*n : 32*(n+1)]
	}
	e := w.groups[0].engine()
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		if together {
			for _, err := range e.ValidateCalls(envs[n]) {
				if err != nil {
					b.Fatal(err)
				}
			}
			continue
		}
		for _, call := range envs[n] {
			if err := e.Validate(call); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkValidateEnvelopeOf32CertificatesOneByOne(b *testing.B) { benchValidateEnvelope(b, false) }
func BenchmarkValidateEnvelopeOf32CertificatesTogether(b *testing.B) { benchValidateEnvelope(b, true) }
func BenchmarkValidateEnvelopeOf32TreeSignedCertificatesTogether(b *testing.B) {
	benchValidateEnvelopeOf(b, true, true)
}
