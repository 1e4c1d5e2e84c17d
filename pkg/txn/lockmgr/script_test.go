package lockmgr

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"
)

// TestScripts runs the datadriven scripts in testdata/scripts: the
// range-overlap cases of SR against SW and SR against SR (txn.md L2),
// canonical forms and restores (E11). Commands:
//
//	reset
//	acquire t=N [order=N]   (input: one lock a line)  → granted | conflict: tA tB…
//	restore t=N [order=N]   (input: one lock a line)  → restored | error: …
//	conflicts t=N           (input: one lock a line)  → none | conflict: …
//	release t=N                                       → released | not held
//	held t=N                                          → the holder's locks
//
// A lock line is `R key`, `W key`, `SW key`, `SR start end` or
// `SR start +inf`; a key is a bare word or a Go-quoted string ("" is the
// empty key, "b\x00" the key just after b). Holders print as tN, where N is
// the delivery order. Rewrite with -rewrite after reviewing a change.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/scripts", func(t *testing.T, path string) {
		tb := New()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runScript(t, tb, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			require.NoError(t, checkTable(tb), "%s", d.Pos)
			return out + "\n"
		})
	})
}

func runScript(t *testing.T, tb *Table, d *datadriven.TestData) (string, error) {
	if d.Cmd == "reset" {
		*tb = *New()
		return "ok", nil
	}
	var n int
	d.ScanArgs(t, "t", &n)
	h := txn(n)
	if d.HasArg("order") {
		d.ScanArgs(t, "order", &h.Order)
	}
	switch d.Cmd {
	case "acquire", "restore", "conflicts":
		locks, err := parseLocks(d.Input)
		if err != nil {
			return "", err
		}
		switch d.Cmd {
		case "acquire":
			c, err := tb.Acquire(h, locks)
			if err != nil {
				return "", err
			}
			if c == nil {
				return "granted", nil
			}
			return "conflict: " + showHolders(c), nil
		case "restore":
			if err := tb.Restore(h, locks); err != nil {
				return "", err
			}
			return "restored", nil
		default:
			c, err := tb.Conflicts(h.ID, locks)
			if err != nil {
				return "", err
			}
			if c == nil {
				return "none", nil
			}
			return "conflict: " + showHolders(c), nil
		}
	case "release":
		if tb.Release(h.ID) {
			return "released", nil
		}
		return "not held", nil
	case "held":
		locks, ok := tb.Held(h.ID)
		if !ok {
			return "not held", nil
		}
		if len(locks) == 0 {
			return "nothing", nil
		}
		return showLocks(locks), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func showHolders(hs []Holder) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("t%d", h.Order)
	}
	return strings.Join(parts, " ")
}

func parseKey(s string) ([]byte, error) {
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", s, err)
		}
		return []byte(u), nil
	}
	return []byte(s), nil
}

func parseLocks(input string) ([]Lock, error) {
	var locks []Lock
	for _, line := range strings.Split(input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var l Lock
		switch f[0] {
		case "R":
			l.Mode = R
		case "W":
			l.Mode = W
		case "SR":
			l.Mode = SR
		case "SW":
			l.Mode = SW
		default:
			return nil, fmt.Errorf("unknown mode in %q", line)
		}
		want := 2
		if l.Mode == SR {
			want = 3
		}
		if len(f) != want {
			return nil, fmt.Errorf("%q: want %d fields", line, want)
		}
		var err error
		if l.Start, err = parseKey(f[1]); err != nil {
			return nil, err
		}
		if l.Mode == SR && f[2] != "+inf" {
			if l.End, err = parseKey(f[2]); err != nil {
				return nil, err
			}
			if len(l.End) == 0 {
				return nil, fmt.Errorf("%q: write +inf for an unbounded span", line)
			}
		}
		locks = append(locks, l)
	}
	return locks, nil
}
