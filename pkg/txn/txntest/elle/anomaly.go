package elle

import (
	"fmt"
	"slices"
	"strings"
)

// Class names an anomaly, after Adya's thesis and the Elle paper (§4.1,
// §5.1 for the real-time variants).
type Class string

// Cycle anomalies: a cycle in the dependency graph. Classes are exclusive:
// a cycle is named by its edge kinds (see classify).
const (
	// G0 (write cycle): a cycle of ww edges only.
	G0 Class = "G0"
	// G1c (circular information flow): a cycle of ww and wr edges with at
	// least one wr.
	G1c Class = "G1c"
	// GSingle (read skew, lost update): a cycle with exactly one rw
	// (anti-dependency) edge, the rest ww/wr.
	GSingle Class = "G-single"
	// G2 (write skew and the like): a cycle with two or more rw edges.
	G2 Class = "G2"
	// The real-time variants: the cycle needs at least one real-time edge
	// (T1 completed before T2 was invoked). A history with only these is
	// serializable but not strictly serializable.
	G0Realtime      Class = "G0-realtime"
	G1cRealtime     Class = "G1c-realtime"
	GSingleRealtime Class = "G-single-realtime"
	G2Realtime      Class = "G2-realtime"
)

// Anomalies that are not cycles.
const (
	// G1a (aborted read): a committed transaction read a value that only
	// failed transactions wrote.
	G1a Class = "G1a"
	// G1b (intermediate read): a committed transaction read (or, for a list,
	// appended on top of) a value that is not the final one its writer wrote
	// to that key.
	G1b Class = "G1b"
	// GarbageRead: a read returned a value that nobody wrote.
	GarbageRead Class = "garbage-read"
	// DuplicateElements: a list read holds one element twice.
	DuplicateElements Class = "duplicate-elements"
	// IncompatibleOrder: two reads of a list key disagree on its order (one
	// is not a prefix of the other).
	IncompatibleOrder Class = "incompatible-order"
	// Internal: a transaction's reads disagree with its own earlier reads
	// and writes of the same key (internal consistency, Elle §4.1.1).
	Internal Class = "internal"
)

// EdgeKind is the kind of a dependency edge Ti → Tj (Adya; Elle §3.3).
type EdgeKind uint8

const (
	// WW: Tj installs a later version of a key than Ti (write-write).
	WW EdgeKind = 1 << iota
	// WR: Tj read a version Ti installed (write-read).
	WR
	// RW: Tj installs a later version of a key than the one Ti read
	// (read-write, anti-dependency).
	RW
	// RT: Ti completed before Tj was invoked (real time).
	RT
)

const allKinds = WW | WR | RW | RT

func (k EdgeKind) String() string {
	var parts []string
	for _, p := range []struct {
		k EdgeKind
		s string
	}{{WW, "ww"}, {WR, "wr"}, {RW, "rw"}, {RT, "rt"}} {
		if k&p.k != 0 {
			parts = append(parts, p.s)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// Step is one edge of a reported cycle.
type Step struct {
	// From and To are history indices.
	From, To int
	Kind     EdgeKind
	// Key is the key the dependency is on (empty for RT).
	Key string
	// Why says what in the history makes the edge.
	Why string
}

// Anomaly is one reported violation.
type Anomaly struct {
	Class Class
	// Txns are the history indices involved; for a cycle, in cycle order.
	Txns []int
	// Steps is the cycle (nil for anomalies that are not cycles).
	Steps []Step
	// Key is the key of an anomaly that is not a cycle.
	Key string
	// Summary is one line; Explanation adds the transactions and every
	// step's reason.
	Summary, Explanation string
}

func (a Anomaly) String() string { return a.Summary }

// Result is what Check found.
type Result struct {
	// Anomalies in a deterministic order: per-read anomalies in history
	// order, then cycles by strongly connected component.
	Anomalies []Anomaly
	// Txns and Edges size the dependency graph (transactions that
	// committed or were shown to have committed; distinct (from, to) pairs).
	Txns, Edges int
	// SCCs counts the strongly connected components with a cycle.
	SCCs int
	// SearchTruncated counts cycle searches that stopped at
	// Options.CycleSearchBudget: the cycles reported there may not be the
	// shortest, or the most specific class may be missing (a component is
	// never left without a reported cycle, see Check).
	SearchTruncated int
}

// Valid says the history showed no anomaly.
func (r *Result) Valid() bool { return len(r.Anomalies) == 0 }

// Has says whether an anomaly of class c was found.
func (r *Result) Has(c Class) bool {
	for _, a := range r.Anomalies {
		if a.Class == c {
			return true
		}
	}
	return false
}

// Classes lists the classes found, sorted, without repeats.
func (r *Result) Classes() []Class {
	var cs []Class
	for _, a := range r.Anomalies {
		cs = append(cs, a.Class)
	}
	slices.Sort(cs)
	return slices.Compact(cs)
}

// String is "valid" or one summary line per anomaly.
func (r *Result) String() string {
	if r.Valid() {
		return "valid"
	}
	var sb strings.Builder
	for i, a := range r.Anomalies {
		if i > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(a.Summary)
	}
	return sb.String()
}

// Explain is every anomaly's explanation, separated by blank lines.
func (r *Result) Explain() string {
	if r.Valid() {
		return "valid"
	}
	parts := make([]string, len(r.Anomalies))
	for i, a := range r.Anomalies {
		parts[i] = a.Explanation
	}
	return strings.Join(parts, "\n\n")
}

func txnName(i int) string { return fmt.Sprintf("T%d", i) }
