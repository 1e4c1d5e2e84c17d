package transport

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Encoded is a message marshaled once. Broadcast and SendReply marshal a
// message once and hand the same immutable bytes to every stream that sends
// it: the gRPC codec of this package passes them through without copying or
// re-encoding. An Encoded must not be modified after it is built.
type Encoded struct {
	b    []byte
	kind Kind
}

// EncodeMessage marshals m once so that it can be sent to several peers with
// SendEncoded or BroadcastEncoded. Callers that want the marshaling off their
// own goroutine (the protocol loop) can call it elsewhere.
func EncodeMessage(m *bftpb.Message) (*Encoded, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return &Encoded{b: b, kind: KindOf(m)}, nil
}

func encodeReply(r *bftpb.Reply) (*Encoded, error) {
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return &Encoded{b: b, kind: KindReply}, nil
}

func encodeRequest(r *bftpb.Request) (*Encoded, error) {
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return &Encoded{b: b, kind: KindClientRequest}, nil
}

// Len is the size of the encoded message in bytes.
func (e *Encoded) Len() int { return len(e.b) }

// Kind is the kind of the encoded message.
func (e *Encoded) Kind() Kind { return e.kind }

// peerBatch is one PeerBatch written to a Peer stream, built from encoded
// messages without re-encoding them: the encoding of a repeated message
// field is each element's bytes behind its tag and length, so the codec
// writes the prefixes and the shared message bytes one after the other.
type peerBatch struct {
	prefixes []byte // every message's tag and length, back to back
	ends     []int  // end of message i's prefix in prefixes
	items    []queued
	bytes    int // encoded size
}

// peerBatchField is the field number of PeerBatch.messages.
const peerBatchField = 1

func (b *peerBatch) add(q queued) {
	before := len(b.prefixes)
	b.prefixes = protowire.AppendTag(b.prefixes, peerBatchField, protowire.BytesType)
	b.prefixes = protowire.AppendVarint(b.prefixes, uint64(q.e.Len()))
	b.ends = append(b.ends, len(b.prefixes))
	b.items = append(b.items, q)
	b.bytes += len(b.prefixes) - before + q.e.Len()
}

// reset empties b for reuse, dropping its references to messages. The
// prefixes get a new array: gRPC may still be writing the old one (it
// writes asynchronously and never copies a SliceBuffer).
func (b *peerBatch) reset() {
	clear(b.items)
	b.prefixes, b.ends, b.items, b.bytes = nil, b.ends[:0], b.items[:0], 0
}

// marshal returns the buffers of b's encoding: prefix, message, prefix, ...
func (b *peerBatch) marshal() mem.BufferSlice {
	out := make(mem.BufferSlice, 0, 2*len(b.items))
	start := 0
	for i, q := range b.items {
		out = append(out, mem.SliceBuffer(b.prefixes[start:b.ends[i]:b.ends[i]]), mem.SliceBuffer(q.e.b))
		start = b.ends[i]
	}
	return out
}

// eachBatchedMessage calls fn with the bytes of every message of an encoded
// PeerBatch, in order; unknown fields are skipped (a newer peer may add
// some). Any bytes may arrive here: a malformed encoding is an error, never
// a panic.
func eachBatchedMessage(b []byte, fn func([]byte)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: peer batch: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if num == peerBatchField && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: peer batch: %w", ErrMalformed, protowire.ParseError(n))
			}
			fn(v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("%w: peer batch: %w", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

// frame is a received gRPC message that has not been decoded yet. The stream
// handlers receive frames rather than protobuf messages so that decoding (and
// its failures) happens in this package's own decoders, where a malformed
// payload is counted and closes only its stream.
type frame struct {
	buf mem.Buffer
}

func (f *frame) bytes() []byte {
	if f.buf == nil {
		return nil
	}
	return f.buf.ReadOnlyData()
}

func (f *frame) release() {
	if f.buf != nil {
		f.buf.Free()
		f.buf = nil
	}
}

// codec is the gRPC codec of every transport stream, forced on both sides.
// It is wire-compatible with gRPC's default "proto" codec, and in addition
//   - marshals *Encoded as its bytes, shared and never copied, and
//   - unmarshals into *frame by keeping a reference to the received buffer.
//
// Other values go through protobuf; a decode failure there is counted under
// rpc.
type codec struct {
	metrics *Metrics
	rpc     string
}

const codecName = "proto"

func (c *codec) Name() string { return codecName }

func (c *codec) Marshal(v any) (mem.BufferSlice, error) {
	switch v := v.(type) {
	case *Encoded:
		return mem.BufferSlice{mem.SliceBuffer(v.b)}, nil
	case *peerBatch:
		return v.marshal(), nil
	case proto.Message:
		b, err := proto.Marshal(v)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	default:
		return nil, fmt.Errorf("transport: cannot marshal %T", v)
	}
}

func (c *codec) Unmarshal(data mem.BufferSlice, v any) error {
	switch v := v.(type) {
	case *frame:
		v.buf = data.MaterializeToBuffer(mem.DefaultBufferPool())
		return nil
	case proto.Message:
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		if err := unmarshalOpts.Unmarshal(buf.ReadOnlyData(), v); err != nil {
			if c.metrics != nil {
				c.metrics.decodeError(c.rpc)
			}
			return err
		}
		return nil
	default:
		return fmt.Errorf("transport: cannot unmarshal into %T", v)
	}
}

// unmarshalOpts drops unknown fields: a peer cannot make us hold bytes we do
// not understand beyond the life of the decode.
var unmarshalOpts = proto.UnmarshalOptions{DiscardUnknown: true}

// errNoBody reports a Message that decoded but carries no body this version
// knows. It is dropped and counted; the stream stays open (a newer peer may
// send kinds we do not know).
var errNoBody = errors.New("transport: message without a known body")

// decodeMessage decodes a replica→replica message. Any bytes may arrive here;
// it returns an error and never panics.
func decodeMessage(b []byte) (*bftpb.Message, error) {
	m := new(bftpb.Message)
	if err := unmarshalOpts.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if m.GetBody() == nil {
		return nil, errNoBody
	}
	return m, nil
}

// decodeRequest decodes a client request from a client stream.
func decodeRequest(b []byte) (*bftpb.Request, error) {
	r := new(bftpb.Request)
	if err := unmarshalOpts.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return r, nil
}

// decodeReply decodes a reply on a client's stream.
func decodeReply(b []byte) (*bftpb.Reply, error) {
	r := new(bftpb.Reply)
	if err := unmarshalOpts.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return r, nil
}
