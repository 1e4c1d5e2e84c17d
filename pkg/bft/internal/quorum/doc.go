// Package quorum holds the quorum arithmetic of PBFT — n = 3f+1 replicas,
// quorums of 2f+1, weak quorums of f+1, 2f PREPAREs — and a small set type
// that counts distinct replicas. It imports only the standard library.
package quorum
