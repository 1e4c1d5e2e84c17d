package invariants

import "testing"

// Under the invariants tag a false condition panics; without it nothing
// happens (make test runs this package both ways).
func TestCheckPanicsOnlyUnderTheTag(t *testing.T) {
	defer func() {
		r := recover()
		if Enabled && r == nil {
			t.Fatal("Check(false) did not panic under the invariants tag")
		}
		if !Enabled && r != nil {
			t.Fatalf("Check(false) panicked without the tag: %v", r)
		}
	}()
	Check(true, "never")
	Check(false, "expected %d", 1)
}
