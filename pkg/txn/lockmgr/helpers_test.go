package lockmgr

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tid is a readable transaction id for tests: n in the first four bytes,
// which Holder.String prints.
func tid(n int) [32]byte {
	var b [32]byte
	binary.BigEndian.PutUint32(b[:4], uint32(n))
	return b
}

// txn is holder n with delivery order n.
func txn(n int) Holder { return Holder{ID: tid(n), Order: uint64(n)} }

func rl(k string) Lock  { return Lock{Mode: R, Start: []byte(k)} }
func wl(k string) Lock  { return Lock{Mode: W, Start: []byte(k)} }
func swl(k string) Lock { return Lock{Mode: SW, Start: []byte(k)} }

// srl is SR on [a, b); b == "" means unbounded.
func srl(a, b string) Lock {
	l := Lock{Mode: SR, Start: []byte(a)}
	if b != "" {
		l.End = []byte(b)
	}
	return l
}

// mustAcquire acquires and fails the test on an error or a conflict, then
// checks the table's invariants.
func mustAcquire(t testing.TB, tb *Table, h Holder, locks ...Lock) {
	t.Helper()
	c, err := tb.Acquire(h, locks)
	require.NoError(t, err)
	require.Nil(t, c, "acquire %v %v", h, locks)
	require.NoError(t, checkTable(tb))
}

// orders lists the delivery orders of holders (readable failures).
func orders(hs []Holder) []uint64 {
	if hs == nil {
		return nil
	}
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = h.Order
	}
	return out
}

// checkTable verifies every internal invariant of the table: the two-way
// links between holders and key entries, the single-writer-or-readers shape
// of each key, the AVL balance, order and augmentation of both trees, the
// canonical form of each holder's spans and points, and that nothing points
// at a released holder. Tests call it after each step.
func checkTable(t *Table) error {
	if len(t.byID) != len(t.byOrder) {
		return fmt.Errorf("byID has %d holders, byOrder %d", len(t.byID), len(t.byOrder))
	}
	live := func(h *holder) bool { return h != nil && t.byID[h.ID] == h }
	refs := 0
	var spans, points int
	for id, hd := range t.byID {
		if hd.ID != id || t.byOrder[hd.Order] != hd {
			return fmt.Errorf("holder %v indexed wrongly", hd.Holder)
		}
		seen := map[*keyEntry]bool{}
		for i, ref := range hd.keys {
			e := ref.e
			if seen[e] {
				return fmt.Errorf("holder %v has two locks on %q", hd.Holder, e.key)
			}
			seen[e] = true
			if t.keys[e.key] != e {
				return fmt.Errorf("holder %v: entry %q not in the map", hd.Holder, e.key)
			}
			if ref.pos < 0 {
				if e.writer != hd {
					return fmt.Errorf("holder %v: W on %q but writer is another", hd.Holder, e.key)
				}
			} else if int(ref.pos) >= len(e.readers) || e.readers[ref.pos] != (readerRef{h: hd, i: int32(i)}) {
				return fmt.Errorf("holder %v: R on %q: reader slot %d does not point back", hd.Holder, e.key, ref.pos)
			}
			refs++
		}
		for i, n := range hd.spans {
			if n.h != hd || n.order != hd.Order {
				return fmt.Errorf("holder %v: span node of another holder", hd.Holder)
			}
			if n.end.kind == closed || (n.end.kind == open && n.start >= n.end.key) {
				return fmt.Errorf("holder %v: bad span %q %v", hd.Holder, n.start, n.end)
			}
			if i > 0 {
				p := hd.spans[i-1]
				if p.end.kind == inf || n.start <= p.end.key {
					return fmt.Errorf("holder %v: spans %q and %q overlap or touch", hd.Holder, p.start, n.start)
				}
			}
		}
		ps := map[string]bool{}
		for _, n := range hd.points {
			if n.h != hd || n.order != hd.Order || n.end.kind != closed || n.end.key != n.start {
				return fmt.Errorf("holder %v: bad point node %q", hd.Holder, n.start)
			}
			if ps[n.start] {
				return fmt.Errorf("holder %v: point %q twice", hd.Holder, n.start)
			}
			ps[n.start] = true
		}
		spans += len(hd.spans)
		points += len(hd.points)
	}
	entryRefs := 0
	for k, e := range t.keys {
		if e.key != k {
			return fmt.Errorf("entry %q under map key %q", e.key, k)
		}
		if e.keyOwner != nil && !live(e.keyOwner) {
			return fmt.Errorf("entry %q pins the arena of a released holder", k)
		}
		switch {
		case e.writer == nil && len(e.readers) == 0:
			return fmt.Errorf("empty entry %q left in the map", k)
		case e.writer != nil && len(e.readers) > 0:
			return fmt.Errorf("entry %q has a writer and %d readers", k, len(e.readers))
		case e.writer != nil:
			if !live(e.writer) || !slices.Contains(e.writer.keys, keyRef{e: e, pos: -1}) {
				return fmt.Errorf("entry %q: writer does not point back", k)
			}
			entryRefs++
		}
		for p, r := range e.readers {
			if !live(r.h) || int(r.i) >= len(r.h.keys) || r.h.keys[r.i] != (keyRef{e: e, pos: int32(p)}) {
				return fmt.Errorf("entry %q: reader %d does not point back", k, p)
			}
			entryRefs++
		}
	}
	if refs != entryRefs {
		return fmt.Errorf("holders have %d key locks, entries %d", refs, entryRefs)
	}
	for _, tr := range []struct {
		name string
		tree *itree
		want int
	}{{"sr", &t.sr, spans}, {"sw", &t.sw, points}} {
		n, err := checkTree(tr.tree.root, live)
		if err != nil {
			return fmt.Errorf("%s tree: %w", tr.name, err)
		}
		if n != tr.tree.n || n != tr.want {
			return fmt.Errorf("%s tree: %d nodes, count %d, holders have %d", tr.name, n, tr.tree.n, tr.want)
		}
	}
	return nil
}

// checkTree checks balance, heights, in-order (start, order) and the max
// augmentation, and returns the node count.
func checkTree(root *inode, live func(*holder) bool) (int, error) {
	var prev *inode
	var walk func(n *inode) (int, error)
	walk = func(n *inode) (int, error) {
		if n == nil {
			return 0, nil
		}
		nl, err := walk(n.left)
		if err != nil {
			return 0, err
		}
		if prev != nil && cmpPos(n.start, n.order, prev) <= 0 {
			return 0, fmt.Errorf("order broken at %q/%d after %q/%d", n.start, n.order, prev.start, prev.order)
		}
		prev = n
		if !live(n.h) {
			return 0, fmt.Errorf("node %q of a released holder", n.start)
		}
		nr, err := walk(n.right)
		if err != nil {
			return 0, err
		}
		hl, hr := height(n.left), height(n.right)
		if n.height != 1+max(hl, hr) || hl-hr > 1 || hr-hl > 1 {
			return 0, fmt.Errorf("node %q: height %d, children %d and %d", n.start, n.height, hl, hr)
		}
		want := n.end
		for _, c := range []*inode{n.left, n.right} {
			if c != nil && cmpLimit(c.max, want) > 0 {
				want = c.max
			}
		}
		if cmpLimit(n.max, want) != 0 {
			return 0, fmt.Errorf("node %q: max %v, want %v", n.start, n.max, want)
		}
		return nl + 1 + nr, nil
	}
	return walk(root)
}

// showLocks renders a lock list for datadriven output.
func showLocks(ls []Lock) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, " ")
}
