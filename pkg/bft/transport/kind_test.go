package transport

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Every body a replica message can have gets the label bftpb.KindName
// gives it, so augustus_transport_* and augustus_bft_* speak of a message
// kind with one word.
func TestKindLabelsAreTheBFTVocabulary(t *testing.T) {
	var m bftpb.Message
	body := m.ProtoReflect().Descriptor().Oneofs().ByName("body")
	require.NotNil(t, body)
	fields := body.Fields()
	require.Positive(t, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		msg := &bftpb.Message{}
		r := msg.ProtoReflect()
		r.Set(fd, r.NewField(fd))
		require.NotEqual(t, KindUnknown, KindOf(msg), "body %s has a kind", fd.Name())
		require.Equal(t, bftpb.KindName(msg), KindOf(msg).String(), "body %s", fd.Name())
	}
}

// Each label names one kind: "request" is only a client's request, never
// a forwarded one or the transport's bind.
func TestKindLabelsAreDistinct(t *testing.T) {
	seen := map[string]Kind{}
	for k := Kind(0); k < numKinds; k++ {
		name := k.String()
		require.NotEmpty(t, name)
		prev, dup := seen[name]
		require.False(t, dup, "%d and %d are both %q", prev, k, name)
		seen[name] = k
	}
	require.Equal(t, KindClientRequest, seen["request"])
	require.Equal(t, "forward", KindForward.String())
	require.Equal(t, "bind", KindBind.String())
	require.Equal(t, "pre-prepare", KindPrePrepare.String())
}
