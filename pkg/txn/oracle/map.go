package oracle

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/internal/wire"
)

// ErrInvalid is wrapped by every malformed map.
var ErrInvalid = errors.New("oracle: invalid partition map")

// Range is one range of a Map: the keys from Start (inclusive) up to the next
// range's Start (or without bound for the last range).
type Range struct {
	Start []byte
	// Groups holds the range: one group owns it; several share it by hash
	// (a key k belongs to Groups[fnv1a64(k) mod len(Groups)], so their order
	// matters).
	Groups []bft.GroupID
}

// Map assigns every key to a group. It is immutable once built.
type Map struct {
	ranges []Range
}

var _ txn.Router = (*Map)(nil)

// New builds a map from ranges in increasing Start order; the first starts at
// the empty key, so the map covers every key.
func New(ranges []Range) (*Map, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("%w: no ranges", ErrInvalid)
	}
	if len(ranges[0].Start) != 0 {
		return nil, fmt.Errorf("%w: the first range starts at %x, not at the empty key", ErrInvalid, ranges[0].Start)
	}
	m := &Map{ranges: make([]Range, len(ranges))}
	for i, r := range ranges {
		if i > 0 && bytes.Compare(r.Start, ranges[i-1].Start) <= 0 {
			return nil, fmt.Errorf("%w: range %d does not start after range %d", ErrInvalid, i, i-1)
		}
		if len(r.Groups) == 0 {
			return nil, fmt.Errorf("%w: range %d has no group", ErrInvalid, i)
		}
		seen := make(map[bft.GroupID]bool, len(r.Groups))
		for _, g := range r.Groups {
			if seen[g] {
				return nil, fmt.Errorf("%w: range %d lists group %d twice", ErrInvalid, i, g)
			}
			seen[g] = true
		}
		m.ranges[i] = Range{Start: bytes.Clone(r.Start), Groups: slices.Clone(r.Groups)}
		if m.ranges[i].Start == nil {
			m.ranges[i].Start = []byte{}
		}
	}
	return m, nil
}

// Hash returns the map that spreads every key over groups by hash.
func Hash(groups []bft.GroupID) (*Map, error) {
	return New([]Range{{Start: []byte{}, Groups: groups}})
}

// FromCluster returns the initial range map of cluster.json's partitions.
func FromCluster(c *cluster.Cluster) (*Map, error) {
	ranges := make([]Range, 0, len(c.Partitions))
	for i, p := range c.Partitions {
		start, _, err := p.Bounds()
		if err != nil {
			return nil, fmt.Errorf("%w: partitions[%d]: %w", ErrInvalid, i, err)
		}
		ranges = append(ranges, Range{Start: start, Groups: []bft.GroupID{bft.GroupID(p.Group)}})
	}
	sort.Slice(ranges, func(a, b int) bool { return bytes.Compare(ranges[a].Start, ranges[b].Start) < 0 })
	return New(ranges)
}

// Ranges returns the map's ranges (do not modify them).
func (m *Map) Ranges() []Range { return m.ranges }

// Groups returns every group the map names, in increasing order.
func (m *Map) Groups() []bft.GroupID {
	var gs []bft.GroupID
	for _, r := range m.ranges {
		gs = append(gs, r.Groups...)
	}
	slices.Sort(gs)
	return slices.Compact(gs)
}

// index returns the index of the range holding key.
func (m *Map) index(key []byte) int {
	return sort.Search(len(m.ranges), func(i int) bool { return bytes.Compare(m.ranges[i].Start, key) > 0 }) - 1
}

// KeyGroup returns the group that holds key.
func (m *Map) KeyGroup(key []byte) bft.GroupID {
	r := &m.ranges[m.index(key)]
	if len(r.Groups) == 1 {
		return r.Groups[0]
	}
	return r.Groups[hashKey(key)%uint64(len(r.Groups))]
}

// hashKey is FNV-1a 64: stable across processes and versions (a replica and
// a client must agree on it forever), and cheap.
func hashKey(key []byte) uint64 {
	h := fnv.New64a()
	h.Write(key)
	return h.Sum64()
}

