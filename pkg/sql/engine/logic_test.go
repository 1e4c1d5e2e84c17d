package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestLogic runs the SQL logic tests in testdata/logic: each file against a
// fresh in-process cluster of two groups of four replicas (real PBFT, the
// transaction engine, pebble), through front-ends made of a coord.Client
// and an Engine. Directives:
//
//	sql [s=<session>] [fe=<front-end>]   run the statement; expect its rows,
//	                                     "ok <affected>", or "error <code> (<state>): <message>"
//
// Sessions are named per front-end (default s=a, fe=0); front-end i uses
// client key i and the cluster's admin key (fe=i noadmin: none). Run with
// -rewrite to regenerate the expectations, and review them.
func TestLogic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	datadriven.Walk(t, "testdata/logic", func(t *testing.T, path string) {
		groups := 2
		if strings.Contains(filepath.Base(path), "1group") {
			groups = 1
		}
		c := startCluster(t, groups)
		conns := map[string]*conn{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "sql":
				s, fe, noAdmin := "a", 0, false
				for _, a := range d.CmdArgs {
					switch a.Key {
					case "s":
						s = a.Vals[0]
					case "fe":
						fmt.Sscan(a.Vals[0], &fe)
					case "noadmin":
						noAdmin = true
					}
				}
				key := fmt.Sprintf("%d/%s", fe, s)
				cn := conns[key]
				if cn == nil {
					cn = c.frontEnd(fe, noAdmin).connect()
					conns[key] = cn
				}
				return cn.exec(d.Input)
			}
			t.Fatalf("%s: unknown directive %s", d.Pos, d.Cmd)
			return ""
		})
	})
}
