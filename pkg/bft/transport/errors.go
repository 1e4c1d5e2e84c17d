package transport

import "errors"

// Errors returned by this package.
var (
	// ErrClosed is returned by operations on a closed Peers, Server or Client.
	ErrClosed = errors.New("transport: closed")
	// ErrUnknownPeer reports a replica index that is not in the configuration,
	// or a TLS peer that PeerIdentity does not recognize.
	ErrUnknownPeer = errors.New("transport: unknown peer")
	// ErrWrongPeer reports a dialed server whose certificate belongs to another
	// replica than the one configured at that address.
	ErrWrongPeer = errors.New("transport: peer identity does not match")
	// ErrMalformed reports bytes on a stream that do not decode.
	ErrMalformed = errors.New("transport: malformed message")
	// ErrEncode reports a message that protobuf refused to marshal.
	ErrEncode = errors.New("transport: cannot encode message")
	// ErrLinkCut is returned by FetchState when fault injection cut the link.
	ErrLinkCut = errors.New("transport: link cut by fault injection")
	// ErrConfig reports an invalid configuration.
	ErrConfig = errors.New("transport: invalid configuration")
)
