// Package bfttest is the deterministic simulator of pkg/bft: one group of
// n = 3f+1 replicas and several clients run entirely in memory, on a
// simulated clock, over a network that delays, reorders, duplicates, loses
// and partitions messages until it heals, with up to f replicas switched to
// a Byzantine behaviour (silence, crash and recovery, equivocation, wrong
// digests, corrupted or forged signatures, replays, bogus VIEW-CHANGE /
// NEW-VIEW / CHECKPOINT, lying replies, sequence-number abuse).
//
// Every run is a function of its seed. Checkers run on every seed:
// agreement (no two correct replicas execute different batches at one
// sequence number, and their checkpoint digests agree), validity (only
// requests clients issued execute, each at most once per replica), client
// safety (every result a client accepts is what correct replicas computed)
// and liveness (after the network heals, every request of a correct client
// completes within a bound).
//
// The host loop here mirrors pkg/bft/replica: verify with bft.Checker,
// Step, persist Ready records before sending, execute, report, transfer
// state. The simulated stores survive crashes the way pebble does: what a
// Ready persisted is there after a restart, nothing else.
//
// This package may use math/rand (seeded); the core may not.
package bfttest
