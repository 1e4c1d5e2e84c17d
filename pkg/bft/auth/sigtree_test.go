package auth

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func treeMsgs(n int) [][]byte {
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = []byte(fmt.Sprintf("AUGUSTUS-TXN-VOTE-v1\x00 txn %d", i))
	}
	return msgs
}

func newTestVerifier(t testing.TB, g group, cache int) *Verifier {
	t.Helper()
	v, err := NewVerifier(VerifierConfig{Replicas: g.pubs, Policy: ClientsListed, SignatureCache: cache})
	require.NoError(t, err)
	return v
}

func TestSignTreeGivesEveryMessageASignatureThatVerifiesIt(t *testing.T) {
	g := newGroup(t, 1)
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 33, 100} {
		msgs := treeMsgs(n)
		sigs := SignTree(g.signers[0].Sign, msgs)
		require.Len(t, sigs, n)
		v := newTestVerifier(t, g, -1)
		for i, m := range msgs {
			require.True(t, ValidSignatureSize(len(sigs[i])), "n=%d: size %d", n, len(sigs[i]))
			require.True(t, VerifySignature(g.pubs[0], m, sigs[i]), "n=%d leaf %d", n, i)
			require.NoError(t, v.VerifyReplica(0, m, sigs[i]), "n=%d leaf %d", n, i)
		}
		if n == 1 {
			require.Equal(t, g.signers[0].Sign(msgs[0]), sigs[0], "a lone message is signed plain")
		}
	}
}

func TestTreeSignatureDoesNotVerifyAnotherMessage(t *testing.T) {
	g := newGroup(t, 2)
	msgs := treeMsgs(5)
	sigs := SignTree(g.signers[0].Sign, msgs)
	v := newTestVerifier(t, g, 0)
	for i := range msgs {
		for j := range msgs {
			if i != j {
				require.False(t, VerifySignature(g.pubs[0], msgs[j], sigs[i]), "leaf %d's signature for message %d", i, j)
				require.Error(t, v.VerifyReplica(0, msgs[j], sigs[i]))
			}
		}
		require.Error(t, v.VerifyReplica(1, msgs[i], sigs[i]), "another replica's key")
		require.False(t, VerifySignature(g.pubs[0], []byte("never signed"), sigs[i]))
	}
}

// Every byte of a tree signature matters: the root's signature, the depth,
// the index and each sibling. Changing any one makes it fail — in
// particular, a path verifies under one index only (the padding is not a
// copy of a leaf).
func TestTreeSignatureRejectsEveryChangedByte(t *testing.T) {
	g := newGroup(t, 1)
	for _, n := range []int{2, 3, 5, 6} {
		msgs := treeMsgs(n)
		sigs := SignTree(g.signers[0].Sign, msgs)
		for i, sig := range sigs {
			for pos := range sig {
				for _, flip := range []byte{1, 0x80} {
					bad := bytes.Clone(sig)
					bad[pos] ^= flip
					require.False(t, VerifySignature(g.pubs[0], msgs[i], bad), "n=%d leaf %d: byte %d ^ %#x", n, i, pos, flip)
				}
			}
			require.False(t, VerifySignature(g.pubs[0], msgs[i], sig[:len(sig)-1]), "truncated")
			require.False(t, VerifySignature(g.pubs[0], msgs[i], append(bytes.Clone(sig), 0)), "extended")
		}
	}
}

// The root's signature is not a signature of any message of the tree: it
// covers the tagged root only.
func TestTreeRootSignatureIsNotAPlainSignatureOfALeaf(t *testing.T) {
	g := newGroup(t, 1)
	msgs := treeMsgs(4)
	sigs := SignTree(g.signers[0].Sign, msgs)
	for i, m := range msgs {
		require.False(t, VerifySignature(g.pubs[0], m, sigs[i][:ed25519.SignatureSize]))
	}
	signed, root, err := TreeRoot(msgs[0], sigs[0])
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(signed, []byte(TreeTag)))
	require.True(t, VerifySignature(g.pubs[0], signed, root))
}

func TestTreeRootRejectsMalformedSignatures(t *testing.T) {
	msg := []byte("m")
	valid := make([]byte, TreeSignatureSize(2))
	valid[ed25519.SignatureSize] = 2
	_, _, err := TreeRoot(msg, valid)
	require.NoError(t, err, "sizes and index in range")
	cases := map[string][]byte{
		"empty":       nil,
		"short":       make([]byte, 63),
		"header only": make([]byte, treeHeader),
		"depth 0":     make([]byte, TreeSignatureSize(1)),
		"depth too large": func() []byte {
			b := make([]byte, TreeSignatureSize(MaxTreeDepth+1))
			b[64] = MaxTreeDepth + 1
			return b
		}(),
		"size mismatch": func() []byte { b := make([]byte, TreeSignatureSize(2)); b[64] = 3; return b }(),
		"index outside": func() []byte { b := bytes.Clone(valid); b[68] = 4; return b }(),
	}
	for name, sig := range cases {
		_, _, err := TreeRoot(msg, sig)
		require.ErrorIs(t, err, ErrMalformedTreeSignature, name)
	}
}

