// Package cluster reads, checks and writes the cluster file (cluster.json)
// and the key files of an Augustus cluster. The process tooling (augustus
// init, replica, start), the group client and the replicas all read the same
// file.
//
// A cluster directory, as Generate lays it out:
//
//	<dir>/cluster.json        groups, replicas (index, addresses, public
//	                          keys), clients, f, K, L, W, client policy and
//	                          the initial partition map; mode 0644
//	<dir>/keys/<name>.key     one Ed25519 private key per replica and per
//	                          client, PKCS#8 PEM, mode 0600 (directory 0700)
//	<dir>/keys/sql-root.password
//	                          the generated password of the SQL account root
//	                          (GenerateOptions.SQLRoot), mode 0600; its hash
//	                          is in cluster.json's sql_users
//
// Validate reports every problem it finds, each wrapping ErrInvalid and a
// specific sentinel (ErrGroupSize, ErrDuplicate, ErrBadAddress, ...). Names,
// addresses and public keys must be unique across the whole cluster. The
// partition map is kept as data: ranges of hex key bounds that must cover the
// key space exactly once, each owned by one group; pkg/txn interprets it.
//
// Lookups turn the file into what the other layers take: a group's replica
// keys in bft.ReplicaID order, an auth.Verifier with the client policy
// applied, auth.PeerKeys for TLS pinning, and a bft.Config.
//
// This package reads and writes files only; it imports pkg/bft (ids and
// Config) and pkg/bft/auth, and must not import the network, storage or
// metrics layers.
package cluster
