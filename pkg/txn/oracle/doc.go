// Package oracle holds the partition maps that assign keys to groups
// (DESIGN.md §4, txn.md T5, M3): range partitioning, the default, where each
// range of keys belongs to one group so range scans stay in the groups that
// hold the range, and hash partitioning, where the keys of a range are spread
// over several groups by a hash of the key and a scan of that range involves
// all of them. One Map mixes both: each range lists one group (owned) or
// several (hashed).
//
// The initial map comes from cluster.json's partitions (FromCluster); later
// maps live in the replicated metadata keyspace (txn.MetaPartitionsKey) in
// Map's canonical encoding, written only by metadata transactions, so every
// replica of every group checks T5 against the same map. Moved tells which
// spans a map change reassigns (M3: a change may only split ranges or assign
// empty ones).
//
// Clients route with a Map (K1) and groups check the declared groups with it
// (T5), both through txn.InvolvedGroups, which Map serves as a txn.Router.
//
// Imports: pkg/bft (ids), pkg/bft/cluster (the cluster file) and pkg/txn's
// wire codec; no storage, network or metrics.
package oracle
