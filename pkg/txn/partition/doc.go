// Package partition is a group's replicated transaction state machine: the
// Augustus storage protocol at a replica (DESIGN.md §4, ../shared/txn.md).
// Engine implements host.Application (Validate, Execute, Restored; aliased as
// replica.Application) and host.Signing (SignBytes); every rule of txn.md it follows is
// explained where it is implemented, with its tag.
//
//   - validate.go: stateless validation (T4, M1, M5, E10's other-group
//     parts, T3's relays, W2's proofs).
//   - deliver.go: a transaction's delivery — E1 (recorded votes are final),
//     T3 (owner authentication), T5 (declared groups), M4 (queued metadata),
//     E3 (all locks or a conflict abort naming the first-delivered pending
//     transaction), E4–E7.
//   - plan.go: lock sets (L1–L6 through the lock table; L5's operation
//     locks, T1's chunked read-range spans, M3's moved spans) and the
//     comparisons, preconditions and queries of E4 and E5.
//   - owner.go: watermarks and the window (W1, W2, E2).
//   - terminate.go: certificates, releases and proofs (E8, E10, W2).
//   - queue.go: the queued metadata transaction (M4).
//   - meta.go: the metadata version and partition map (M1–M3).
//   - query.go: the watermark query (W3).
//   - store.go: the layout of the transaction keyspace and records (E11).
//   - engine.go: configuration, the Execute loop, Restored (E11, E12).
//
// Persistence (E11): records, the nonce index, owner states, the pending
// index and the delivery counter live in storage.TxnRecords; data in
// storage.UserData; metadata in storage.Metadata — all replicated and
// digested, all written into the runtime's batch, committed with the client
// table and sequence number (pbft.md P2). The lock table is memory only,
// rebuilt verbatim from pending records by Restored.
//
// The lock table is pkg/txn/lockmgr's (L1–L4, L6); the engine builds the
// lock sets (L5) and names conflicts by delivery order (E3).
//
// Imports: pkg/txn, pkg/txn/oracle, pkg/txn/lockmgr, pkg/storage, pkg/bft
// (ids), pkg/bft/host (Call, Reader, Application, Signing — not the replica
// runtime with its network), pkg/bft/cluster (configuration) and prometheus;
// never the network, the transport or the group client (internal/archtest).
package partition
