package lockmgr

// The interval tree behind the structural locks (txn.md L2).
//
// Two of them live in a Table: one holds the SR spans, the other the SW
// points (a point k is the interval [k, k]). The two queries the lock rules
// need are then one operation, "every interval that overlaps [lo, hi)":
//
//   - an SW request on k asks the SR tree for the spans with
//     start <= k < end (hi is k itself, inclusive);
//   - an SR request on [a, b) asks the SW tree for the points with
//     a <= k < b, an in-order range scan.
//
// It is an AVL tree ordered by (start, holder order), augmented with the
// largest end in each subtree (CLRS §14.3), so a query prunes every subtree
// whose intervals all end at or before lo. A query that finds nothing — the
// granted case, the hot one — walks one root-to-leaf path: O(log n). A query
// that finds k intervals costs O(log n + k) on the SW tree (the matching
// points are contiguous in order) and at most O(k log n) on the SR tree.
//
// Why not a library: github.com/google/btree and github.com/tidwall/btree
// (both served here) keep no per-node summary, so they cannot prune by the
// largest end, and a stabbing query over them degrades to a scan of every
// span that starts before the key. AVL is used rather than a treap or a
// skip list because it is balanced without randomness: the table must be
// deterministic (no math/rand in a replica core) and adversarial keys must
// not be able to unbalance it. The model test checks it against a brute-force
// list, and checkTree (in the tests) checks balance, order and the
// augmentation after every step.
//
// Nodes keep their identity: a removal relinks the in-order successor in
// the removed node's place instead of copying it, so a holder can keep
// pointers to its own nodes.

// limitKind says how an upper bound relates to its key.
type limitKind uint8

const (
	open   limitKind = iota // exclusive: keys < key are below it (SR spans)
	closed                  // inclusive: keys <= key are below it (SW points)
	inf                     // unbounded: every key is below it
)

// limit is the upper bound of an interval or a query.
type limit struct {
	key  string
	kind limitKind
}

// above reports whether key k lies below the bound (k < l).
func (l limit) above(k string) bool {
	switch l.kind {
	case open:
		return k < l.key
	case closed:
		return k <= l.key
	}
	return true
}

// cmpLimit orders bounds by the set of keys below them. A closed bound on
// k admits exactly the keys an open bound on k+"\x00" admits, and no key
// lies strictly between k and k+"\x00", so comparing keys first and then
// open < closed gives every pair of distinct sets the right order; the two
// spellings of one set may compare either way, which is harmless because
// the tree only ever asks whether a bound is above a key.
func cmpLimit(a, b limit) int {
	if a.kind == inf || b.kind == inf {
		switch {
		case a.kind == b.kind:
			return 0
		case a.kind == inf:
			return 1
		}
		return -1
	}
	switch {
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	}
	return int(a.kind) - int(b.kind)
}

type inode struct {
	start string
	end   limit
	order uint64 // the holder's delivery order: the tie-break in the tree order
	h     *holder

	left, right *inode
	height      int8
	max         limit // the largest end in this subtree
}

// itree is an interval tree with a free list of nodes, so a steady stream of
// acquire and release does not allocate.
type itree struct {
	root *inode
	n    int
	free []*inode
}

// maxFreeNodes bounds the free list (nodes are small; this keeps a burst
// from pinning memory forever).
const maxFreeNodes = 4096

func (t *itree) newNode(start string, end limit, h *holder) *inode {
	var n *inode
	if k := len(t.free); k > 0 {
		n = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		n = new(inode)
	}
	*n = inode{start: start, end: end, order: h.Order, h: h}
	return n
}

func (t *itree) freeNode(n *inode) {
	*n = inode{}
	if len(t.free) < maxFreeNodes {
		t.free = append(t.free, n)
	}
}

// insert adds n unless a node with the same (start, order) is present, and
// reports whether it did. A holder's SW points are deduplicated this way.
func (t *itree) insert(n *inode) bool {
	var ok bool
	t.root, ok = insertNode(t.root, n)
	if ok {
		t.n++
	}
	return ok
}

