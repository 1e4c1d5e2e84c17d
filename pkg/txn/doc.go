// Package txn will hold the Augustus transaction protocol (DESIGN.md §4):
// short transactions over groups, the lock table, the partition state
// machine that implements replica.Application, the coordinator client with
// vote certificates and the fast paths of the paper.
//
// Nothing is implemented here yet: the layer below it (pkg/bft: PBFT, the
// replica runtime and the group client) is what exists today. This file
// keeps the package in the tree the design describes.
package txn
