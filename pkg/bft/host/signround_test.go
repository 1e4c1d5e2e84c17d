package host

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// A round's replies list what they ask signed in order, and get the
// signatures back in the same order: each its own, an empty entry for a
// call result not signed, nothing for a reply that asks for none.
func TestAttachSignaturesHandsEachReplyItsOwnSignatures(t *testing.T) {
	reps := []PendingReply{
		{Rep: &bftpb.Reply{}, Sign: [][]byte{[]byte("a"), nil, []byte("b")}},
		{Rep: &bftpb.Reply{}},
		{Rep: &bftpb.Reply{}, Sign: [][]byte{nil, []byte("c")}},
	}
	msgs := AppendSignBytes([][]byte{[]byte("kept")}, reps)
	require.Equal(t, [][]byte{[]byte("kept"), []byte("a"), []byte("b"), []byte("c")}, msgs)
	AttachSignatures(reps, [][]byte{[]byte("sig a"), []byte("sig b"), []byte("sig c")})
	for i, want := range [][][]byte{{[]byte("sig a"), {}, []byte("sig b")}, nil, {{}, []byte("sig c")}} {
		if want == nil {
			require.Nil(t, reps[i].Rep.Signatures, "reply %d", i)
			continue
		}
		got, err := envelope.DecodeResults(reps[i].Rep.Signatures)
		require.NoError(t, err)
		require.Len(t, got, len(want), "reply %d", i)
		for j := range want {
			require.Equal(t, string(want[j]), string(got[j]), "reply %d, result %d", i, j)
		}
	}
}