// remove unlinks the node with (start, order) and returns it (nil if absent).
func (t *itree) remove(start string, order uint64) *inode {
	var x *inode
	t.root, x = removeNode(t.root, start, order)
	if x != nil {
		t.n--
		x.left, x.right = nil, nil
	}
	return x
}

// cmpPos orders (start, order) against node n.
func cmpPos(start string, order uint64, n *inode) int {
	switch {
	case start < n.start:
		return -1
	case start > n.start:
		return 1
	case order < n.order:
		return -1
	case order > n.order:
		return 1
	}
	return 0
}

func height(n *inode) int8 {
	if n == nil {
		return 0
	}
	return n.height
}

// fix recomputes the height and the augmentation from the children.
func (n *inode) fix() {
	n.height = 1 + max(height(n.left), height(n.right))
	n.max = n.end
	if n.left != nil && cmpLimit(n.left.max, n.max) > 0 {
		n.max = n.left.max
	}
	if n.right != nil && cmpLimit(n.right.max, n.max) > 0 {
		n.max = n.right.max
	}
}

func rotateRight(n *inode) *inode {
	l := n.left
	n.left = l.right
	n.fix()
	l.right = n
	l.fix()
	return l
}

func rotateLeft(n *inode) *inode {
	r := n.right
	n.right = r.left
	n.fix()
	r.left = n
	r.fix()
	return r
}

// balance restores the AVL property at n (children balanced, heights
// differing by at most 2) and the augmentation.
func balance(n *inode) *inode {
	n.fix()
	switch bf := height(n.left) - height(n.right); {
	case bf > 1:
		if height(n.left.left) < height(n.left.right) {
			n.left = rotateLeft(n.left)
		}
		return rotateRight(n)
	case bf < -1:
		if height(n.right.right) < height(n.right.left) {
			n.right = rotateRight(n.right)
		}
		return rotateLeft(n)
	}
	return n
}

func insertNode(root, n *inode) (*inode, bool) {
	if root == nil {
		n.left, n.right = nil, nil
		n.fix()
		return n, true
	}
	var ok bool
	switch c := cmpPos(n.start, n.order, root); {
	case c < 0:
		root.left, ok = insertNode(root.left, n)
	case c > 0:
		root.right, ok = insertNode(root.right, n)
	default:
		return root, false
	}
	if !ok {
		return root, false
	}
	return balance(root), true
}

// removeMin unlinks the leftmost node of a non-empty subtree.
func removeMin(root *inode) (*inode, *inode) {
	if root.left == nil {
		return root.right, root
	}
	var m *inode
	root.left, m = removeMin(root.left)
	return balance(root), m
}

func removeNode(root *inode, start string, order uint64) (*inode, *inode) {
	if root == nil {
		return nil, nil
	}
	var x *inode
	switch c := cmpPos(start, order, root); {
	case c < 0:
		root.left, x = removeNode(root.left, start, order)
	case c > 0:
		root.right, x = removeNode(root.right, start, order)
	default:
		if root.left == nil {
			return root.right, root
		}
		if root.right == nil {
			return root.left, root
		}
		// Relink the successor in root's place (node identity is kept).
		r, m := removeMin(root.right)
		m.left, m.right = root.left, r
		return balance(m), root
	}
	if x == nil {
		return root, nil
	}
	return balance(root), x
}

// overlapping appends to out the holder (other than self) of every interval
// that overlaps [lo, hi): start is below hi and end is above lo. Each holder
// is appended once per query: mark records the query that last saw it.
func overlapping(n *inode, lo string, hi limit, self *holder, mark uint64, out []*holder) []*holder {
	for n != nil {
		if !n.max.above(lo) {
			return out // every interval here ends at or before lo
		}
		out = overlapping(n.left, lo, hi, self, mark, out)
		if !hi.above(n.start) {
			return out // n and its right subtree start at or after hi
		}
		if n.end.above(lo) && n.h != self && n.h.mark != mark {
			n.h.mark = mark
			out = append(out, n.h)
		}
		n = n.right
	}
	return out
}
