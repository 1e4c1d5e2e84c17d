// Command mutate is the mutation gate of the PBFT simulator (`make mutate`).
//
// It copies the repository's tracked files (as they are in the working
// tree) into a scratch directory, and for each planted bug of mutations.go:
// applies it (every anchor must match exactly once), builds the tree,
// compiles the simulator's test binary once, and runs TestSimulationSeeds on
// it with -stop-on-failure until the first violating seed, the seed budget
// or the time budget. It prints a table: the mutation, the rule it breaks,
// the seed that caught it (with the violation) or NOT CAUGHT, the seeds run
// and the time. The scratch tree is restored between mutations, so the
// build cache serves every package a mutation does not touch.
//
//	go run ./internal/mutate [-only 3,7] [-seeds 20000] [-first-seed 1] [-timeout 40m] [-json out.json]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is what the gate found for one mutation.
type Result struct {
	N          int     `json:"n"`
	Name       string  `json:"name"`
	Rule       string  `json:"rule"`
	Caught     bool    `json:"caught"`
	Equivalent bool    `json:"equivalent,omitempty"`
	Seed       uint64  `json:"seed,omitempty"`
	Violation  string  `json:"violation,omitempty"`
	SeedsRun   int     `json:"seeds_run"`
	Seconds    float64 `json:"seconds"`
	Error      string  `json:"error,omitempty"`
	// Baseline lists seeds that failed but fail on the unmutated tree too.
	Baseline []uint64 `json:"baseline_failures,omitempty"`
}