func TestValidSignatureSizeAcceptsPlainAndTreeSizesOnly(t *testing.T) {
	ok := map[int]bool{64: true}
	for d := 1; d <= MaxTreeDepth; d++ {
		ok[TreeSignatureSize(d)] = true
	}
	for n := 0; n <= MaxTreeSignatureSize+64; n++ {
		require.Equal(t, ok[n], ValidSignatureSize(n), "size %d", n)
	}
}

// The point of trees: a Verifier checks a tree's root once for all its
// messages (its cache holds one entry), and a Batch records one check.
func TestVerifierChecksATreesRootOnceForAllItsMessages(t *testing.T) {
	g := newGroup(t, 2)
	msgs := treeMsgs(20)
	sigs := SignTree(g.signers[1].Sign, msgs)
	v := newTestVerifier(t, g, 0)
	for i, m := range msgs {
		require.NoError(t, v.VerifyReplica(1, m, sigs[i]))
	}
	require.Equal(t, 1, v.cache.len())

	v2 := newTestVerifier(t, g, 0)
	b := v2.NewBatch()
	for i, m := range msgs {
		require.NoError(t, b.VerifyReplica(1, m, sigs[i]))
	}
	require.Equal(t, 1, b.Len())
	require.True(t, b.Verify())
	for i, m := range msgs {
		require.NoError(t, v2.VerifyReplica(1, m, sigs[i]), "cached after the batch")
	}
}

// A batch holding a malformed tree signature fails, and so does one holding
// a well-formed path to the wrong message; the valid ones alone pass.
func TestBatchFailsOnMalformedOrWrongTreeSignatures(t *testing.T) {
	g := newGroup(t, 1)
	msgs := treeMsgs(4)
	sigs := SignTree(g.signers[0].Sign, msgs)
	v := newTestVerifier(t, g, -1)

	b := v.NewBatch()
	require.NoError(t, b.VerifyReplica(0, msgs[0], sigs[0]))
	require.NoError(t, b.VerifyReplica(0, msgs[1], sigs[1][:70]))
	require.False(t, b.Verify(), "malformed")
	b.Reset()
	require.NoError(t, b.VerifyReplica(0, msgs[0], sigs[0]))
	require.True(t, b.Verify(), "Reset forgets the malformed one")

	b.Reset()
	require.NoError(t, b.VerifyReplica(0, msgs[0], sigs[0]))
	require.NoError(t, b.VerifyReplica(0, msgs[2], sigs[1]))
	require.False(t, b.Verify(), "leaf 1's path for message 2")
}

// Property: for random messages, SignTree's signatures verify their own
// message and, with any one byte changed, none.
func TestSignTreeProperty(t *testing.T) {
	g := newGroup(t, 1)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		msgs := rapid.SliceOfNDistinct(rapid.SliceOfN(rapid.Byte(), 0, 40), n, n, func(b []byte) string { return string(b) }).Draw(t, "msgs")
		sigs := SignTree(g.signers[0].Sign, msgs)
		i := rapid.IntRange(0, n-1).Draw(t, "leaf")
		if !VerifySignature(g.pubs[0], msgs[i], sigs[i]) {
			t.Fatalf("leaf %d of %d does not verify", i, n)
		}
		pos := rapid.IntRange(0, len(sigs[i])-1).Draw(t, "pos")
		bit := rapid.IntRange(0, 7).Draw(t, "bit")
		bad := bytes.Clone(sigs[i])
		bad[pos] ^= 1 << bit
		if VerifySignature(g.pubs[0], msgs[i], bad) {
			t.Fatalf("leaf %d of %d verifies with byte %d bit %d changed", i, n, pos, bit)
		}
		if j := (i + 1) % n; j != i && VerifySignature(g.pubs[0], msgs[j], sigs[i]) {
			t.Fatalf("leaf %d's signature verifies message %d", i, j)
		}
	})
}

func BenchmarkSignTree(b *testing.B) {
	g := newGroup(b, 1)
	for _, n := range []int{1, 8, 32} {
		msgs := treeMsgs(n)
		b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
			for b.Loop() {
				SignTree(g.signers[0].Sign, msgs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
		})
	}
}
