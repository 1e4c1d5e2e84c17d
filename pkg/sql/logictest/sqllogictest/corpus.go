package sqllogictest

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"

	"github.com/augustus-db/augustus/pkg/sql/logictest"
)

// corpus is SQLite's select1–5 (testdata/README.md), embedded so that a
// test of any package can run them against its engine.
//
//go:embed testdata/*.test
var corpus embed.FS

// Corpus returns the names of the corpus files, in order.
func Corpus() []string {
	names, err := fs.Glob(corpus, "testdata/*.test")
	if err != nil {
		panic(err) // the pattern is valid
	}
	for i, n := range names {
		names[i] = path.Base(n)
	}
	return names
}

// RunCorpus runs the corpus file name (one of Corpus()) against a fresh
// database of eng.
func RunCorpus(ctx context.Context, eng logictest.Engine, name string, opts Options) (*Result, error) {
	f, err := corpus.Open("testdata/" + name)
	if err != nil {
		return nil, fmt.Errorf("sqllogictest: %w", err)
	}
	defer f.Close()
	recs, err := Parse(f, name)
	if err != nil {
		return nil, err
	}
	return Run(ctx, eng, name, recs, opts)
}
