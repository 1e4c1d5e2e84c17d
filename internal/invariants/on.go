//go:build invariants

package invariants

import "fmt"

// Enabled reports whether the binary was built with the invariants tag.
const Enabled = true

// Check panics with the formatted message if cond is false.
func Check(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("invariant violated: "+format, args...))
	}
}
