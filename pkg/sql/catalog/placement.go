package catalog

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/sql/rowenc"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Assign returns m with the span [start, end) (end nil: unbounded) held by
// groups (one group, or several sharing it by hash) and every other key where
// m had it. Adjacent ranges that end up with the same groups are merged.
// Under M3 the caller may only assign spans that hold no data yet (a new
// table's), which the groups check when the map is written.
func Assign(m *oracle.Map, start, end []byte, groups []bft.GroupID) (*oracle.Map, error) {
	if end != nil && bytes.Compare(start, end) >= 0 {
		return nil, fmt.Errorf("catalog: empty span to assign")
	}
	rs := m.Ranges()
	var out []oracle.Range
	add := func(s []byte, gs []bft.GroupID) {
		if n := len(out); n > 0 && slices.Equal(out[n-1].Groups, gs) {
			return // the previous range extends over s
		}
		out = append(out, oracle.Range{Start: s, Groups: gs})
	}
	placed := false
	for i, r := range rs {
		var rEnd []byte
		if i+1 < len(rs) {
			rEnd = rs[i+1].Start
		}
		// The part of r below start.
		if bytes.Compare(r.Start, start) < 0 {
			add(r.Start, r.Groups)
		}
		// The span itself, once, where it begins.
		if !placed && (rEnd == nil || bytes.Compare(start, rEnd) < 0) {
			add(start, groups)
			placed = true
		}
		// The part of r at or above end.
		if end != nil && (rEnd == nil || bytes.Compare(end, rEnd) < 0) {
			s := r.Start
			if bytes.Compare(s, end) < 0 {
				s = end
			}
			add(s, r.Groups)
		}
	}
	return oracle.New(out)
}

// PlaceTable returns m with table t's span assigned as its placement says.
// The range bounds are converted to the first primary key column's type and
// encoded as primary-key prefixes, so part i holds the rows whose first key
// column is below bound i and at or above bound i-1.
func PlaceTable(ctx context.Context, m *oracle.Map, t *Table) (*oracle.Map, error) {
	span := rowenc.TableSpan(t.ID)
	p := &t.Placement
	switch p.Kind {
	case PlaceGroup:
		return Assign(m, span.Start, span.End, p.Groups[:1])
	case PlaceHash:
		return Assign(m, span.Start, span.End, p.Groups)
	case PlaceRange:
		splits, err := RangeSplits(ctx, t)
		if err != nil {
			return nil, err
		}
		starts := append([][]byte{span.Start}, splits...)
		for i, s := range starts {
			e := span.End
			if i+1 < len(starts) {
				e = starts[i+1]
			}
			if m, err = Assign(m, s, e, p.Groups[i:i+1]); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("catalog: placement %q", p.Kind)
}

// RangeSplits returns the keys at which a range-placed table's parts begin
// (after the first), strictly increasing.
func RangeSplits(ctx context.Context, t *Table) ([][]byte, error) {
	c := t.Column(t.PK[0])
	var splits [][]byte
	for i, b := range t.Placement.Bounds {
		v, _, err := c.Type().Convert(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("catalog: partition bound %q is not a %s: %w", b, c.Type(), err)
		}
		k, err := rowenc.AppendKey(rowenc.IndexPrefix(t.ID, rowenc.PrimaryIndexID), c.Type(), v)
		if err != nil {
			return nil, err
		}
		if i > 0 && bytes.Compare(k, splits[i-1]) <= 0 {
			return nil, fmt.Errorf("catalog: partition bounds must increase: %s does not follow %s", b, t.Placement.Bounds[i-1])
		}
		splits = append(splits, k)
	}
	return splits, nil
}
