package quorum

import "testing"

func TestSizesFollowThreeFPlusOne(t *testing.T) {
	for f := 0; f < 5; f++ {
		s, err := New(3*f+1, f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Quorum() != 2*f+1 || s.Weak() != f+1 || s.Prepares() != 2*f {
			t.Fatalf("f=%d: %+v", f, s)
		}
		// Any two quorums intersect in at least f+1 replicas: one correct.
		if 2*s.Quorum()-s.N < f+1 {
			t.Fatalf("f=%d: quorums intersect in fewer than f+1", f)
		}
	}
	if _, err := New(5, 1); err == nil {
		t.Fatal("n=5 accepted for f=1")
	}
}

func TestSetCountsDistinctIDs(t *testing.T) {
	var s Set
	if !s.Add(3) || s.Add(3) || !s.Add(0) || s.Len() != 2 || !s.Has(3) || s.Has(1) {
		t.Fatalf("set %b", s)
	}
	if s.Add(64) {
		t.Fatal("id 64 accepted")
	}
}
