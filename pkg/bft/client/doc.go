// Package client is the group client of Augustus' PBFT layer: the Go API
// through which a process (the bench, later the transaction coordinator,
// gateway and driver) submits calls to one replica group and gets results
// it can trust.
//
// Calls from any number of goroutines are packed into envelopes: one
// signed request carries every call queued while the window was full, so a
// signature is paid per envelope, not per call (pbft.md C1, DESIGN.md §3.1).
// At most W envelopes are outstanding (C2). An envelope goes to the primary
// the client believes current; if no result is accepted within the timeout
// it goes to every replica and the timeout doubles (C4). A result is accepted
// when f+1 replies from distinct replicas carry the same timestamp, status
// and result, each authenticated by a MAC under the pairwise key of that
// replica and this client (C3) — so f lying replicas cannot make the client
// accept a wrong result.
//
// One goroutine owns the client's state; one per replica connection
// forwards its replies. Close stops them all. This package imports the
// transport only through Dialer, so tests drive it with fake replicas.
package client
