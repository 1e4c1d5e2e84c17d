package lockmgr

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestIntervalTreeAgreesWithBruteForce drives one tree through hundreds of
// random inserts and removes (far deeper than the table model reaches) and
// checks every overlap query against a scan of all intervals, and the AVL
// and max-end invariants after each step. The overlap query is the whole of
// txn.md L2's lookup, both ways round.
func TestIntervalTreeAgreesWithBruteForce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var tr itree
		type iv struct {
			start string
			end   limit
			h     *holder
		}
		var all []iv
		// Holders are only names here; order is the tie-break in the tree.
		hs := make([]*holder, 40)
		for i := range hs {
			hs[i] = &holder{Holder: Holder{ID: tid(i), Order: uint64(i)}}
		}
		key := rapid.Custom(func(t *rapid.T) string {
			return string([]byte{byte(rapid.IntRange('a', 'p').Draw(t, "k1")), byte(rapid.IntRange(0, 3).Draw(t, "k2"))})[:rapid.IntRange(0, 2).Draw(t, "len")]
		})
		end := rapid.Custom(func(t *rapid.T) limit {
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				return limit{kind: inf}
			case 1:
				return limit{key: key.Draw(t, "end"), kind: closed}
			}
			return limit{key: key.Draw(t, "end"), kind: open}
		})
		mark := uint64(0)
		rt.Repeat(map[string]func(*rapid.T){
			"insert": func(rt *rapid.T) {
				x := iv{start: key.Draw(rt, "start"), end: end.Draw(rt, "end"), h: rapid.SampledFrom(hs).Draw(rt, "h")}
				dup := slices.ContainsFunc(all, func(y iv) bool { return y.start == x.start && y.h == x.h })
				require.Equal(rt, !dup, tr.insert(tr.newNode(x.start, x.end, x.h)))
				if !dup {
					all = append(all, x)
				}
			},
			"insert many": func(rt *rapid.T) {
				for i := 0; i < 50; i++ {
					x := iv{start: key.Draw(rt, "start"), end: end.Draw(rt, "end"), h: rapid.SampledFrom(hs).Draw(rt, "h")}
					if !slices.ContainsFunc(all, func(y iv) bool { return y.start == x.start && y.h == x.h }) {
						require.True(rt, tr.insert(tr.newNode(x.start, x.end, x.h)))
						all = append(all, x)
					}
				}
			},
			"remove": func(rt *rapid.T) {
				if len(all) == 0 || rapid.IntRange(0, 9).Draw(rt, "absent") == 0 {
					require.Nil(rt, tr.remove("zzz", 0))
					return
				}
				i := rapid.IntRange(0, len(all)-1).Draw(rt, "i")
				n := tr.remove(all[i].start, all[i].h.Order)
				require.NotNil(rt, n)
				require.Equal(rt, all[i].start, n.start)
				require.Equal(rt, all[i].h, n.h)
				tr.freeNode(n)
				all = slices.Delete(all, i, i+1)
			},
			"query": func(rt *rapid.T) {
				lo, hi := key.Draw(rt, "lo"), end.Draw(rt, "hi")
				self := rapid.SampledFrom(append([]*holder{nil}, hs...)).Draw(rt, "self")
				mark++
				got := overlapping(tr.root, lo, hi, self, mark, nil)
				var want []*holder
				for _, x := range all {
					if hi.above(x.start) && x.end.above(lo) && x.h != self && !slices.Contains(want, x.h) {
						want = append(want, x.h)
					}
				}
				byOrder := func(a, b *holder) int { return cmpOrder(a.Order, b.Order) }
				slices.SortFunc(got, byOrder)
				slices.SortFunc(want, byOrder)
				require.Equal(rt, want, got, "overlap [%q, %v)", lo, hi)
			},
			"": func(rt *rapid.T) {
				n, err := checkTree(tr.root, func(*holder) bool { return true })
				require.NoError(rt, err)
				require.Equal(rt, len(all), n)
				require.Equal(rt, len(all), tr.n)
			},
		})
	})
}

// TestCmpLimitOrdersByKeysBelow: cmpLimit must agree with the sets of keys
// a bound admits (the max-end pruning relies on it), checked on a small
// universe where k+"\x00" spellings of one set occur.
func TestCmpLimitOrdersByKeysBelow(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "a", "a\x00", "a\x00\x00", "a\x01", "b"}
	var lims []limit
	for _, k := range keys {
		lims = append(lims, limit{key: k, kind: open}, limit{key: k, kind: closed})
	}
	lims = append(lims, limit{kind: inf})
	// count of universe keys below a bound, with a sentinel above all keys.
	below := func(l limit) int {
		n := 0
		for _, k := range append(keys, "\xff") {
			if l.above(k) {
				n++
			}
		}
		return n
	}
	for _, a := range lims {
		for _, b := range lims {
			na, nb := below(a), below(b)
			c := cmpLimit(a, b)
			switch {
			case na < nb:
				require.Negative(t, c, "%v vs %v", a, b)
			case na > nb:
				require.Positive(t, c, "%v vs %v", a, b)
			}
			r := cmpLimit(b, a)
			require.True(t, (c < 0) == (r > 0) && (c > 0) == (r < 0), "%v vs %v: not antisymmetric", a, b)
		}
	}
}
