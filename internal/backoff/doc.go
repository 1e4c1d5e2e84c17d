// Package backoff is the one exponential back-off of the module: the delay
// before the next attempt after n consecutive failures, computed as gRPC
// computes its connection back-off (grpc/doc/connection-backoff.md) from a
// google.golang.org/grpc/backoff.Config. gRPC keeps that algorithm in an
// internal package; this package gives the transport (re-opening streams on
// a gRPC channel whose own reconnects use the same Config) and the process
// supervisor of `augustus start` (restarting replicas) one implementation.
//
// Rules: stdlib and google.golang.org/grpc/backoff only; no other package of
// this module.
package backoff
