package txntest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/txntest/history"
)

// The workloads. Both record a history for the Elle-style checker (X1):
//
//   - bank: accounts spread over the groups, each holding a balance; a
//     transfer reads two accounts (one read-only transaction) and then moves
//     money between them in one update guarded by cmp on both values. The
//     total is invariant (X2 and atomicity make it so; a split transfer
//     shows in the total). Values carry a unique tag, so the register
//     history has unique writes.
//   - append: list-append keys; an append reads a key (read-only) and then
//     writes the list with one more element, guarded by cmp on the list it
//     read (or cmp-absent and insert for a new key); reads read several keys
//     at once, often across groups.

// workload is one correct client's stream of transactions.
type workload struct {
	s     *Sim
	idx   int
	core  *coord.Core
	total int
	done  int
	left  int // transactions still to start
	// errs counts transactions that ended with an error other than an abort.
	errs int
}

// keyspace holds the workload's keys.
type keyspace struct {
	keys    [][]byte
	initial int // bank: initial balance per account
}

func accountKey(s *Sim, i int) []byte {
	return GroupKey(i%s.opts.Groups, s.opts.Groups, fmt.Sprintf("acct-%03d", i))
}

// encodeBalance writes a balance with the unique tag of the write
// (register histories need unique writes: the tag is the history's value).
func encodeBalance(balance int, tag int64) []byte { return []byte(fmt.Sprintf("%d:%d", balance, tag)) }

func decodeBalance(v []byte) (balance int, tag int64, err error) {
	a, b, ok := strings.Cut(string(v), ":")
	if !ok {
		return 0, 0, fmt.Errorf("balance %q without a tag", v)
	}
	if balance, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	tag, err = strconv.ParseInt(b, 10, 64)
	return balance, tag, err
}

// encodeList / decodeList are the list-append values: comma-separated
// elements.
func encodeList(xs []int64) []byte {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return []byte(strings.Join(parts, ","))
}

func decodeList(v []byte) ([]int64, error) {
	if len(v) == 0 {
		return []int64{}, nil
	}
	parts := strings.Split(string(v), ",")
	out := make([]int64, len(parts))
	for i, p := range parts {
		x, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", v, err)
		}
		out[i] = x
	}
	return out, nil
}

// pick returns two distinct keys, in different groups with probability
// MultiGroupPct (when there is more than one group).
func (w *workload) pick() ([]byte, []byte) {
	s := w.s
	rng := s.c.W.Rand()
	n := len(s.keys.keys)
	a := rng.IntN(n)
	for tries := 0; ; tries++ {
		b := rng.IntN(n)
		if b == a {
			continue
		}
		sameGroup := s.c.Map.KeyGroup(s.keys.keys[a]) == s.c.Map.KeyGroup(s.keys.keys[b])
		multi := rng.IntN(100) < s.opts.MultiGroupPct
		if s.opts.Groups == 1 || multi != sameGroup || tries > 20 {
			return s.keys.keys[a], s.keys.keys[b]
		}
	}
}

// start launches the client's next transaction, if any is left.
func (w *workload) start() {
	if w.left == 0 {
		return
	}
	w.left--
	rng := w.s.c.W.Rand()
	switch w.s.opts.Workload {
	case "bank":
		if rng.IntN(4) == 0 {
			w.readMany()
		} else {
			w.transfer()
		}
	default:
		if rng.IntN(3) == 0 {
			w.readMany()
		} else {
			w.appendOne()
		}
	}
}

func (w *workload) finish() {
	w.done++
	w.s.c.W.After(w.s.c.W.Rand().Int64N(20_000), w.start)
}

// outcome classifies a transaction's end for the history.
func outcome(err error) history.Outcome {
	var ab *coord.AbortedError
	switch {
	case err == nil:
		return history.OK
	case errors.As(err, &ab):
		return history.Fail
	default:
		return history.Info
	}
}

// readMany reads two to four keys in one read-only transaction.
func (w *workload) readMany() {
	s := w.s
	rng := s.c.W.Rand()
	k := 2 + rng.IntN(3)
	var keys [][]byte
	seen := map[string]bool{}
	for len(keys) < k && len(keys) < len(s.keys.keys) {
		key := s.keys.keys[rng.IntN(len(s.keys.keys))]
		if !seen[string(key)] {
			seen[string(key)] = true
			keys = append(keys, key)
		}
	}
	var ops []txn.Op
	var mops []history.MicroOp
	for _, key := range keys {
		ops = append(ops, txn.Op{Kind: txn.OpRead, Key: key})
		mops = append(mops, history.Read(string(key)))
	}
	h := s.rec.Invoke(w.idx, mops...)
	w.core.Start(ops, coord.Options{}, func(res *coord.Result, err error) {
		out := outcome(err)
		var obs []history.MicroOp
		if out == history.OK {
			for i, key := range keys {
				m, ok := s.observe(string(key), res.Ops[i])
				if !ok {
					out = history.Info
					obs = nil
					break
				}
				obs = append(obs, m)
			}
		}
		s.complete(h, out, obs)
		w.account(err)
		w.finish()
	})
}

