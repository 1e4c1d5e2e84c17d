package transport

import (
	"context"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// Inbound is a message received from a replica.
type Inbound struct {
	From uint32
	Msg  *bftpb.Message
}

// Inbox is a bounded queue between the Server's stream goroutines and an
// owner that consumes messages on goroutines of its own (the replica's
// verification pool). A Handler's OnMessage calls Put; while the inbox is
// full, Put blocks, the stream is not read, and the sending replica's queue
// drops instead: memory stays bounded whatever the peers send.
type Inbox struct {
	c chan Inbound
}

// NewInbox returns an inbox that holds up to capacity messages.
func NewInbox(capacity int) *Inbox {
	return &Inbox{c: make(chan Inbound, max(capacity, 1))}
}

// Put queues m from replica from, waiting for room until ctx is done; it
// reports whether m was queued.
func (b *Inbox) Put(ctx context.Context, from uint32, m *bftpb.Message) bool {
	select {
	case b.c <- Inbound{From: from, Msg: m}:
		return true
	default:
	}
	select {
	case b.c <- Inbound{From: from, Msg: m}:
		return true
	case <-ctx.Done():
		return false
	}
}

// C delivers the queued messages in the order Put queued them.
func (b *Inbox) C() <-chan Inbound { return b.c }

// Len returns the number of queued messages.
func (b *Inbox) Len() int { return len(b.c) }
