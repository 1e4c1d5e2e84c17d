// Package replica is the driver of one PBFT replica: it owns the bft.Node
// and the goroutine that feeds it, and connects it to the network
// (pkg/bft/transport), the store (pkg/storage) and the application.
//
// Per round of the node's Ready (pbft.md P1–P3, DESIGN.md §3):
//
//	verify (on the transport's stream goroutines, in parallel) → Step/Propose
//	persist hard state and log records in BFTState, one synced commit
//	send messages; MAC and send replies
//	execute committed batches: application writes, client table and the
//	  applied sequence number in one indexed batch, one synced commit per
//	  run of batches (split at checkpoints), then Node.Executed
//	take a snapshot at each checkpoint, to serve state transfer
//	start state transfers: stream chunks from peers, install, verify
//
// The Application interface (DESIGN.md §3.2) is what the transaction engine
// plugs into. The runtime keeps the client table (pbft.md C2) and the
// applied sequence number in the replicated ReplyCache keyspace, so they are
// covered by the state digest and move atomically with a state transfer.
//
// This package may import pkg/bft and its sub-packages, pkg/storage,
// transport, metrics and logging; it knows nothing of transactions.
package replica
