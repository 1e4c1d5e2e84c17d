package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// The key space of the transaction workloads: items with 4-byte keys
// spread evenly over the key space above the reserved metadata prefix
// (0x00), so that a range map — what `augustus init --groups N` writes,
// oracle.FromCluster reads — gives every group an equal, contiguous slice
// of the items; and the generator that draws the items of a transaction
// (txnGen), single-group or spanning two groups.

// keyBase is the first item's key: keys starting with 0x00 are reserved for
// the metadata keyspace (txn.IsReservedMetaKey).
const keyBase = 0x0100_0000

// maxItems bounds --items so that items are an even number of keys apart,
// at least 2 (see keySpace.offset).
const maxItems = (0xFFFF_FFFF - keyBase) / 2

// itemSpan is the items [lo, hi) of one range of the partition map.
type itemSpan struct{ lo, hi int }

// keySpace maps items to keys and keys to groups.
type keySpace struct {
	items int
	step  uint32
	// offset shifts every key by one for the workloads with 1 KiB values
	// (B, D), so that they and the 4-byte-value workloads (A, C) keep
	// disjoint items in one cluster (odd keys and even keys), as the
	// paper's two databases (3M small items, 1M large ones).
	offset uint32
	suffix []byte // appended to every key (the bank's accounts)
	// groups are the groups holding at least one item, in increasing
	// order; spans and counts are per entry of groups.
	groups []bft.GroupID
	spans  [][]itemSpan
	counts []int
}

// errHashedMap: the key space needs ranges owned by one group each.
var errHashedMap = errors.New("the partition map spreads a range over several groups by hash; the transaction workloads need a range map (augustus init writes one)")

// newKeySpace spreads items over the key space and finds which items each
// group of the range map m holds. suffix, if any, is appended to every key
// (a key space disjoint from the plain items, on the same groups).
func newKeySpace(m *oracle.Map, items int, offset uint32, suffix []byte) (*keySpace, error) {
	if items < 1 || items > maxItems {
		return nil, fmt.Errorf("--items %d: want 1..%d", items, maxItems)
	}
	// An even step and keyBase: the keys of offset 0 are even, those of
	// offset 1 odd, whatever the two key spaces' --items.
	ks := &keySpace{items: items, step: uint32((0xFFFF_FFFF-keyBase)/items) &^ 1, offset: min(offset, 1), suffix: suffix}
	byGroup := map[bft.GroupID][]itemSpan{}
	ranges := m.Ranges()
	// first(start) is the first item whose key is at or above start: keys
	// grow with the item, so each range of the map holds a contiguous run
	// of items.
	first := func(start []byte) int {
		return sort.Search(items, func(i int) bool { return bytes.Compare(ks.key(i), start) >= 0 })
	}
	for i, r := range ranges {
		if len(r.Groups) != 1 {
			return nil, errHashedMap
		}
		lo, hi := first(r.Start), items
		if i+1 < len(ranges) {
			hi = first(ranges[i+1].Start)
		}
		if lo < hi {
			byGroup[r.Groups[0]] = append(byGroup[r.Groups[0]], itemSpan{lo, hi})
		}
	}
	for _, g := range m.Groups() {
		spans := byGroup[g]
		if len(spans) == 0 {
			continue
		}
		n := 0
		for _, s := range spans {
			n += s.hi - s.lo
		}
		ks.groups = append(ks.groups, g)
		ks.spans = append(ks.spans, spans)
		ks.counts = append(ks.counts, n)
	}
	return ks, nil
}

// key returns item i's key: 4 bytes, big-endian (keyBase + offset + i ×
// step), then the suffix.
func (ks *keySpace) key(i int) []byte {
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(ks.suffix)), keyBase+ks.offset+uint32(i)*ks.step)
	return append(b, ks.suffix...)
}

// nth returns the n-th item (0 <= n < counts[gi]) of group index gi.
func (ks *keySpace) nth(gi, n int) int {
	for _, s := range ks.spans[gi] {
		if n < s.hi-s.lo {
			return s.lo + n
		}
		n -= s.hi - s.lo
	}
	panic("keySpace.nth: out of range")
}

// groupIndex returns the index in ks.groups of the group holding item i.
func (ks *keySpace) groupIndex(i int) int {
	for gi, spans := range ks.spans {
		for _, s := range spans {
			if i >= s.lo && i < s.hi {
				return gi
			}
		}
	}
	panic("keySpace.groupIndex: item out of range")
}

// txnGen draws the items of each transaction. It is used by one caller
// (not safe for concurrent use).
type txnGen struct {
	ks            *keySpace
	reads, writes int
	// multiPct is the share of transactions (percent) that span two groups.
	multiPct int
	rng      *rand.Rand
}

// genTxn is one drawn transaction: the items it reads and writes, and the
// groups (indices into keySpace.groups) it involves.
type genTxn struct {
	reads, writes []int
	groups        []int
	multi         bool
}

// checkGen says whether transactions of this size and mix can be drawn
// from the key space.
func checkGen(ks *keySpace, keysPerTxn, multiPct int) error {
	if multiPct < 0 || multiPct > 100 {
		return fmt.Errorf("--multi-group %d: want a percentage, 0..100", multiPct)
	}
	if multiPct > 0 && len(ks.groups) < 2 {
		return fmt.Errorf("--multi-group %d: the cluster's items lie in %d group(s); multi-group transactions need 2 (augustus init --groups 2)", multiPct, len(ks.groups))
	}
	need := keysPerTxn
	if multiPct > 0 {
		need = (keysPerTxn + 1) / 2
	}
	for gi, n := range ks.counts {
		if n < need {
			return fmt.Errorf("--items %d: group %d holds %d items, fewer than the %d distinct keys a transaction takes from it", ks.items, ks.groups[gi], n, need)
		}
	}
	return nil
}

// next draws the next transaction: multi-group with probability multiPct
// %, then its groups (single: a group chosen with probability proportional
// to the items it holds, i.e. uniform items; multi: two distinct groups
// chosen likewise), then distinct items, dealt alternately to the groups.
func (g *txnGen) next() genTxn {
	t := genTxn{multi: len(g.ks.groups) > 1 && g.rng.IntN(100) < g.multiPct}
	a := g.pickGroup(-1)
	t.groups = []int{a}
	if t.multi {
		t.groups = append(t.groups, g.pickGroup(a))
	}
	seen := make(map[int]bool, g.reads+g.writes)
	draw := func(j int) int {
		gi := t.groups[j%len(t.groups)]
		for {
			it := g.ks.nth(gi, g.rng.IntN(g.ks.counts[gi]))
			if !seen[it] {
				seen[it] = true
				return it
			}
		}
	}
	for j := 0; j < g.reads; j++ {
		t.reads = append(t.reads, draw(j))
	}
	for j := 0; j < g.writes; j++ {
		t.writes = append(t.writes, draw(j))
	}
	return t
}

// pickGroup draws a group index other than not, weighted by items held.
func (g *txnGen) pickGroup(not int) int {
	total := g.ks.items
	if not >= 0 {
		total -= g.ks.counts[not]
	}
	n := g.rng.IntN(total)
	for gi, c := range g.ks.counts {
		if gi == not {
			continue
		}
		if n < c {
			return gi
		}
		n -= c
	}
	panic("txnGen.pickGroup: no group")
}

// value returns a value of size bytes that carries seq (so consecutive
// writes differ): its first bytes are seq, big-endian, then filler.
func benchValue(size int, seq uint64) []byte {
	v := make([]byte, size)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	copy(v, b[8-min(8, size):])
	for i := 8; i < size; i++ {
		v[i] = 'v'
	}
	return v
}
