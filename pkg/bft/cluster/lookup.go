package cluster

import (
	"crypto/ed25519"
	"fmt"
	"sort"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
)

// The lookups below assume a validated cluster (Load validates); on one
// that is not, they return errors rather than panic.

// Group returns the group with id.
func (c *Cluster) Group(id bft.GroupID) (*Group, error) {
	for i := range c.Groups {
		if c.Groups[i].ID == uint32(id) {
			return &c.Groups[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no group %d", ErrNotFound, id)
}

// Replica returns the replica called name and its group.
func (c *Cluster) Replica(name string) (*Group, *Replica, error) {
	for gi := range c.Groups {
		g := &c.Groups[gi]
		for ri := range g.Replicas {
			if g.Replicas[ri].Name == name {
				return g, &g.Replicas[ri], nil
			}
		}
	}
	return nil, nil, fmt.Errorf("%w: no replica %q in the cluster", ErrNotFound, name)
}

// ReplicaID returns the group and bft.ReplicaID of the replica called name.
func (c *Cluster) ReplicaID(name string) (bft.GroupID, bft.ReplicaID, error) {
	g, r, err := c.Replica(name)
	if err != nil {
		return 0, 0, err
	}
	return bft.GroupID(g.ID), bft.ReplicaID(r.Index), nil
}

// ReplicaByKey returns the replica whose public key is pub, in any group.
func (c *Cluster) ReplicaByKey(pub ed25519.PublicKey) (*Group, *Replica, error) {
	enc := auth.EncodePublicKey(pub)
	for gi := range c.Groups {
		g := &c.Groups[gi]
		for ri := range g.Replicas {
			if g.Replicas[ri].PublicKey == enc {
				return g, &g.Replicas[ri], nil
			}
		}
	}
	return nil, nil, fmt.Errorf("%w: no replica has key %s", ErrNotFound, enc)
}

// Client returns the client called name.
func (c *Cluster) Client(name string) (*Client, error) {
	for i := range c.Clients {
		if c.Clients[i].Name == name {
			return &c.Clients[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no client %q in the cluster", ErrNotFound, name)
}

// ReplicasByIndex returns the group's replicas ordered by index, so that
// element i is bft.ReplicaID i.
func (g *Group) ReplicasByIndex() []Replica {
	rs := append([]Replica(nil), g.Replicas...)
	sort.Slice(rs, func(a, b int) bool { return rs[a].Index < rs[b].Index })
	return rs
}

// GroupKeys returns the public keys of a group's replicas in index order.
func (c *Cluster) GroupKeys(id bft.GroupID) ([]ed25519.PublicKey, error) {
	g, err := c.Group(id)
	if err != nil {
		return nil, err
	}
	rs := g.ReplicasByIndex()
	keys := make([]ed25519.PublicKey, len(rs))
	for i, r := range rs {
		if r.Index != uint32(i) {
			return nil, fmt.Errorf("%w: group %d has no replica with index %d", ErrGroupSize, id, i)
		}
		if keys[i], err = auth.ParsePublicKey(r.PublicKey); err != nil {
			return nil, fmt.Errorf("cluster: replica %s: %w", r.Name, err)
		}
	}
	return keys, nil
}

// ReplicaKeys returns the public keys of every replica of the cluster, group
// by group in index order (for TLS acceptance across groups).
func (c *Cluster) ReplicaKeys() ([]ed25519.PublicKey, error) {
	var all []ed25519.PublicKey
	for _, g := range c.Groups {
		keys, err := c.GroupKeys(bft.GroupID(g.ID))
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
	}
	return all, nil
}

// ClientKeys returns the public keys of the listed clients, in file order.
func (c *Cluster) ClientKeys() ([]ed25519.PublicKey, error) {
	keys := make([]ed25519.PublicKey, len(c.Clients))
	for i, cl := range c.Clients {
		var err error
		if keys[i], err = auth.ParsePublicKey(cl.PublicKey); err != nil {
			return nil, fmt.Errorf("cluster: client %s: %w", cl.Name, err)
		}
	}
	return keys, nil
}

// Policy returns the parsed client policy.
func (c *Cluster) Policy() (auth.ClientPolicy, error) {
	p, err := auth.ParseClientPolicy(c.ClientPolicy)
	if err != nil { // the auth error says the same; keep one prefix
		return 0, fmt.Errorf("%w: %q", ErrUnknownPolicy, c.ClientPolicy)
	}
	return p, nil
}

// Verifier returns the verifier of a group: its replicas' keys in index
// order, and the cluster's client policy with the listed clients.
func (c *Cluster) Verifier(id bft.GroupID) (*auth.Verifier, error) {
	replicas, err := c.GroupKeys(id)
	if err != nil {
		return nil, err
	}
	policy, err := c.Policy()
	if err != nil {
		return nil, err
	}
	cfg := auth.VerifierConfig{Replicas: replicas, Policy: policy}
	if policy == auth.ClientsListed {
		if cfg.Clients, err = c.ClientKeys(); err != nil {
			return nil, err
		}
	}
	v, err := auth.NewVerifier(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: verifier of group %d: %w", id, err)
	}
	return v, nil
}

// PeerKeys returns the pinned keys of a group's replicas, indexed by
// bft.ReplicaID: its Accept method is the TLS acceptance function for the
// group's peer links and its Identify method tells which replica connected.
func (c *Cluster) PeerKeys(id bft.GroupID) (*auth.PeerKeys, error) {
	keys, err := c.GroupKeys(id)
	if err != nil {
		return nil, err
	}
	return auth.NewPeerKeys(keys)
}

// BFTConfig returns bft.DefaultConfig for the replica called name with the
// cluster's parameters filled in (cluster id, group, id, n, f, K, L, W). The
// caller sets the Signer and may adjust the remaining tunables.
func (c *Cluster) BFTConfig(name string) (bft.Config, error) {
	g, id, err := c.ReplicaID(name)
	if err != nil {
		return bft.Config{}, err
	}
	cfg := bft.DefaultConfig(id, c.F)
	cfg.ClusterID = c.ClusterID
	cfg.Group = g
	cfg.CheckpointInterval = bft.SeqNum(c.CheckpointInterval)
	cfg.LogWindow = bft.SeqNum(c.LogWindow)
	cfg.ClientWindow = uint64(c.ClientWindow)
	return cfg, nil
}
