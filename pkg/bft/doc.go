// Package bft is the PBFT core of Augustus: atomic multicast inside one group
// of n = 3f+1 replicas, written as a deterministic state machine in the shape
// of etcd's raft RawNode.
//
// A host (pkg/bft/replica in production, pkg/bft/bfttest in simulation) drives
// a Node:
//
//	msg arrives       → VerifyMessage (stateless, parallel) → node.Step(msg)
//	client request    → VerifyRequest (stateless, parallel) → node.Propose(req)
//	clock             → node.Tick()
//	node.HasReady()   → rd := node.Ready()
//	                    persist rd.HardState, rd.Records (one fsync)      (pbft.md P1)
//	                    send rd.Messages, rd.Replies
//	                    for each rd.Executions: execute, write state +
//	                    client deltas + last executed seq atomically,      (P2)
//	                    then node.Executed(seq, results, digest)
//	                    start rd.StateTarget transfers
//	                    node.Advance()
//
// The core owns every protocol decision: sequence numbers, quorums,
// certificates, watermarks and garbage collection, view changes, catch-up, and
// the per-client table that makes execution exactly-once (C2). It signs its own
// messages through an injected Signer (deterministic Ed25519 in production)
// because its own signed messages become parts of certificates it forwards.
// Verifying what arrives is the host's job, through VerifyMessage and
// VerifyRequest, so that the expensive checks run in parallel off the
// protocol goroutine; Step assumes its input passed VerifyMessage.
//
// Rules: this package imports no network, storage, metrics, time or
// math/rand, starts no goroutines and reads no clock (see
// internal/archtest). Ticks and all inputs come from the host, so the
// same inputs give the same outputs — which is what the simulator in
// pkg/bft/bfttest relies on.
//
// Where the code implements a rule of ../shared/pbft.md, it names the tag
// (N1, V4, ...); the tests that check a rule name the tag too.
package bft
