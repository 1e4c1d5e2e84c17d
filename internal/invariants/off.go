//go:build !invariants

package invariants

// Enabled reports whether the binary was built with the invariants tag.
const Enabled = false

// Check does nothing without the invariants build tag.
func Check(bool, string, ...any) {}
