package lockmgr

import (
	"bytes"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The reference model: a flat list of every lock each holder asked for, and
// a brute-force conflict check over all pairs, written straight from
// txn.md L1–L4 with no index, no merging and no normal form.

type model struct {
	hs map[[32]byte]*modelHolder
}

type modelHolder struct {
	h     Holder
	locks []Lock // as requested (copied)
}

func newModel() *model { return &model{hs: map[[32]byte]*modelHolder{}} }

// inSpan: k lies in SR span s = [Start, End), End empty = unbounded.
func inSpan(k []byte, s Lock) bool {
	return bytes.Compare(k, s.Start) >= 0 && (len(s.End) == 0 || bytes.Compare(k, s.End) < 0)
}

// conflictPair is Table 2 for two locks of different transactions.
func conflictPair(a, b Lock) bool {
	key := func(m Mode) bool { return m == R || m == W }
	switch {
	case key(a.Mode) && key(b.Mode): // L1
		return bytes.Equal(a.Start, b.Start) && (a.Mode == W || b.Mode == W)
	case a.Mode == SR && b.Mode == SW: // L2
		return inSpan(b.Start, a)
	case a.Mode == SW && b.Mode == SR:
		return inSpan(a.Start, b)
	}
	return false // L2 (SR–SR, SW–SW) and L3
}

func validLock(l Lock) bool {
	switch l.Mode {
	case R, W, SW:
		return len(l.End) == 0
	case SR:
		return true
	}
	return false
}

func (m *model) conflicts(self [32]byte, locks []Lock) ([]Holder, error) {
	for _, l := range locks {
		if !validLock(l) {
			return nil, ErrInvalidLock
		}
	}
	var out []Holder
	for id, mh := range m.hs {
		if id == self { // L4
			continue
		}
		hit := false
		for _, a := range mh.locks {
			for _, b := range locks {
				hit = hit || conflictPair(a, b)
			}
		}
		if hit {
			out = append(out, mh.h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}

func (m *model) admit(h Holder) error {
	if m.hs[h.ID] != nil {
		return ErrHolderExists
	}
	for _, mh := range m.hs {
		if mh.h.Order == h.Order {
			return ErrOrderTaken
		}
	}
	return nil
}

// acquire returns what Acquire must return.
func (m *model) acquire(h Holder, locks []Lock) ([]Holder, error) {
	if err := m.admit(h); err != nil {
		return nil, err
	}
	c, err := m.conflicts([32]byte{}, locks) // h is not in the model yet
	if err != nil || c != nil {
		return c, err
	}
	cp := make([]Lock, len(locks))
	for i, l := range locks {
		cp[i] = Lock{Mode: l.Mode, Start: bytes.Clone(l.Start), End: bytes.Clone(l.End)}
	}
	m.hs[h.ID] = &modelHolder{h: h, locks: cp}
	return nil, nil
}

func (m *model) holders() []Holder {
	var out []Holder
	for _, mh := range m.hs {
		out = append(out, mh.h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

func bs(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// normalForm is what Held must return for a requested lock list, computed
// naively: one lock per key (W if any W), spans merged by a sorted sweep,
// points deduplicated, all sorted by mode then key.
func normalForm(locks []Lock) []Lock {
	keys := map[string]Mode{}
	points := map[string]bool{}
	type span struct {
		a, b string
		inf  bool
	}
	var spans []span
	for _, l := range locks {
		switch l.Mode {
		case R:
			if keys[string(l.Start)] != W {
				keys[string(l.Start)] = R
			}
		case W:
			keys[string(l.Start)] = W
		case SW:
			points[string(l.Start)] = true
		case SR:
			s := span{a: string(l.Start), b: string(l.End), inf: len(l.End) == 0}
			if s.inf || s.a < s.b {
				spans = append(spans, s)
			}
		}
	}
	var out []Lock
	for k, mode := range keys {
		out = append(out, Lock{Mode: mode, Start: bs(k)})
	}
	for k := range points {
		out = append(out, Lock{Mode: SW, Start: bs(k)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].a < spans[j].a })
	for i := 0; i < len(spans); {
		cur := spans[i]
		j := i + 1
		for ; j < len(spans) && (cur.inf || spans[j].a <= cur.b); j++ {
			if spans[j].inf {
				cur.inf = true
			} else if spans[j].b > cur.b {
				cur.b = spans[j].b
			}
		}
		l := Lock{Mode: SR, Start: bs(cur.a)}
		if !cur.inf {
			l.End = bs(cur.b)
		}
		out = append(out, l)
		i = j
	}
	slices.SortFunc(out, func(a, b Lock) int {
		if a.Mode != b.Mode {
			return int(a.Mode) - int(b.Mode)
		}
		return bytes.Compare(a.Start, b.Start)
	})
	return out
}

// Generators: few keys, with the empty key and "\x00" successors, so that
// collisions and every boundary case are frequent.
var (
	genKey = rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(0, 2).Draw(t, "len")
		b := make([]byte, n)
		for i := range b {
			b[i] = rapid.SampledFrom([]byte{0, 'a', 'b'}).Draw(t, "byte")
		}
		return string(b)
	})
	genLock = rapid.Custom(func(t *rapid.T) Lock {
		if rapid.IntRange(0, 40).Draw(t, "malformed") == 0 {
			return rapid.SampledFrom([]Lock{
				{Mode: 0, Start: []byte("a")},
				{Mode: SW + 1},
				{Mode: R, Start: []byte("a"), End: []byte("b")},
				{Mode: SW, End: []byte("b")},
			}).Draw(t, "bad")
		}
		l := Lock{Mode: rapid.SampledFrom([]Mode{R, W, SR, SW}).Draw(t, "mode"), Start: []byte(genKey.Draw(t, "start"))}
		if l.Mode == SR && rapid.IntRange(0, 4).Draw(t, "unbounded") > 0 {
			l.End = []byte(genKey.Draw(t, "end")) // may be empty: unbounded too
		}
		return l
	})
	genLocks  = rapid.SliceOfN(genLock, 0, 6)
	genID     = rapid.Custom(func(t *rapid.T) [32]byte { return tid(rapid.IntRange(1, 8).Draw(t, "id")) })
	genHolder = rapid.Custom(func(t *rapid.T) Holder {
		return Holder{ID: genID.Draw(t, "id"), Order: uint64(rapid.IntRange(1, 12).Draw(t, "order"))}
	})
)

func sameErr(t *rapid.T, want, got error) {
	if want == nil {
		require.NoError(t, got)
		return
	}
	require.ErrorIs(t, got, want)
}

// TestTableAgreesWithBruteForceModel: random sequences of Acquire, Restore,
// Release, Conflicts and full restore round trips against the reference
// model: every result (grant, the conflicting holders and their delivery
// order, errors), every Held set and the holder list must agree, and the
// table's internal invariants must hold after each step. txn.md L1–L4
// (conflictPair), L6 (a refused request adds nothing to the model), E3
// (conflicts sorted by order, once each), E11 (Held/Restore round trips).
func TestTableAgreesWithBruteForceModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tb, m := New(), newModel()
		rt.Repeat(map[string]func(*rapid.T){
			"acquire": func(rt *rapid.T) {
				h, locks := genHolder.Draw(rt, "h"), genLocks.Draw(rt, "locks")
				want, werr := m.acquire(h, locks)
				got, gerr := tb.Acquire(h, locks)
				sameErr(rt, werr, gerr)
				require.Equal(rt, want, got)
			},
			"restore": func(rt *rapid.T) {
				h, locks := genHolder.Draw(rt, "h"), genLocks.Draw(rt, "locks")
				want, werr := m.acquire(h, locks)
				err := tb.Restore(h, locks)
				if want != nil {
					var ce *ConflictError
					require.ErrorAs(rt, err, &ce)
					require.ErrorIs(rt, err, ErrInconsistent)
					require.Equal(rt, want, ce.Conflicts)
					require.Equal(rt, h, ce.Holder)
					return
				}
				sameErr(rt, werr, err)
			},
			"release": func(rt *rapid.T) {
				id := genID.Draw(rt, "id")
				_, want := m.hs[id]
				delete(m.hs, id)
				require.Equal(rt, want, tb.Release(id))
			},
			"conflicts": func(rt *rapid.T) {
				id, locks := genID.Draw(rt, "id"), genLocks.Draw(rt, "locks")
				want, werr := m.conflicts(id, locks)
				got, gerr := tb.Conflicts(id, locks)
				sameErr(rt, werr, gerr)
				require.Equal(rt, want, got)
			},
			// E11: rebuild from Held in a random order; carry on with the
			// rebuilt table, so later steps run on restored state.
			"roundtrip": func(rt *rapid.T) {
				fresh := New()
				for _, h := range rapid.Permutation(tb.Holders()).Draw(rt, "restore order") {
					locks, ok := tb.Held(h.ID)
					require.True(rt, ok)
					require.NoError(rt, fresh.Restore(h, locks))
				}
				requireSameTable(rt, tb, fresh)
				tb = fresh
			},
			"": func(rt *rapid.T) {
				require.NoError(rt, checkTable(tb))
				require.Equal(rt, len(m.hs), tb.Len())
				require.Equal(rt, m.holders(), nilIfEmpty(tb.Holders()))
				for id, mh := range m.hs {
					got, ok := tb.Held(id)
					require.True(rt, ok)
					require.Equal(rt, normalForm(mh.locks), got, "holder %v from %v", mh.h, mh.locks)
				}
			},
		})
	})
}

func nilIfEmpty(hs []Holder) []Holder {
	if len(hs) == 0 {
		return nil
	}
	return hs
}

// TestNormalFormIsEquivalent: Held's normal form takes the same locks as
// the request it came from — it conflicts with exactly the same requests
// of other transactions (E11: a restored table must answer as the old one).
func TestNormalFormIsEquivalent(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		locks := genLocks.Filter(func(ls []Lock) bool {
			return !slices.ContainsFunc(ls, func(l Lock) bool { return !validLock(l) })
		}).Draw(rt, "locks")
		tb := New()
		c, err := tb.Acquire(txn(1), locks)
		require.NoError(rt, err)
		require.Nil(rt, c)
		held, _ := tb.Held(tid(1))
		probe := genLock.Filter(validLock).Draw(rt, "probe")
		a := slices.ContainsFunc(locks, func(l Lock) bool { return conflictPair(l, probe) })
		b := slices.ContainsFunc(held, func(l Lock) bool { return conflictPair(l, probe) })
		require.Equal(rt, a, b, "probe %v: request %v, held %v", probe, locks, held)
	})
}
