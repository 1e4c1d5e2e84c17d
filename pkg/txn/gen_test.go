package txn

import (
	"slices"

	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// Generators of valid values for the property tests.

func genBytes(t *rapid.T, label string, minLen, maxLen int) []byte {
	return rapid.SliceOfN(rapid.Byte(), minLen, maxLen).Draw(t, label)
}

func genGroups(t *rapid.T, label string, min, max int) []bft.GroupID {
	ids := rapid.SliceOfNDistinct(rapid.Uint32Range(0, 1<<20), min, max, rapid.ID[uint32]).Draw(t, label)
	slices.Sort(ids)
	out := make([]bft.GroupID, len(ids))
	for i, g := range ids {
		out[i] = bft.GroupID(g)
	}
	return out
}

func genOp(t *rapid.T) Op {
	op := Op{Kind: OpKind(rapid.IntRange(int(OpCmp), int(OpCmpRange)).Draw(t, "kind"))}
	op.Meta = rapid.Bool().Draw(t, "meta")
	if op.Kind.IsRange() {
		op.Key = genBytes(t, "start", 0, 6)
		if rapid.Bool().Draw(t, "bounded") {
			op.End = append(slices.Clone(op.Key), genBytes(t, "suffix", 1, 4)...)
		}
		op.Limit = rapid.Uint32Range(1, 1000).Draw(t, "limit")
		if op.Kind == OpCmpRange {
			for _, g := range genGroups(t, "digest groups", 1, 3) {
				var d [32]byte
				copy(d[:], genBytes(t, "digest", 32, 32))
				op.Digests = append(op.Digests, GroupDigest{Group: g, Digest: d})
			}
		}
		return op
	}
	op.Key = genBytes(t, "key", 1, 8)
	if op.Kind == OpCmp && rapid.Bool().Draw(t, "absent") {
		op.Absent = true
		return op
	}
	if op.Kind.hasValue() {
		op.Value = genBytes(t, "value", 0, 8)
	}
	return op
}

func genTxn(t *rapid.T) *Txn {
	tx := &Txn{Owner: bft.ClientID(genBytes(t, "owner", 32, 32))}
	tx.Nonce = rapid.Uint64().Draw(t, "nonce")
	tx.Watermark = rapid.Uint64Range(0, tx.Nonce).Draw(t, "watermark")
	for _, g := range genGroups(t, "groups", 1, 4) {
		tx.Groups = append(tx.Groups, GroupVersion{Group: g, Version: rapid.Uint64().Draw(t, "version")})
	}
	n := rapid.IntRange(1, 6).Draw(t, "ops")
	for range n {
		tx.Ops = append(tx.Ops, genOp(t))
	}
	if tx.WritesMetadata() { // a metadata transaction has metadata operations only
		for i := range tx.Ops {
			tx.Ops[i].Meta = true
		}
	}
	return tx
}

func genAdmin(t *rapid.T) *AdminSig {
	if !rapid.Bool().Draw(t, "has admin") {
		return nil
	}
	a := &AdminSig{}
	copy(a.Key[:], genBytes(t, "admin key", 32, 32))
	copy(a.Sig[:], genBytes(t, "admin sig", 64, 64))
	return a
}

func genSigs(t *rapid.T, g bft.GroupID) GroupSigs {
	rs := rapid.SliceOfNDistinct(rapid.Uint32Range(0, 30), 1, 4, rapid.ID[uint32]).Draw(t, "replicas")
	slices.Sort(rs)
	gs := GroupSigs{Group: g}
	for _, r := range rs {
		var s ReplicaSig
		s.Replica = bft.ReplicaID(r)
		// A plain signature or a tree signature of depth 1–3 (the decoder
		// checks sizes only).
		n := SignatureSize
		if d := rapid.IntRange(0, 3).Draw(t, "tree depth"); d > 0 {
			n = auth.TreeSignatureSize(d)
		}
		s.Sig = genBytes(t, "sig", n, n)
		gs.Sigs = append(gs.Sigs, s)
	}
	return gs
}

func genDecision(t *rapid.T, label string) Decision {
	return Decision(rapid.IntRange(int(Commit), int(Abort)).Draw(t, label))
}

func genCall(t *rapid.T) *Call {
	c := &Call{Kind: rapid.SampledFrom([]CallKind{CallTxn, CallOutcome, CallRelease, CallProof, CallQuery}).Draw(t, "call kind")}
	if c.Kind == CallQuery {
		c.From = rapid.Uint64().Draw(t, "from")
		return c
	}
	c.Txn = genTxn(t).Encode()
	c.Admin = genAdmin(t)
	switch c.Kind {
	case CallTxn:
		if rapid.Bool().Draw(t, "relay") {
			c.Relay = &Relay{Decision: genDecision(t, "relay decision"), Votes: genSigs(t, bft.GroupID(rapid.Uint32().Draw(t, "g")))}
		}
	case CallOutcome:
		c.Cert = &Certificate{Decision: genDecision(t, "cert decision")}
		for _, g := range genGroups(t, "cert groups", 1, 3) {
			c.Cert.Parts = append(c.Cert.Parts, genSigs(t, g))
		}
	case CallRelease:
		c.Decision = genDecision(t, "release")
	case CallProof:
		c.Decision = genDecision(t, "proof")
		for _, g := range genGroups(t, "ack groups", 1, 3) {
			c.Acks = append(c.Acks, genSigs(t, g))
		}
	}
	return c
}

func genNamed(t *rapid.T) Named { return Named{Txn: genTxn(t).Encode(), Admin: genAdmin(t)} }

func genReads(t *rapid.T) []Read {
	n := rapid.IntRange(0, 3).Draw(t, "reads")
	var out []Read
	op := 0
	for range n {
		op += rapid.IntRange(1, 3).Draw(t, "op step")
		rd := Read{Op: op, Range: rapid.Bool().Draw(t, "range")}
		if rd.Range {
			keys := rapid.SliceOfNDistinct(rapid.StringN(1, 4, 4), 0, 3, rapid.ID[string]).Draw(t, "keys")
			slices.Sort(keys)
			for _, k := range keys {
				rd.Entries = append(rd.Entries, KV{Key: []byte(k), Value: genBytes(t, "v", 0, 4)})
			}
		} else if rd.Present = rapid.Bool().Draw(t, "present"); rd.Present {
			rd.Value = genBytes(t, "value", 0, 4)
		}
		out = append(out, rd)
	}
	return out
}

func genResult(t *rapid.T) *Result {
	res := &Result{Kind: rapid.SampledFrom([]ResultKind{ResultVote, ResultAck, ResultQueued, ResultRefusal, ResultProofAck, ResultQuery}).Draw(t, "result kind")}
	if res.Kind == ResultQuery {
		q := &QueryResult{Group: bft.GroupID(rapid.Uint32().Draw(t, "group")), Watermark: rapid.Uint64().Draw(t, "w")}
		if q.HasMark = rapid.Bool().Draw(t, "has mark"); q.HasMark {
			q.Mark = rapid.Uint64().Draw(t, "mark")
		}
		nonce := rapid.Uint64Range(0, 1<<40).Draw(t, "first nonce")
		for i := range rapid.IntRange(0, 3).Draw(t, "records") {
			rec := QueryRecord{Nonce: nonce + uint64(i)*3, State: RecordState(rapid.IntRange(1, 3).Draw(t, "state"))}
			copy(rec.ID[:], genBytes(t, "id", 32, 32))
			rec.Vote = Decision(rapid.IntRange(0, 2).Draw(t, "vote"))
			rec.Outcome = Decision(rapid.IntRange(0, 2).Draw(t, "outcome"))
			rec.Unproven = rapid.Bool().Draw(t, "unproven")
			if rapid.Bool().Draw(t, "has txn") {
				n := genNamed(t)
				rec.Txn = &n
			}
			q.Records = append(q.Records, rec)
		}
		q.More = rapid.Bool().Draw(t, "more")
		q.Next = rapid.Uint64().Draw(t, "next")
		res.Query = q
		return res
	}
	copy(res.ID[:], genBytes(t, "id", 32, 32))
	res.Group = bft.GroupID(rapid.Uint32().Draw(t, "group"))
	res.Watermark = rapid.Uint64().Draw(t, "watermark")
	switch res.Kind {
	case ResultVote:
		res.Signed = rapid.Bool().Draw(t, "signed")
		res.Decision = genDecision(t, "vote")
		if res.Decision == Commit {
			res.Reads = genReads(t)
			break
		}
		res.Reason = Reason(rapid.IntRange(1, int(reasonEnd)-1).Draw(t, "reason"))
		switch {
		case res.Reason == ReasonConflict:
			res.Named = []Named{genNamed(t)}
		case res.Reason.hasOp():
			res.Op = rapid.IntRange(0, 1<<20).Draw(t, "op")
		case res.Reason == ReasonStaleMetadata:
			res.Version = rapid.Uint64().Draw(t, "version")
			for range rapid.IntRange(0, 2).Draw(t, "blockers") {
				res.Named = append(res.Named, genNamed(t))
			}
		case res.Reason == ReasonWrongGroups:
			res.Want = genGroups(t, "want", 0, 3)
		}
	case ResultAck:
		res.Signed = rapid.Bool().Draw(t, "signed")
		res.Decision = genDecision(t, "outcome")
	case ResultQueued:
		for range rapid.IntRange(0, 2).Draw(t, "blockers") {
			res.Named = append(res.Named, genNamed(t))
		}
	case ResultRefusal:
		res.Code = RefusalCode(rapid.IntRange(1, int(refuseEnd)-1).Draw(t, "code"))
		res.Message = rapid.String().Draw(t, "message")
	}
	return res
}