// transfer reads two accounts, then moves a random amount between them with
// cmp guards on both values (the BFT Derby shape: reads first, guarded
// writes at commit).
func (w *workload) transfer() {
	s := w.s
	a, b := w.pick()
	read := []txn.Op{{Kind: txn.OpRead, Key: a}, {Kind: txn.OpRead, Key: b}}
	h := s.rec.Invoke(w.idx, history.Read(string(a)), history.Read(string(b)))
	w.core.Start(read, coord.Options{}, func(res *coord.Result, err error) {
		out := outcome(err)
		if out != history.OK {
			s.complete(h, out, nil)
			w.account(err)
			w.finish()
			return
		}
		ra, rb := res.Ops[0], res.Ops[1]
		ma, okA := s.observe(string(a), ra)
		mb, okB := s.observe(string(b), rb)
		if !okA || !okB || !ra.Present || !rb.Present {
			s.w.Violation("bank: client %d read a missing or malformed account (%q, %q)", w.idx, ra.Value, rb.Value)
			s.complete(h, history.Info, nil)
			w.finish()
			return
		}
		s.complete(h, history.OK, []history.MicroOp{ma, mb})
		ba, _, _ := decodeBalance(ra.Value)
		bb, _, _ := decodeBalance(rb.Value)
		amount := s.c.W.Rand().IntN(10)
		ta, tb := s.nextTag(), s.nextTag()
		na, nb := encodeBalance(ba-amount, ta), encodeBalance(bb+amount, tb)
		ops := []txn.Op{
			{Kind: txn.OpCmp, Key: a, Value: ra.Value}, {Kind: txn.OpCmp, Key: b, Value: rb.Value},
			{Kind: txn.OpWrite, Key: a, Value: na}, {Kind: txn.OpWrite, Key: b, Value: nb},
		}
		// The cmp guards make the reads part of the update: it commits only
		// if both values are still the ones read.
		h2 := s.rec.Invoke(w.idx, ma, mb, history.Write(string(a), ta), history.Write(string(b), tb))
		w.core.Start(ops, coord.Options{MaxRetries: -1}, func(_ *coord.Result, err error) {
			out := outcome(err)
			var obs []history.MicroOp
			if out == history.OK {
				obs = []history.MicroOp{ma, mb, history.Write(string(a), ta), history.Write(string(b), tb)}
				s.transfers++
			}
			s.complete(h2, out, obs)
			w.account(err)
			w.finish()
		})
	})
}

// appendOne reads a key and appends one element to its list, guarded by
// cmp on the list read.
func (w *workload) appendOne() {
	s := w.s
	rng := s.c.W.Rand()
	key := s.keys.keys[rng.IntN(len(s.keys.keys))]
	h := s.rec.Invoke(w.idx, history.Read(string(key)))
	w.core.Start([]txn.Op{{Kind: txn.OpRead, Key: key}}, coord.Options{}, func(res *coord.Result, err error) {
		out := outcome(err)
		if out != history.OK {
			s.complete(h, out, nil)
			w.account(err)
			w.finish()
			return
		}
		old := res.Ops[0]
		m, ok := s.observe(string(key), old)
		if !ok {
			s.complete(h, history.Info, nil)
			w.finish()
			return
		}
		s.complete(h, history.OK, []history.MicroOp{m})
		elem := s.nextTag()
		next := encodeList(append(append([]int64(nil), m.List...), elem))
		var ops []txn.Op
		if old.Present {
			ops = []txn.Op{{Kind: txn.OpCmp, Key: key, Value: old.Value}, {Kind: txn.OpWrite, Key: key, Value: next}}
		} else {
			ops = []txn.Op{{Kind: txn.OpCmp, Key: key, Absent: true}, {Kind: txn.OpInsert, Key: key, Value: next}}
		}
		h2 := s.rec.Invoke(w.idx, m, history.Append(string(key), elem))
		w.core.Start(ops, coord.Options{MaxRetries: -1}, func(_ *coord.Result, err error) {
			out := outcome(err)
			var obs []history.MicroOp
			if out == history.OK {
				obs = []history.MicroOp{m, history.Append(string(key), elem)}
			}
			s.complete(h2, out, obs)
			w.account(err)
			w.finish()
		})
	})
}

// account counts errors that are not aborts: after the heal there must be
// none (liveness, X3).
func (w *workload) account(err error) {
	var ab *coord.AbortedError
	if err != nil && !errors.As(err, &ab) {
		w.errs++
		if !w.s.c.W.Chaotic() {
			w.s.w.Violation("liveness: client %d transaction failed after the heal: %v", w.idx, err)
		}
	}
}

// observe turns a read's result into the history's micro-op: the tag of a
// bank value, the list of an append key. A value the workload never wrote
// is a violation (garbage read) and the read is left unknown.
func (s *Sim) observe(key string, r coord.OpResult) (history.MicroOp, bool) {
	if s.opts.Workload == "bank" {
		if !r.Present {
			return history.ReadNil(key), true
		}
		_, tag, err := decodeBalance(r.Value)
		if err != nil {
			s.w.Violation("bank: %s holds %q: %v", key, r.Value, err)
			return history.MicroOp{}, false
		}
		return history.ReadValue(key, tag), true
	}
	if !r.Present {
		return history.ReadList(key), true
	}
	list, err := decodeList(r.Value)
	if err != nil {
		s.w.Violation("append: %s holds %q: %v", key, r.Value, err)
		return history.MicroOp{}, false
	}
	return history.ReadList(key, list...), true
}

// complete records an outcome; a recorder error is a harness bug.
func (s *Sim) complete(h history.Handle, out history.Outcome, obs []history.MicroOp) {
	if err := s.rec.Complete(h, out, obs); err != nil {
		panic(err)
	}
}
