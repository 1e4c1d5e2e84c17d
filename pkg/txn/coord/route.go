package coord

import (
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
)

// route returns the groups a transaction involves, with the metadata version
// held for each (K1): a data transaction is routed by the partition map held
// (the same txn.InvolvedGroups the groups check it with, T5) and carries
// cmp(metadata-version, v) for every involved group through the versions
// (M2); a metadata transaction involves every group (M1); a transaction with
// only metadata reads goes where Options.Groups says, by default to the
// first group.
func (c *Core) route(ops []txn.Op, opts *Options, pin *bft.GroupID) ([]txn.GroupVersion, error) {
	var gs []bft.GroupID
	switch {
	case pin != nil:
		gs = []bft.GroupID{*pin}
	case writesMetadata(ops):
		gs = c.groups
	default:
		gs = txn.InvolvedGroups(ops, c.pmap)
		if len(gs) == 0 {
			gs = slices.Clone(opts.Groups)
			slices.Sort(gs)
			gs = slices.Compact(gs)
		}
		if len(gs) == 0 {
			gs = c.groups[:1]
		}
	}
	out := make([]txn.GroupVersion, len(gs))
	for i, g := range gs {
		if !c.cfg.Keys.HasGroup(g) {
			return nil, fmt.Errorf("%w: group %d is not in the cluster", ErrInvalid, g)
		}
		v := c.held[g]
		if opts.PinVersion && pin == nil {
			v = opts.MetadataVersion // the caller's metadata (Options.PinVersion)
		}
		out[i] = txn.GroupVersion{Group: g, Version: v}
	}
	return out, nil
}

func writesMetadata(ops []txn.Op) bool {
	for i := range ops {
		if ops[i].Meta && ops[i].Kind.IsUpdate() {
			return true
		}
	}
	return false
}