// AppendRangeGroups appends the groups holding part of [start, end) (end
// nil: unbounded), in increasing order without duplicates: the groups of
// every range that meets it, all groups of a hashed range (T5).
func (m *Map) AppendRangeGroups(dst []bft.GroupID, start, end []byte) []bft.GroupID {
	n := len(dst)
	first := m.index(start)
	for i := first; i < len(m.ranges); i++ {
		if i > first && end != nil && bytes.Compare(m.ranges[i].Start, end) >= 0 {
			break
		}
		dst = append(dst, m.ranges[i].Groups...)
	}
	tail := dst[n:]
	slices.Sort(tail)
	return dst[:n+len(slices.Compact(tail))]
}

// Equal reports whether two maps are the same.
func (m *Map) Equal(o *Map) bool {
	return slices.EqualFunc(m.ranges, o.ranges, func(a, b Range) bool {
		return bytes.Equal(a.Start, b.Start) && slices.Equal(a.Groups, b.Groups)
	})
}

// Span is a key span [Start, End) (End nil: unbounded) whose groups a map
// change reassigns.
type Span struct {
	Start, End []byte
	Old, New   []bft.GroupID
}

// Moved returns the spans on which old and next assign keys differently, in
// key order (M3). A split of a range keeps its groups and moves nothing.
func Moved(old, next *Map) []Span {
	var bounds [][]byte
	for _, r := range old.ranges {
		bounds = append(bounds, r.Start)
	}
	for _, r := range next.ranges {
		bounds = append(bounds, r.Start)
	}
	slices.SortFunc(bounds, bytes.Compare)
	bounds = slices.CompactFunc(bounds, bytes.Equal)
	var spans []Span
	for i, b := range bounds {
		og, ng := old.ranges[old.index(b)].Groups, next.ranges[next.index(b)].Groups
		if slices.Equal(og, ng) {
			continue
		}
		var end []byte
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		if n := len(spans); n > 0 && bytes.Equal(spans[n-1].End, b) &&
			slices.Equal(spans[n-1].Old, og) && slices.Equal(spans[n-1].New, ng) {
			spans[n-1].End = end
			continue
		}
		spans = append(spans, Span{Start: b, End: end, Old: og, New: ng})
	}
	return spans
}

// The encoding stored under txn.MetaPartitionsKey:
//
//	map := format(1 byte, = 1) uvarint(#ranges ≥ 1) { bytes(start) uvarint(#groups ≥ 1) { uvarint(group) } }
//
// starts strictly increasing from the empty key, groups distinct within a
// range; strict and canonical like every encoding of pkg/txn.
const mapFormat = 1

// maxDecodeRanges bounds a decoded map.
const maxDecodeRanges = 1 << 20

// Encode returns the map's canonical encoding.
func (m *Map) Encode() []byte {
	b := []byte{mapFormat}
	b = wire.AppendUvarint(b, uint64(len(m.ranges)))
	for _, r := range m.ranges {
		b = wire.AppendBytes(b, r.Start)
		b = wire.AppendUvarint(b, uint64(len(r.Groups)))
		for _, g := range r.Groups {
			b = wire.AppendUvarint(b, uint64(g))
		}
	}
	return b
}

// Decode decodes a map strictly.
func Decode(b []byte) (*Map, error) {
	r := wire.NewReader(b)
	if f := r.Byte("map format"); r.Err() == nil && f != mapFormat {
		return nil, fmt.Errorf("%w: map format %d, this build reads %d", ErrInvalid, f, mapFormat)
	}
	n := r.Count("ranges", 2, maxDecodeRanges)
	ranges := make([]Range, n)
	for i := range ranges {
		ranges[i].Start = r.Bytes("range start", 0)
		ng := r.Count("range groups", 1, 0)
		ranges[i].Groups = make([]bft.GroupID, ng)
		for j := range ranges[i].Groups {
			ranges[i].Groups[j] = bft.GroupID(r.Uvarint32("group"))
		}
		if r.Err() != nil {
			break
		}
	}
	if err := r.Done("partition map"); err != nil {
		return nil, err
	}
	m, err := New(ranges)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", txn.ErrMalformed, err)
	}
	return m, nil
}
