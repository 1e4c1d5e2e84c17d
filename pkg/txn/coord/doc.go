// Package coord is the transaction client library of Augustus (DESIGN.md §2
// and §4, ../shared/txn.md K1–K5): what the SQL layer and applications use
// to run short transactions across replica groups. It builds a transaction
// from operations, routes it by the partition map at the metadata version it
// holds (K1), multicasts it to the involved groups, accepts each group's
// vote on f+1 matching replies (K2), builds certificates from signed votes
// (E10), terminates the transaction and proves the termination (K3, W2),
// recovers transactions other clients left pending (K4), retries conflicts
// with jittered exponential back-off (K5), manages its nonces and watermark
// (W1, W3) — also across a restart — and runs admin-signed metadata
// transactions that may wait queued behind data transactions (M4, M5).
//
// Two layers:
//
//   - Core (core.go and the files it uses: request.go, run.go,
//     recovery.go, refresh.go, startup.go, nonces.go, route.go,
//     result.go) is the protocol: a deterministic state machine driven
//     through Env. It starts no goroutine, reads no clock (Env.Now) and
//     draws randomness only from the seeded source of Config, so the
//     transaction simulator (pkg/txn/txntest) runs exactly the code
//     production runs, as the PBFT layer's client does (pkg/bft/client's
//     Core). purity_test.go checks these files.
//   - Client (client.go) is the production host: one goroutine owns the
//     Core; one pkg/bft/client.Client per group, shared by every caller of
//     the process, so calls of many transactions travel in one signed
//     envelope (DESIGN.md §3.1); Do(ctx, ...) is the blocking API.
//
// Where each rule lives: K1 route.go and refresh.go; K2 core.go (decode,
// groupSigs) over the group client; K3, E8, E10, W2 run.go (decide,
// terminate, prove); K4 recovery.go and run.go (the recoverer's copy and
// relays); K5 request.go (retry) and core.go (backoff); W1, W3 nonces.go and
// startup.go; M4 run.go (queued polls); M5 request.go (launch); T1
// result.go (mergeRange). Tests: rules_*_test.go run the Core in a seeded
// world of real partition engines and real group-client cores
// (world_test.go); client_test.go runs the Client over real replica groups
// (coordtest).
//
// Who does what in K2: the group client accepts a result on f+1 matching
// replies from distinct replicas, each carrying a valid replica signature
// when the result is one replicas sign (client.Config.SignBytes =
// txn.Domain.SignBytes). The Core takes exactly f+1 of those signatures per
// group for a certificate, and checks that every result names the
// transaction and group it asked about.
//
// Imports: pkg/txn, pkg/txn/oracle, pkg/bft (ids), pkg/bft/client (the group
// client), pkg/bft/cluster, prometheus. Never the replica runtime, the
// partition engine, storage or SQL (internal/archtest).
package coord
