package txn

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/augustus-db/augustus/pkg/bft"
)

// txn.md T2: one encoding per transaction; the decoder accepts exactly the
// encoder's output.
func TestTxnEncodingRoundTripsBothWays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tx := genTxn(t)
		require.NoError(t, DefaultLimits().Check(tx))
		enc := tx.Encode()
		got, err := Decode(enc)
		require.NoError(t, err)
		require.True(t, got.Equal(tx), "decode(encode(t)) != t")
		require.Equal(t, enc, got.Encode(), "encode(decode(b)) != b")
	})
}

func TestCallEncodingRoundTripsBothWays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCall(t)
		enc := c.Encode()
		got, err := DecodeCall(enc)
		require.NoError(t, err)
		require.Equal(t, enc, got.Encode())
		require.Equal(t, c.Kind, got.Kind)
		require.Equal(t, c.Txn == nil, got.Txn == nil && c.Kind == CallQuery || c.Txn == nil)
		require.True(t, bytes.Equal(c.Txn, got.Txn))
		require.Equal(t, c.Admin, got.Admin)
		require.Equal(t, c.Relay, got.Relay)
		require.Equal(t, c.Cert, got.Cert)
		require.Equal(t, c.Acks, got.Acks)
		require.Equal(t, c.Decision, got.Decision)
		require.Equal(t, c.From, got.From)
	})
}

func TestResultEncodingRoundTripsBothWays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		res := genResult(t)
		enc := res.Encode()
		got, err := DecodeResult(enc)
		require.NoError(t, err)
		require.Equal(t, enc, got.Encode())
		require.Equal(t, res.Kind, got.Kind)
		require.Equal(t, res.ID, got.ID)
		require.Equal(t, res.Decision, got.Decision)
		require.Equal(t, res.Reason, got.Reason)
		require.Equal(t, res.Signed, got.Signed)
		require.Equal(t, len(res.Named), len(got.Named))
		require.Equal(t, len(res.Reads), len(got.Reads))
	})
}

// T2: the id covers the cluster and every field.
func TestTxnIDCoversTheClusterAndEveryField(t *testing.T) {
	base := func() *Txn {
		return &Txn{
			Ops:    []Op{{Kind: OpWrite, Key: []byte("k"), Value: []byte("v")}},
			Groups: []GroupVersion{{Group: 0, Version: 3}, {Group: 1, Version: 3}},
			Owner:  bft.ClientID(bytes.Repeat([]byte{7}, 32)), Nonce: 5, Watermark: 4,
		}
	}
	id := base().ID("c")
	require.Equal(t, id, base().ID("c"), "ids must be deterministic")
	require.NotEqual(t, id, base().ID("d"), "cluster id")
	muts := map[string]func(*Txn){
		"nonce":     func(t *Txn) { t.Nonce++ },
		"watermark": func(t *Txn) { t.Watermark-- },
		"owner":     func(t *Txn) { t.Owner = bft.ClientID(bytes.Repeat([]byte{8}, 32)) },
		"group":     func(t *Txn) { t.Groups = t.Groups[:1] },
		"version":   func(t *Txn) { t.Groups[1].Version++ },
		"value":     func(t *Txn) { t.Ops[0].Value = []byte("w") },
		"kind":      func(t *Txn) { t.Ops[0].Kind = OpInsert },
		"meta":      func(t *Txn) { t.Ops[0].Meta = true },
	}
	for name, mut := range muts {
		tx := base()
		mut(tx)
		require.NotEqual(t, id, tx.ID("c"), name)
	}
}

func validEncoding(t *testing.T) []byte {
	t.Helper()
	tx := &Txn{
		Ops: []Op{
			{Kind: OpCmp, Key: []byte("a"), Absent: true},
			{Kind: OpReadRange, Key: []byte("b"), End: []byte("c"), Limit: 10},
		},
		Groups: []GroupVersion{{Group: 1}, {Group: 2}},
		Owner:  bft.ClientID(bytes.Repeat([]byte{1}, 32)), Nonce: 1,
	}
	return tx.Encode()
}

// T2: the decoder rejects every spelling but the canonical one.
func TestDecodeRejectsNonCanonicalEncodings(t *testing.T) {
	enc := validEncoding(t)
	_, err := Decode(enc)
	require.NoError(t, err)
	// Offsets: format 0, owner 1..32, nonce 33, watermark 34, #groups 35,
	// groups 36..39, #ops 40, op0 at 41 (kind, flags, key len, key).
	cases := map[string]func([]byte) []byte{
		"trailing byte":      func(b []byte) []byte { return append(b, 0) },
		"truncated":          func(b []byte) []byte { return b[:len(b)-1] },
		"format":             func(b []byte) []byte { b[0] = 2; return b },
		"non-minimal nonce":  func(b []byte) []byte { return splice(b, 33, 1, []byte{0x81, 0x00}) },
		"unsorted groups":    func(b []byte) []byte { b[36], b[38] = 2, 1; return b },
		"duplicate groups":   func(b []byte) []byte { b[38] = 1; return b },
		"no groups":          func(b []byte) []byte { return splice(b, 35, 5, []byte{0}) },
		"unknown op kind":    func(b []byte) []byte { b[41] = 9; return b },
		"unknown flag":       func(b []byte) []byte { b[42] |= 0x80; return b },
		"absent on a read":   func(b []byte) []byte { b[41] = byte(OpRead); return b },
		"empty point key":    func(b []byte) []byte { return splice(b, 43, 2, []byte{0}) },
		"end before start":   func(b []byte) []byte { b[len(b)-2] = 'a'; return b },
		"zero limit":         func(b []byte) []byte { b[len(b)-1] = 0; return b },
		"two trailing bytes": func(b []byte) []byte { return append(b[:len(b):len(b)], 1, 2) },
	}
	for name, mut := range cases {
		b := mut(bytes.Clone(enc))
		_, err := Decode(b)
		require.ErrorIs(t, err, ErrMalformed, name)
	}
}

