// Package invariants holds the assertion helper of DESIGN.md §9: checks of
// our own invariants (never of input from the network, which is an error
// and a counter, not a panic) that run only when the binary is built with
// the `invariants` build tag — as `make test` and `make sim` build the tests
// and the simulator — and compile to nothing otherwise.
//
// It imports only the standard library, so every package may use it.
package invariants
