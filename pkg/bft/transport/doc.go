// Package transport moves bytes between the replicas of a group and from
// clients to replicas over gRPC with mutual TLS. It carries bftpb.Message
// between replicas, bftpb.Request in from clients and bftpb.Reply back to
// them, and state-transfer chunks (transportpb.StateChunk) whose contents
// the storage layer encodes. It knows nothing of PBFT rules: it never looks
// inside a message beyond its kind (for metrics and fault injection).
//
// Pieces:
//
//   - Peers, the outgoing side of a replica: one long-lived Peer stream per
//     other replica, owned by one goroutine that drains a bounded queue and
//     reconnects with exponential back-off and jitter (gRPC's algorithm and
//     configuration, shared with the gRPC channel underneath). Send and Broadcast
//     never block; a full queue drops its oldest message (counted). A
//     broadcast is marshaled once and the same bytes go to every stream.
//   - Server, the incoming side: Peer, Client and FetchState streams on one
//     listener. A peer's identity comes only from its TLS certificate
//     (IdentityFunc); Message.from is overwritten with it. Handler callbacks
//     run on the stream's goroutine, so a slow owner applies back-pressure to
//     that stream instead of making the server buffer without bound.
//     Replies are routed to clients by client id through bounded per-stream
//     queues (SendReply), to the streams bound to that id. A stream binds to
//     a client id only by proving the id's private key with a signature over
//     a fresh challenge tied to the TLS session (bind.go), so no client can
//     receive another client's replies.
//   - Client (DialClient), a non-replica's stream to one replica; with
//     WithClientKey it proves its key on every stream it opens.
//   - Faults, an Interceptor that delays, drops or cuts outgoing messages per
//     link, deterministically given a seed (the test kernels have no netem).
//
// Malformed input from the network is an error and a counter, never a
// panic: a payload that does not decode closes its stream and increments
// augustus_transport_decode_errors_total.
//
// Every goroutine has an owner that stops it: Peers.Close and Client.Close
// (or the end of the context they were started with) stop theirs and wait;
// Server.Close (or the end of Serve's context) closes every stream and waits
// for the handlers.
//
// Rules: this package must not import pkg/bft (the core) or any other
// Augustus package but pkg/bft/bftpb, its own transportpb and
// internal/backoff (the module's one back-off algorithm, gRPC's).
package transport
