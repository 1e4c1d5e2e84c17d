package transport

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

func fuzzSeeds(f *testing.F) {
	for _, m := range []*bftpb.Message{
		prepare(1, 2, 16),
		{Body: &bftpb.Message_PrePrepare{PrePrepare: &bftpb.PrePrepare{View: 3, Seq: 4, Batch: &bftpb.Batch{
			Requests: []*bftpb.Request{{Client: []byte("c"), Timestamp: 1, Payload: []byte("op")}},
		}}}},
		{Body: &bftpb.Message_ViewChange{ViewChange: &bftpb.ViewChange{View: 2, Prepared: []*bftpb.PreparedCert{{}}}}},
		{Body: &bftpb.Message_Status{Status: &bftpb.Status{View: 1}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(garbage)
}

// FuzzDecodeMessage feeds arbitrary bytes to the decoder of Peer streams: it
// must return an error or a message that survives a round trip, never panic.
func FuzzDecodeMessage(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMessage(b)
		if err != nil {
			return
		}
		if KindOf(m) == KindUnknown {
			t.Fatalf("decoded a message without a known body")
		}
		e, err := EncodeMessage(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := decodeMessage(e.b)
		if err != nil {
			t.Fatalf("decode of re-encoded message: %v", err)
		}
		if !proto.Equal(m, m2) {
			t.Fatalf("round trip changed the message")
		}
	})
}

// FuzzDecodeRequest does the same for client streams and replies.
func FuzzDecodeRequest(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeRequest(b); err == nil {
			if _, err := encodeRequest(r); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
		if r, err := decodeReply(b); err == nil {
			if _, err := encodeReply(r); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}
