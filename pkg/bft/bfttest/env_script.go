package bfttest

import (
	"fmt"
	"strconv"
	"strings"
)

// Command is one line of a scenario script: a verb and key=value arguments
// (values may be comma-separated lists).
type Command struct {
	Verb string
	Args map[string][]string
}

func (c Command) ints(key string) ([]int, error) {
	var out []int
	for _, v := range c.Args[key] {
		i, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", key, v, err)
		}
		out = append(out, i)
	}
	return out, nil
}

func (c Command) int(key string, def int) (int, error) {
	xs, err := c.ints(key)
	if err != nil || len(xs) == 0 {
		return def, err
	}
	return xs[0], nil
}

func (c Command) filter() (Filter, error) {
	var f Filter
	var err error
	if f.From, err = c.ints("from"); err != nil {
		return f, err
	}
	if f.To, err = c.ints("to"); err != nil {
		return f, err
	}
	f.Types = c.Args["type"]
	for _, k := range []string{"view", "seq"} {
		if v, ok := c.Args[k]; ok {
			x, err := strconv.ParseUint(v[0], 10, 64)
			if err != nil {
				return f, fmt.Errorf("%s: %w", k, err)
			}
			if k == "view" {
				f.View = &x
			} else {
				f.Seq = &x
			}
		}
	}
	return f, nil
}

// Run executes one command and returns its output; checker violations
// found along the way are appended, so a scenario's expected output shows
// them.
//
//	request client=C [to=R,...]        client C issues a request (to its primary, or to R...)
//	retransmit client=C [to=R,...]     re-send C's outstanding request (to all replicas), C4
//	deliver [from=] [to=] [type=] [view=] [seq=]   deliver matching messages until none match
//	drop [filter]                      discard matching messages
//	copy [filter] dest=R               queue a copy of matching messages for R
//	tick [r=R,...] [n=N]               tick replicas (all) N (1) times
//	crash r=R | restart r=R            crash / restart from the store
//	cut a=R,... b=R,... | heal         cut links between two sets / restore them
//	stabilize [n=N]                    N (300) rounds of: deliver everything, tick all
//	queue | status | executed | stats  describe the queue, the replicas, the agreed log, core counters
func (e *Env) Run(c Command) (string, error) {
	var out string
	switch c.Verb {
	case "request":
		cl, err := c.int("client", 0)
		if err != nil {
			return "", err
		}
		to, err := c.ints("to")
		if err != nil {
			return "", err
		}
		if err := e.Request(cl, to); err != nil {
			return "", err
		}
		out = "ok\n"
	case "retransmit":
		cl, err := c.int("client", 0)
		if err != nil {
			return "", err
		}
		to, err := c.ints("to")
		if err != nil {
			return "", err
		}
		out = fmt.Sprintf("sent %d\n", e.Retransmit(cl, to))
	case "deliver", "drop", "copy":
		f, err := c.filter()
		if err != nil {
			return "", err
		}
		if c.Verb == "copy" {
			dest, err := c.int("dest", -1)
			if err != nil || dest < 0 || dest >= len(e.sim.g.Replicas) {
				return "", fmt.Errorf("copy needs dest=<replica>: %v", err)
			}
			out = fmt.Sprintf("copied %d\n", e.Copy(f, dest))
		} else if c.Verb == "deliver" {
			out = fmt.Sprintf("delivered %d\n", e.Deliver(f))
		} else {
			out = fmt.Sprintf("dropped %d\n", e.Drop(f))
		}
	case "tick":
		rs, err := c.ints("r")
		if err != nil {
			return "", err
		}
		n, err := c.int("n", 1)
		if err != nil {
			return "", err
		}
		e.Tick(rs, n)
		out = "ok\n"
	case "crash", "restart":
		r, err := c.int("r", -1)
		if err != nil || r < 0 || r >= len(e.sim.g.Replicas) {
			return "", fmt.Errorf("%s needs r=<replica>: %v", c.Verb, err)
		}
		if c.Verb == "crash" {
			e.Crash(r)
		} else {
			e.Restart(r)
		}
		out = "ok\n"
	case "cut":
		a, err := c.ints("a")
		if err != nil {
			return "", err
		}
		b, err := c.ints("b")
		if err != nil {
			return "", err
		}
		e.Cut(a, b)
		out = "ok\n"
	case "heal":
		e.Heal()
		out = "ok\n"
	case "stabilize":
		n, err := c.int("n", 300)
		if err != nil {
			return "", err
		}
		for i := 0; i < n; i++ {
			e.Deliver(Filter{})
			e.Tick(nil, 1)
		}
		e.Deliver(Filter{})
		out = "ok\n"
	case "queue":
		out = e.Queue()
	case "status":
		out = e.Status()
	case "executed":
		out = e.Executed()
	case "stats":
		out = e.Stats()
	default:
		return "", fmt.Errorf("unknown command %q", c.Verb)
	}
	for _, v := range e.sim.w.violations[e.reported:] {
		out += "VIOLATION " + v + "\n"
	}
	e.reported = len(e.sim.w.violations)
	return out, nil
}

// ParseArgs turns "k=v1,v2" words into a Command's arguments.
func ParseArgs(words []string) map[string][]string {
	args := make(map[string][]string)
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		if v == "" {
			args[k] = nil
			continue
		}
		args[k] = strings.Split(v, ",")
	}
	return args
}
