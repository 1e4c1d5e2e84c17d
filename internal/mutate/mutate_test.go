package main

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestEveryMutationAnchorAppliesOnceAndCompiles keeps the mutation list from
// rotting: every planted bug's anchors occur exactly once in the current
// tree, and the mutated packages still compile (go build of the packages
// the edits touch; `make mutate` builds the whole tree and the simulator).
func TestEveryMutationAnchorAppliesOnceAndCompiles(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		// The gate copies the files git tracks: outside a git checkout (a
		// source tarball) it cannot run. CI runs from a clone, where it does.
		t.Skip(err)
	}
	scratch := t.TempDir()
	if err := copyTracked(root, scratch); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, m := range mutations {
		if seen[m.N] {
			t.Errorf("mutation number %d used twice", m.N)
		}
		seen[m.N] = true
		restore, err := Apply(scratch, m)
		if err != nil {
			t.Error(err)
			continue
		}
		dirs := map[string]bool{}
		for _, e := range m.Edits {
			dirs["./"+filepath.Dir(e.File)] = true
		}
		var pkgs []string
		for d := range dirs {
			pkgs = append(pkgs, d)
		}
		sort.Strings(pkgs)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := goCmd(ctx, scratch, append([]string{"build"}, pkgs...)...)
		cancel()
		if err != nil {
			t.Errorf("mutation %d (%s) does not compile: %v\n%s", m.N, m.Name, err, out)
		}
		restore()
	}
}
