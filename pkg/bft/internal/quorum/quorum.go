package quorum

import "fmt"

// Sizes describes one group.
type Sizes struct {
	N int // replicas
	F int // tolerated faults
}

// New checks that n = 3f+1 with f >= 0 and returns the sizes.
func New(n, f int) (Sizes, error) {
	if f < 0 || n != 3*f+1 {
		return Sizes{}, fmt.Errorf("quorum: n=%d is not 3f+1 for f=%d", n, f)
	}
	return Sizes{N: n, F: f}, nil
}

// Quorum is 2f+1: any two quorums intersect in a correct replica.
func (s Sizes) Quorum() int { return 2*s.F + 1 }

// Weak is f+1: at least one correct replica.
func (s Sizes) Weak() int { return s.F + 1 }

// Prepares is the number of PREPAREs from distinct backups that, with the
// PRE-PREPARE, make a prepared certificate: 2f.
func (s Sizes) Prepares() int { return 2 * s.F }

// Set is a set of replica ids in 0..63 (groups are small: n <= 64).
type Set uint64

// Add inserts id and reports whether it was new.
func (s *Set) Add(id uint32) bool {
	if id >= 64 {
		return false
	}
	bit := Set(1) << id
	if *s&bit != 0 {
		return false
	}
	*s |= bit
	return true
}

// Has reports whether id is in the set.
func (s Set) Has(id uint32) bool { return id < 64 && s&(Set(1)<<id) != 0 }

// Len is the number of ids in the set.
func (s Set) Len() int {
	n := 0
	for x := uint64(s); x != 0; x &= x - 1 {
		n++
	}
	return n
}

// MaxReplicas bounds the size of a group (Set holds 64 ids).
const MaxReplicas = 64