func main() {
	only := flag.String("only", "", "comma-separated mutation numbers to run (default: all)")
	seeds := flag.Int("seeds", 20000, "seed budget per mutation")
	first := flag.Uint64("first-seed", 1, "first seed")
	timeout := flag.Duration("timeout", 40*time.Minute, "wall-time budget per mutation")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	list := flag.Bool("list", false, "list the mutations and exit")
	flag.Parse()

	sel, err := selectMutations(*only)
	if err != nil {
		fatal(err)
	}
	if *list {
		for _, m := range sel {
			fmt.Printf("%2d  %-36s %s\n", m.N, m.Name, m.Rule)
		}
		return
	}
	root, err := repoRoot()
	if err != nil {
		fatal(err)
	}
	scratch, err := os.MkdirTemp("", "augustus-mutate-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(scratch)
	if err := copyTracked(root, scratch); err != nil {
		fatal(err)
	}
	commit := gitOut(root, "rev-parse", "--short=12", "HEAD")
	if gitOut(root, "status", "--porcelain", "--untracked-files=no") != "" {
		commit += "+dirty"
	}
	fmt.Printf("mutation gate on %s, %s: %d seeds from %d per mutation, at most %s each (scratch %s)\n",
		commit, time.Now().UTC().Format("2006-01-02 15:04 UTC"), *seeds, *first, *timeout, scratch)

	// The unmutated tree's simulator, to tell a catch from a seed that
	// fails anyway.
	baseBin = filepath.Join(scratch, "pkg", "bft", "bfttest", "bfttest-base.test")
	bctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	err = Build(bctx, scratch, baseBin, "./pkg/bft/...")
	cancel()
	if err != nil {
		fatal(err)
	}
	var results []Result
	for _, m := range sel {
		r := runMutation(scratch, m, *seeds, *first, *timeout)
		results = append(results, r)
		fmt.Printf("  %2d %-36s %s\n", r.N, r.Name, verdict(r))
	}
	fmt.Println()
	printTable(os.Stdout, results)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(struct {
			Commit  string   `json:"commit"`
			Date    string   `json:"date"`
			Seeds   int      `json:"seeds"`
			Results []Result `json:"results"`
		}{commit, time.Now().UTC().Format(time.RFC3339), *seeds, results}, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fatal(err)
		}
	}
	for i, r := range results {
		if !r.Caught && !sel[i].Equivalent {
			os.RemoveAll(scratch) // os.Exit skips the deferred removal
			os.Exit(1)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

func selectMutations(only string) ([]Mutation, error) {
	if only == "" {
		return mutations, nil
	}
	var sel []Mutation
	for _, f := range strings.Split(only, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("-only: %q is not a number", f)
		}
		found := false
		for _, m := range mutations {
			if m.N == n {
				sel = append(sel, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("-only: no mutation %d", n)
		}
	}
	return sel, nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git repository: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func gitOut(dir string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// copyTracked copies the files git tracks, as they are in the working tree
// (uncommitted changes included), from root to dst.
func copyTracked(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		src := filepath.Join(root, f)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// Apply applies m's edits to the tree at dir and returns a function that
// restores the files. Every anchor must occur exactly once in its file.
func Apply(dir string, m Mutation) (restore func(), err error) {
	orig := map[string][]byte{}
	restore = func() {
		for p, b := range orig {
			_ = os.WriteFile(p, b, 0o644)
		}
	}
	for i, e := range m.Edits {
		p := filepath.Join(dir, e.File)
		b, err := os.ReadFile(p)
		if err != nil {
			restore()
			return nil, fmt.Errorf("mutation %d (%s), edit %d: %w", m.N, m.Name, i+1, err)
		}
		if _, ok := orig[p]; !ok {
			orig[p] = b
		}
		if c := bytes.Count(b, []byte(e.Anchor)); c != 1 {
			restore()
			return nil, fmt.Errorf("mutation %d (%s), edit %d: anchor %q occurs %d times in %s, want exactly once", m.N, m.Name, i+1, e.Anchor, c, e.File)
		}
		b = bytes.Replace(b, []byte(e.Anchor), []byte(e.Replace), 1)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			restore()
			return nil, err
		}
	}
	return restore, nil
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// Build compiles the packages under pkgs and the simulator's test binary
// (written to bin; empty: compiled only) in the tree at dir.
func Build(ctx context.Context, dir, bin string, pkgs ...string) error {
	if out, err := goCmd(ctx, dir, append([]string{"build"}, pkgs...)...); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	o := bin
	if o == "" {
		o = os.DevNull
	}
	if out, err := goCmd(ctx, dir, "test", "-c", "-tags", "invariants", "-o", o, "./pkg/bft/bfttest/"); err != nil {
		return fmt.Errorf("go test -c: %v\n%s", err, out)
	}
	return nil
}

var (
	reStop    = regexp.MustCompile(`(?m)^stop-on-failure: seed (\d+) failed after (\d+) seeds in [^:]+: (.*)$`)
	reSummary = regexp.MustCompile(`(?m)simulation: (\d+) seeds run`)
)

func runMutation(scratch string, m Mutation, seeds int, first uint64, timeout time.Duration) (r Result) {
	r = Result{N: m.N, Name: m.Name, Rule: m.Rule, Equivalent: m.Equivalent}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	restore, err := Apply(scratch, m)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer restore()
	bin := filepath.Join(scratch, fmt.Sprintf("bfttest-mut%d.test", m.N))
	defer os.Remove(bin)
	bctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	err = Build(bctx, scratch, bin, "./...")
	cancel()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	// The simulator stops handing out seeds at the budget; the hard
	// deadline only guards against a run that hangs. A seed that fails on
	// the unmutated tree too (baseline) is a bug of the tree, not a catch:
	// it is reported and the run goes on after it.
	deadline := start.Add(timeout)
	for next, left := first, seeds; left > 0; {
		budget := time.Until(deadline)
		if budget <= 0 {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget+5*time.Minute)
		cmd := exec.CommandContext(ctx, bin, "-test.run", "^TestSimulationSeeds$", "-test.count=1", "-test.timeout=0",
			"-seeds", strconv.Itoa(left), "-first-seed", strconv.FormatUint(next, 10),
			"-stop-on-failure", "-v-sim", "-sim-budget", budget.Round(time.Second).String())
		cmd.Dir = filepath.Join(scratch, "pkg", "bft", "bfttest")
		out, _ := cmd.CombinedOutput()
		hung := ctx.Err() != nil
		cancel()
		sm := reStop.FindSubmatch(out)
		if sm == nil {
			if run := reSummary.FindSubmatch(out); run != nil {
				n, _ := strconv.Atoi(string(run[1]))
				r.SeedsRun += n
			} else if hung {
				r.Error = "killed at the hard deadline"
			} else {
				tail := out
				if len(tail) > 2000 {
					tail = tail[len(tail)-2000:]
				}
				r.Error = "no result from the simulator:\n" + string(tail)
			}
			return r
		}
		seed, _ := strconv.ParseUint(string(sm[1]), 10, 64)
		if baselineFails(seed) {
			r.Baseline = append(r.Baseline, seed)
			r.SeedsRun += int(seed - next + 1)
			left -= int(seed - next + 1)
			next = seed + 1
			continue
		}
		r.Caught, r.Seed, r.Violation = true, seed, string(sm[3])
		r.SeedsRun += int(seed - next + 1)
		return r
	}
	return r
}

// baseBin is the simulator's test binary of the unmutated tree.
var baseBin string

// baselineFails reports whether seed fails on the unmutated tree too.
func baselineFails(seed uint64) bool {
	if baseBin == "" {
		return false
	}
	cmd := exec.Command(baseBin, "-test.run", "^TestReplaySeed$", "-test.count=1", "-seed", strconv.FormatUint(seed, 10))
	cmd.Dir = filepath.Dir(baseBin)
	return cmd.Run() != nil
}

func verdict(r Result) string {
	if len(r.Baseline) > 0 {
		return fmt.Sprintf("%s [seeds %v fail unmutated too]", verdict1(r), r.Baseline)
	}
	return verdict1(r)
}

func verdict1(r Result) string {
	switch {
	case r.Error != "":
		return "ERROR: " + firstLine(r.Error)
	case r.Caught:
		return fmt.Sprintf("caught by seed %d (%d seeds, %.0fs): %s", r.Seed, r.SeedsRun, r.Seconds, trim(r.Violation, 120))
	case r.Equivalent:
		return fmt.Sprintf("NOT CAUGHT within %d seeds (%.0fs): equivalent mutation, see its note", r.SeedsRun, r.Seconds)
	default:
		return fmt.Sprintf("NOT CAUGHT within %d seeds (%.0fs)", r.SeedsRun, r.Seconds)
	}
}

func printTable(w *os.File, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tmutation\trule\tcaught by\tseeds run\ttime\tviolation")
	for _, r := range rs {
		by := "NOT CAUGHT"
		if r.Equivalent {
			by = "NOT CAUGHT (equivalent)"
		}
		switch {
		case r.Error != "":
			by = "ERROR"
		case r.Caught:
			by = fmt.Sprintf("seed %d", r.Seed)
		}
		v := r.Violation
		if r.Error != "" {
			v = firstLine(r.Error)
		}
		if len(r.Baseline) > 0 {
			v = fmt.Sprintf("[seeds %v fail unmutated too] %s", r.Baseline, v)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%.0fs\t%s\n", r.N, r.Name, trim(r.Rule, 40), by, r.SeedsRun, r.Seconds, trim(v, 100))
	}
	tw.Flush()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func trim(s string, n int) string {
	s = firstLine(s)
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
