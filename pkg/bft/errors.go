package bft

import "errors"

// Errors returned by the checker and the node. Every rejection of a message
// also counts in Node.Stats.
//
// ErrMalformed through ErrBadNewView are the Checker's (verify.go): a
// message that gets one is dropped before the node sees it. ErrInvalidRequest
// and ErrTooLarge also reject client requests. ErrStopped, ErrBusy,
// ErrOutsideWindow and ErrUnexpectedReply are the node's: a local fault,
// back-pressure on requests (MaxPendingRequests, the client window of C2),
// and a host that reports an execution it was not handed.
var (
	ErrMalformed       = errors.New("bft: malformed message")
	ErrNotMember       = errors.New("bft: sender is not a member of the group")
	ErrBadSignature    = errors.New("bft: bad signature")
	ErrWrongSigner     = errors.New("bft: message signed by a replica other than the one it claims")
	ErrBadDigest       = errors.New("bft: digest does not match the batch")
	ErrBadCertificate  = errors.New("bft: invalid certificate")
	ErrTooLarge        = errors.New("bft: message exceeds size limits")
	ErrInvalidRequest  = errors.New("bft: invalid client request")
	ErrBadNewView      = errors.New("bft: NEW-VIEW does not follow from its VIEW-CHANGEs")
	ErrStopped         = errors.New("bft: node stopped after a local fault")
	ErrBusy            = errors.New("bft: too many pending requests")
	ErrOutsideWindow   = errors.New("bft: request timestamp above the client window")
	ErrUnexpectedReply = errors.New("bft: executed report does not match the handed-out batch")
)