func splice(b []byte, at, n int, with []byte) []byte {
	out := append([]byte{}, b[:at]...)
	out = append(out, with...)
	return append(out, b[at+n:]...)
}

// T4: limits and the stateless rules.
func TestCheckEnforcesLimitsAndStatelessRules(t *testing.T) {
	l := DefaultLimits()
	l.MaxOps, l.MaxKeyBytes, l.MaxValueBytes, l.MaxRangeLimit, l.MaxTxnBytes = 2, 4, 4, 5, 200
	owner := bft.ClientID(bytes.Repeat([]byte{1}, 32))
	mk := func(ops ...Op) *Txn {
		return &Txn{Ops: ops, Groups: []GroupVersion{{Group: 0}}, Owner: owner, Nonce: 3, Watermark: 2}
	}
	rd := Op{Kind: OpRead, Key: []byte("k")}
	require.NoError(t, l.Check(mk(rd)))
	require.ErrorIs(t, l.Check(mk(rd, rd, rd)), ErrTooLarge)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpRead, Key: []byte("kkkkk")})), ErrTooLarge)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpWrite, Key: []byte("k"), Value: []byte("vvvvv")})), ErrTooLarge)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpReadRange, Limit: 6})), ErrInvalid)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpReadRange})), ErrInvalid)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpRead, Key: []byte("k"), Value: []byte{}})), ErrInvalid)
	require.ErrorIs(t, l.Check(mk(Op{Kind: OpCmpRange, Limit: 1})), ErrInvalid)
	mixed := mk(Op{Kind: OpWrite, Key: []byte("k"), Value: []byte("v"), Meta: true}, rd)
	require.ErrorIs(t, l.Check(mixed), ErrInvalid)
	tx := mk(rd)
	tx.Watermark = 4
	require.ErrorIs(t, l.Check(tx), ErrInvalid, "watermark above nonce")
	tx = mk(rd)
	tx.Owner = "short"
	require.ErrorIs(t, l.Check(tx), ErrInvalid)
	big := mk(Op{Kind: OpReadRange, Key: []byte("a"), Limit: 1, End: []byte("b")})
	big.Ops = append(big.Ops, Op{Kind: OpCmpRange, Key: []byte("a"), Limit: 1, Digests: make([]GroupDigest, 5)})
	for i := range big.Ops[1].Digests {
		big.Ops[1].Digests[i].Group = bft.GroupID(i)
	}
	_, err := l.CheckEncoded(big.Encode())
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestResultDecoderRejectsInconsistentVotes(t *testing.T) {
	commitWithReason := (&Result{Kind: ResultVote, Decision: Commit}).Encode()
	commitWithReason[len(commitWithReason)-2] = byte(ReasonConflict) // the reason byte, before #reads
	_, err := DecodeResult(commitWithReason)
	require.ErrorIs(t, err, ErrMalformed)

	abort := (&Result{Kind: ResultVote, Decision: Abort, Reason: ReasonStaleNonce}).Encode()
	abort[len(abort)-1] = byte(ReasonNone)
	_, err = DecodeResult(abort)
	require.ErrorIs(t, err, ErrMalformed)

	refusal := (&Result{Kind: ResultRefusal, Code: RefuseNoRecord, Message: "x"}).Encode()
	refusal[1] = resultFlagSigned
	_, err = DecodeResult(refusal)
	require.ErrorIs(t, err, ErrMalformed, "only votes and acks may ask for a signature")
}

func TestRangeDigestCoversKeysValuesAndCount(t *testing.T) {
	a := RangeDigest([]KV{{Key: []byte("a"), Value: []byte("1")}})
	require.Equal(t, a, RangeDigest([]KV{{Key: []byte("a"), Value: []byte("1")}}))
	require.NotEqual(t, a, RangeDigest([]KV{{Key: []byte("a"), Value: []byte("2")}}))
	require.NotEqual(t, a, RangeDigest([]KV{{Key: []byte("b"), Value: []byte("1")}}))
	require.NotEqual(t, a, RangeDigest(nil))
	// Length prefixes keep ("ab","") apart from ("a","b").
	require.NotEqual(t, RangeDigest([]KV{{Key: []byte("ab"), Value: []byte{}}}), RangeDigest([]KV{{Key: []byte("a"), Value: []byte("b")}}))
}

func TestAbortErrorsMatchTheirReasonSentinels(t *testing.T) {
	for r := ReasonConflict; r < reasonEnd; r++ {
		err := (&Result{Kind: ResultVote, Decision: Abort, Reason: r}).Err()
		require.ErrorIs(t, err, ErrAborted)
		require.ErrorIs(t, err, reasonErrors[r], r.String())
	}
	require.NoError(t, (&Result{Kind: ResultVote, Decision: Commit}).Err())
	require.ErrorIs(t, (&Result{Kind: ResultRefusal, Code: RefuseNoRecord}).Err(), ErrNoRecord)
	require.ErrorIs(t, (&Result{Kind: ResultQueued}).Err(), ErrQueued)
}
