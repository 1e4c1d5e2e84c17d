// Package bft is the PBFT core of Augustus: atomic multicast inside one group
// of n = 3f+1 replicas, written as a deterministic state machine in the shape
// of etcd's raft RawNode.
//
// A host — pkg/bft/host's Loop, driven by pkg/bft/replica in production and
// by the simulator of pkg/bft/bfttest — drives a Node:
//
//	msg arrives       → Checker.Message (stateless, parallel) → node.Step(msg)
//	client request    → Checker.Request (stateless, parallel) → node.Propose(req)
//	clock             → node.Tick()
//	node.HasReady()   → rd := node.Ready()
//	                    persist rd.HardState, rd.Records, rd.Deletes
//	                    in one write                              (pbft.md P1)
//	                    send rd.Messages, rd.Replies
//	                    hand rd.Executions to the executor, which writes
//	                    state + client deltas + last executed seq
//	                    atomically for each                       (P2)
//	                    start rd.StateTarget transfers
//	                    node.Advance()
//	execution done    → node.Executed(seq, results, digest), in order,
//	                    possibly many rounds later
//	install done      → node.StateInstalled(seq, clients)
//
// The core owns every protocol decision: sequence numbers, quorums,
// certificates, watermarks and garbage collection, view changes, catch-up, and
// the per-client table that makes execution exactly-once (C2). It signs its own
// messages through an injected Signer (deterministic Ed25519 in production)
// because its own signed messages become parts of certificates it forwards.
// Verifying what arrives is the host's job, through Checker.Message and
// Checker.Request (verify.go), so that the expensive checks run in parallel
// off the protocol goroutine; Step assumes its input passed Checker.Message.
//
// Rules: this package imports no network, storage, metrics, time or
// math/rand, starts no goroutines and reads no clock (see
// internal/archtest). Ticks and all inputs come from the host, so the
// same inputs give the same outputs — which is what the simulator in
// pkg/bft/bfttest relies on.
//
// Where the code implements a rule of ../shared/pbft.md, it names the tag
// (N1, V4, ...); the tests that check a rule name the tag too
// (rules_*_test.go). The comments there say why each rule is needed. Where
// each rule lives:
//
//	C1      verify.go (Checker.Request), signbytes.go (RequestBytes)
//	C2      clients.go, execute.go (buildExecution), normal.go (onRequest)
//	C3, C4  normal.go (onRequest, reply), execute.go (Executed)
//	N1      normal.go (canPropose, propose, cutBatch, proposeBatch)
//	N2      verify.go (prePrepare, Batch), normal.go (onPrePrepare)
//	N3-N6   normal.go (acceptPrePrepare, checkPrepared, checkCommitted),
//	        verify.go (prepare, PreparedCert, CommitCert)
//	N7      normal.go (tryExecute), execute.go
//	G1      checkpoint.go (takeCheckpoint, certificate), verify.go
//	        (checkpointProof)
//	G2      checkpoint.go (adopt, stabilize), slots.go, persist.go (keys)
//	G3      checkpoint.go (stabilize, startTransfer), catchup.go,
//	        execute.go (StateInstalled)
//	V1      normal.go (onRequest), node.go (tickTimers), viewchange.go
//	        (forwardPending)
//	V2      viewchange.go (startViewChange)
//	V3      verify.go (viewChange)
//	V4      newview.go (computeNewView), viewchange.go (sendNewView)
//	V5      verify.go (newView), viewchange.go (onNewView, enterView,
//	        viewChangeState.floor)
//	V6, V7  viewchange.go (checkViewChange), node.go (tickTimers, backoff)
//	P1      ready.go (Ready): every record of a round before its messages
//	P2      execute.go (Executed), checkpoint.go (adopt)
//	P3      persist.go (restore)
//
// Where the core departs from the 2002 paper or pbft.md, on purpose (each
// is explained where it is implemented):
//   - Messages are signed rather than authenticated with MAC vectors, as
//     pbft.md specifies, so certificates can be forwarded; the core signs
//     its own messages (docs/bft.md).
//   - Certificates and NEW-VIEWs carry PRE-PREPARE headers; bodies are
//     fetched by digest.
//   - Execution is asynchronous, so a checkpoint certificate above the
//     executed seq waits as pending until execution reaches it (stabilize)
//     instead of moving h at once. A NEW-VIEW's min-s can then be above h:
//     the view orders nothing at or below min-s (viewChangeState.floor),
//     and O's entries above H wait for H to move (deferred).
//   - The client table generalizes PBFT's last reply per client to a
//     window of W, moved by the client's signed low watermark, and answers
//     a stale request instead of dropping it (clients.go).
//   - 2f+1 signed COMMITs are a transferable commit certificate: catch-up
//     and restore take a batch committed on it without local prepared.
//   - V6's timer T covers the wait for NEW-VIEW; the wait for an execution
//     in the new view is the request timer, with the same back-off.
//   - A replica never PREPAREs against a commit certificate it holds, and
//     V4 breaks a tie between certificates of one view (which needs more
//     than f faulty replicas) by the smaller digest, so O is deterministic.
package bft
