package coord

import (
	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Metadata refresh (K1). A data transaction compares the metadata version
// held for each involved group (M2); a group whose version moved votes abort
// ("stale metadata") with its version, and one whose partition map routes
// the operations elsewhere votes "wrong groups" (T5). The client then reads
// the group's version and map — a transaction with two metadata reads, at
// the group alone, comparing the version the group showed — adopts a newer
// map, and retries.

// refresh is a map refresh in flight; callers that need the same group's
// metadata wait for it.
type refresh struct {
	waiters []func()
}

// learnVersion records group g's metadata version v, refreshing the map
// first when v is newer than the map held; then calls then.
func (c *Core) learnVersion(g bft.GroupID, v uint64, then func()) {
	c.held[g] = v
	if v > c.pmapVersion {
		c.refreshMap(g, then)
		return
	}
	then()
}

// refreshMap reads group g's metadata version and partition map at the
// version held for g, adopts them, and calls then (also if the read failed:
// the caller's retry meets the same vote again, within its budget).
func (c *Core) refreshMap(g bft.GroupID, then func()) {
	if rf := c.refreshes[g]; rf != nil {
		rf.waiters = append(rf.waiters, then)
		return
	}
	rf := &refresh{waiters: []func(){then}}
	c.refreshes[g] = rf
	c.cfg.Metrics.refresh()
	ops := txn.NewBuilder().Read(txn.MetaVersionKey).Meta().Read(txn.MetaPartitionsKey).Meta().Ops()
	c.nextHandle++
	gg := g
	r := &request{c: c, h: c.nextHandle, ops: ops, refreshOf: &gg, started: c.env.Now()}
	r.done = func(res *Result, err error) {
		delete(c.refreshes, g)
		if err == nil {
			c.adoptMetadata(g, res.Ops)
		} else {
			c.cfg.Logger.Debug("coord: map refresh failed", "group", g, "err", err)
		}
		for _, w := range rf.waiters {
			w()
		}
	}
	if err := r.check(); err != nil {
		r.complete(nil, err)
		return
	}
	c.requests[r.h] = r
	r.launch()
}

// adoptMetadata takes the version and map a refresh read at group g: a map
// newer than the one held replaces it, and every group is then assumed at
// least at its version (a metadata transaction commits in every group, M1);
// a group still behind says so with its own stale vote.
func (c *Core) adoptMetadata(g bft.GroupID, ops []OpResult) {
	if len(ops) != 2 || !ops[0].Present || !ops[1].Present {
		c.anomaly("refresh_without_metadata", "group", g)
		return
	}
	v, err := txn.DecodeVersion(ops[0].Value)
	if err != nil {
		c.anomaly("refresh_bad_version", "group", g, "err", err)
		return
	}
	m, err := oracle.Decode(ops[1].Value)
	if err != nil {
		c.anomaly("refresh_bad_map", "group", g, "err", err)
		return
	}
	for _, mg := range m.Groups() {
		if !c.cfg.Keys.HasGroup(mg) {
			c.anomaly("refresh_unknown_group", "group", g, "names", mg)
			return
		}
	}
	c.held[g] = v
	if v > c.pmapVersion {
		c.pmap, c.pmapVersion = m, v
		for _, h := range c.groups {
			if c.held[h] < v {
				c.held[h] = v
			}
		}
	}
}
