package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/hdevalence/ed25519consensus"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Binding a client stream to a client id.
//
// A replica pushes a client's replies to the streams bound to its client id
// (Server.SendReply), including streams on which that client never sent a
// request: backups get a client's requests from the primary and answer the
// client directly. A stream therefore binds to an id before any request, and
// whoever holds a stream bound to an id reads every reply to that id. So the
// bind must prove that the stream's holder has the id's private key (the id
// is the client's Ed25519 public key); a claimed id binds nothing.
//
// The proof is a signed challenge tied to the TLS session:
//
//  1. The server accepts the stream with a fresh random nonce in a response
//     header (BindNonceHeader), one per stream.
//  2. The client signs BindSignBytes(id, nonce, exporter) with its key,
//     where exporter is the TLS keying-material exporter of the connection
//     (RFC 8446 §7.5, label bindExporterLabel): a value both ends of this
//     TLS session derive and nobody else can, and the client pinned the
//     server's key during the handshake. It sends the signature in a
//     bind request (IsBind: client id and signature, no timestamp or
//     payload).
//  3. The server verifies the signature under the claimed id with the nonce
//     it issued and its own exporter value, and only then binds the stream.
//
// A signed bind cannot be replayed: on another stream the nonce differs, and
// on another TLS session (a Byzantine replica relaying what a client sent it)
// the exporter differs. A bind without a signature, or with one that does
// not verify, binds nothing; a bad signature also closes the stream
// (RejectBadBind), since a client holding the key never sends one.

const (
	// BindNonceHeader is the response header of a client stream that
	// carries the server's challenge (binary metadata).
	BindNonceHeader = "augustus-bind-nonce-bin"
	// bindExporterLabel is the TLS exporter label of the bind.
	bindExporterLabel = "EXPORTER-augustus-client-bind"
	// bindNonceSize and bindExporterSize are the lengths of the two values.
	bindNonceSize    = 32
	bindExporterSize = 32
	// bindDomain separates bind signatures from every other signature a
	// client key makes (request signatures carry their own domain tag).
	bindDomain = "augustus/transport/client-bind/v1\x00"
)

// ErrBind reports a bind that cannot be made or does not verify.
var ErrBind = errors.New("transport: client bind")

// BindSignBytes is what a client signs to bind a stream to its id: the
// domain tag, the id, the server's nonce and the TLS exporter value of the
// connection.
func BindSignBytes(id, nonce, exporter []byte) []byte {
	b := make([]byte, 0, len(bindDomain)+len(id)+len(nonce)+len(exporter))
	b = append(b, bindDomain...)
	b = append(b, id...)
	b = append(b, nonce...)
	return append(b, exporter...)
}

// BindRequest is a bind request for id without a proof. On its own it binds
// nothing (servers want the signature of SignedBindRequest); a Client made
// with WithClientKey proves its key on every stream itself and ignores it.
func BindRequest(id []byte) *bftpb.Request { return &bftpb.Request{Client: id} }

// SignedBindRequest is the bind request proving key on the stream whose
// server issued nonce, on the TLS connection whose exporter value is
// exporter.
func SignedBindRequest(key ed25519.PrivateKey, nonce, exporter []byte) *bftpb.Request {
	id := []byte(key.Public().(ed25519.PublicKey))
	return &bftpb.Request{Client: id, Signature: ed25519.Sign(key, BindSignBytes(id, nonce, exporter))}
}

// IsBind reports whether r is a bind request: a client id and nothing of a
// call (no timestamp, no payload). Servers check its signature, bind, and do
// not pass it on. Client timestamps start at 1, so no call looks like one.
func IsBind(r *bftpb.Request) bool {
	return r.GetTimestamp() == 0 && len(r.GetPayload()) == 0 && len(r.GetClient()) > 0
}

// ExporterOf returns the bind exporter value of the TLS connection a gRPC
// stream runs on (ctx is the stream's context, on either side).
func ExporterOf(ctx context.Context) ([]byte, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: no connection information", ErrBind)
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil, fmt.Errorf("%w: the connection is not TLS", ErrBind)
	}
	ekm, err := ti.State.ExportKeyingMaterial(bindExporterLabel, nil, bindExporterSize)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS exporter: %w", ErrBind, err)
	}
	return ekm, nil
}

// newBindNonce returns a fresh challenge.
func newBindNonce() ([]byte, error) {
	n := make([]byte, bindNonceSize)
	if _, err := rand.Read(n); err != nil {
		return nil, fmt.Errorf("%w: nonce: %w", ErrBind, err)
	}
	return n, nil
}

// verifyBind checks a signed bind request against the stream's challenge.
func verifyBind(r *bftpb.Request, nonce, exporter []byte) error {
	id := r.GetClient()
	if len(id) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: client id has %d bytes, want a %d-byte Ed25519 key", ErrBind, len(id), ed25519.PublicKeySize)
	}
	if len(r.GetSignature()) != ed25519.SignatureSize {
		return fmt.Errorf("%w: signature has %d bytes", ErrBind, len(r.GetSignature()))
	}
	// ZIP-215, as every signature check of Augustus (pkg/bft/auth,
	// verifykey.go): a key that binds at one replica binds at every one.
	if !ed25519consensus.Verify(ed25519.PublicKey(id), BindSignBytes(id, nonce, exporter), r.GetSignature()) {
		return fmt.Errorf("%w: the signature does not verify under the claimed client id for this stream", ErrBind)
	}
	return nil
}
