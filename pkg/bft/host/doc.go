// Package host is the event loop of one PBFT replica, shared by production
// (pkg/bft/replica) and simulation (pkg/bft/bfttest): it owns the bft.Node,
// the Application and the replica's pebble store, and acts through small
// interfaces — a Network (the gRPC transport, or the simulated network) and
// an Executor (a goroutine, or the seeded scheduler) — so that the code the
// simulator checks is the code that runs.
//
// Per round of the node's Ready (pbft.md P1–P3, DESIGN.md §3):
//
//	Deliver / Propose / Tick / Finished     (events, already verified)
//	persist hard state and log records in BFTState, one commit, synced if
//	  the round sends anything (P1)
//	send messages; hand replies to the Network (MAC, signatures)
//	submit committed batches to the Executor, which runs RunExecutions:
//	  application writes, client table and applied seq in one indexed batch,
//	  one synced commit per run of batches, split at checkpoints (P2, G1)
//	start state transfers: an install job that streams a peer's checkpoint
//	  into the store, checked against the certified digest (G3)
//
// Jobs carry a transfer generation: a state transfer voids the reports of
// execution jobs submitted before it, which may have run on the state the
// install replaced.
//
// The Application interface (DESIGN.md §3.2) is what the transaction engine
// plugs into. The loop keeps the client table (pbft.md C2) and the applied
// sequence number in the replicated ReplyCache keyspace, so they are covered
// by the state digest and move atomically with a state transfer.
//
// This package never reads the wall clock (a Clock may be injected for
// metrics), starts no goroutine and imports no network code; it may import
// pkg/bft, pkg/storage and metrics. It knows nothing of transactions.
package host
