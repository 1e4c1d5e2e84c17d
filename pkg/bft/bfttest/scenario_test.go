package bfttest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/augustus-db/augustus/pkg/bft"
)

// TestScenario runs the datadriven scenario scripts in testdata/scenarios:
// the classic hard cases of PBFT, each written as a readable interaction
// with a hand-driven network (see Env.Run for the commands; `new` starts a
// group). Rewrite expected output with -rewrite after reviewing a change.
func TestScenario(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		var env *Env
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := make(map[string][]string)
			for _, a := range d.CmdArgs {
				var vals []string
				for _, v := range a.Vals {
					vals = append(vals, strings.Split(v, ",")...)
				}
				args[a.Key] = vals
			}
			cmd := Command{Verb: d.Cmd, Args: args}
			if d.Cmd == "new" {
				var err error
				if env != nil {
					env.Close()
				}
				env, err = newEnvFromCommand(cmd)
				if err != nil {
					return "error: " + err.Error()
				}
				t.Cleanup(env.Close)
				return env.Status()
			}
			if env == nil {
				t.Fatalf("%s: the script must start with new", d.Pos)
			}
			out, err := env.Run(cmd)
			if err != nil {
				return "error: " + err.Error()
			}
			return out
		})
	})
}

// newEnvFromCommand: new [f=1] [clients=1] [k=4] [l=8] [window=3] [faulty=R:behaviour,...]
func newEnvFromCommand(c Command) (*Env, error) {
	f, err := c.int("f", 1)
	if err != nil {
		return nil, err
	}
	clients, err := c.int("clients", 1)
	if err != nil {
		return nil, err
	}
	k, err := c.int("k", 4)
	if err != nil {
		return nil, err
	}
	l, err := c.int("l", 2*k)
	if err != nil {
		return nil, err
	}
	window, err := c.int("window", 3)
	if err != nil {
		return nil, err
	}
	faulty := map[int]Behavior{}
	for _, spec := range c.Args["faulty"] {
		id, name, _ := strings.Cut(spec, ":")
		r, err := strconv.Atoi(id)
		if err != nil {
			return nil, fmt.Errorf("faulty=%s: %w", spec, err)
		}
		var b Behavior
		for _, cand := range AllBehaviors() {
			if cand.Name() == name {
				b = cand
			}
		}
		if b == nil {
			return nil, fmt.Errorf("unknown behaviour %q", name)
		}
		faulty[r] = b
	}
	return NewEnv(f, clients, func(cfg *bft.Config) {
		cfg.CheckpointInterval = bft.SeqNum(k)
		cfg.LogWindow = bft.SeqNum(l)
		cfg.PipelineWindow = window
	}, faulty), nil
}
