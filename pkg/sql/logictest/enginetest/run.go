package enginetest

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Options shape RunSuites.
type Options struct {
	Harness HarnessOptions
	// Exclusions maps suites the backend must not run to the reason (see
	// ReadExclusions); an excluded suite counts as failed. A suite whose
	// Needs the backend lacks must be listed here, so that every exclusion
	// is written down with its reason.
	Exclusions map[string]string
	// Only, when set, runs just these suites (the fast subset of make test);
	// the others are not reported at all.
	Only []string
}

// ExcludedPrefix starts the skip message of an excluded suite; the score
// (cmd/enginetest-score) recognises exclusions by it.
const ExcludedPrefix = "enginetest: excluded: "

// RunSuites runs the suites of GMS's enginetest against b, each as a
// subtest named after its function, with one Harness over b for all of
// them: the backend is made once and reset between suites and engines.
func RunSuites(t *testing.T, b Backend, opts Options) {
	if err := CheckExclusions(b, opts.Exclusions); err != nil {
		t.Fatal(err)
	}
	h := NewHarness(b, opts.Harness)
	for _, s := range Suites {
		if opts.Only != nil && !slices.Contains(opts.Only, s.Name) {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			if reason, ok := opts.Exclusions[s.Name]; ok {
				t.Skip(ExcludedPrefix + reason)
			}
			if err := h.BeginSuite(); err != nil {
				t.Fatal(err)
			}
			s.Run(t, h)
		})
	}
}

// CheckExclusions returns an error naming every suite that needs an
// optional interface b lacks and is not excluded: each exclusion must be
// written down with its reason, not implied.
func CheckExclusions(b Backend, excl map[string]string) error {
	var missing []string
	for _, s := range Suites {
		if _, ok := excl[s.Name]; !ok && !has(b, s.Needs) {
			missing = append(missing, fmt.Sprintf("%s (needs %s)", s.Name, s.Needs))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("enginetest: backend %s cannot run %s: list them in its exclusions file with the reason",
			b.Name(), strings.Join(missing, ", "))
	}
	return nil
}

// ReadExclusions reads an exclusions file: one "TestName: reason" per line,
// blank lines and lines starting with '#' ignored. Every name must be a
// suite, and a suite may be listed once.
func ReadExclusions(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("enginetest: exclusions: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, ":")
		name, reason = strings.TrimSpace(name), strings.TrimSpace(reason)
		if !ok || reason == "" {
			return nil, fmt.Errorf("enginetest: %s:%d: want \"TestName: reason\"", path, n)
		}
		if !slices.ContainsFunc(Suites, func(s Suite) bool { return s.Name == name }) {
			return nil, fmt.Errorf("enginetest: %s:%d: %s is not an enginetest suite", path, n, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("enginetest: %s:%d: %s listed twice", path, n, name)
		}
		out[name] = reason
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("enginetest: exclusions: %w", err)
	}
	return out, nil
}
