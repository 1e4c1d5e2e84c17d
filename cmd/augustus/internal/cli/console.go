package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/chzyer/readline"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// consoleHelp lists the console's commands; example is a transaction over
// two groups of this cluster (or "").
func consoleHelp(example string) string {
	var b strings.Builder
	b.WriteString(`Transactions: a line of operations separated by ';' runs as one transaction,
atomically, in whatever groups its keys live in (the syntax of augustus txn):
  read KEY                        the value of KEY, or absent
  read-range START [END] [limit N]
                                  the present keys in [START, END)
  cmp KEY VALUE, cmp KEY absent   abort unless KEY's value is VALUE (or KEY is absent)
  insert KEY VALUE                set KEY to VALUE; aborts if KEY exists
  write KEY VALUE                 set KEY to VALUE; aborts unless KEY exists
  delete KEY                      delete KEY; aborts unless KEY exists
  meta read KEY                   read the metadata keyspace
A key or value is a word, a "quoted string" with Go escapes, or 0x and hex digits.
`)
	if example != "" {
		fmt.Fprintf(&b, "Across groups: %s\n", example)
	}
	b.WriteString(`
Commands:
  where KEY...       the group each key lives in
  status             view, primary, executed and stable sequence numbers of every replica of every group
  kill REPLICA       kill -9 a replica (e.g. g1r2): each group survives f of its replicas down
  restart REPLICA    start a killed replica again: it catches up with the others
  help               this text
  quit               stop the replicas and leave (also exit, Ctrl-D)
`)
	return b.String()
}

// consoleCommands are the console's own words; txnVerbs start a transaction.
var (
	consoleCommands = []string{"where", "status", "kill", "restart", "help", "quit"}
	txnVerbs        = []string{"read", "read-range", "cmp", "cmp-range", "insert", "write", "delete", "meta"}
)

// console is the demo's command loop: transactions through one coord
// client, and the replicas of every group under a supervisor.
type console struct {
	out  io.Writer
	cl   *coord.Client
	pmap *oracle.Map
	// reg holds cl's metrics: the console reads its group clients'
	// retransmissions.
	reg         prometheus.Gatherer
	sup         *supervisor
	c           *cluster.Cluster
	f           int
	callTimeout time.Duration
	// example is a transaction across two groups, for the help.
	example string
	// echo prints each command after a prompt, so a session read from a
	// pipe reads as a transcript.
	echo bool
}

// lineReader yields the console's input lines.
type lineReader interface {
	// ReadLine returns the next line, io.EOF at the end of the input.
	ReadLine() (string, error)
	Close() error
}

func (k *console) run(ctx context.Context, lines lineReader) error {
	for {
		line, err := lines.ReadLine()
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		line = strings.TrimSpace(line)
		if k.echo && line != "" {
			fmt.Fprintf(k.out, "augustus> %s\n", line)
		}
		if quit := k.exec(ctx, line); quit {
			return nil
		}
	}
}

// exec runs one command line and reports whether the console should end.
func (k *console) exec(ctx context.Context, line string) bool {
	if line == "" || strings.HasPrefix(line, "#") {
		return false
	}
	cmd, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimLeft(rest, " ")
	switch strings.ToLower(cmd) {
	case "quit", "exit", `\q`:
		return true
	case "help", "?", `\?`:
		fmt.Fprint(k.out, consoleHelp(k.example))
	case "where":
		k.where(rest)
	case "status":
		k.status(ctx)
	case "kill":
		r, ok := k.replica(rest)
		if !ok {
			return false
		}
		if err := k.sup.Kill(r.Name); err != nil {
			fmt.Fprintf(k.out, "error: %v\n", err)
			return false
		}
		fmt.Fprintf(k.out, "killed %s (SIGKILL). %s\n", r.Name, k.faultNote(k.groupOf(r.Name)))
	case "restart", "start":
		r, ok := k.replica(rest)
		if !ok {
			return false
		}
		pid, err := k.sup.Start(r.Name)
		if err != nil {
			fmt.Fprintf(k.out, "error: %v\n", err)
			return false
		}
		fmt.Fprintf(k.out, "started %s (pid %d); it recovers from its store and catches up. Try status.\n", r.Name, pid)
	default:
		verb := strings.TrimRight(strings.ToLower(cmd), ";")
		if !slices.Contains(txnVerbs, verb) {
			fmt.Fprintf(k.out, "unknown command %q: type help for the commands and the transaction syntax\n", cmd)
			return false
		}
		k.txn(ctx, line)
	}
	return false
}

// txn runs a line as one transaction and prints its outcome and results.
func (k *console) txn(ctx context.Context, line string) {
	stmts, err := parseTxn(line)
	if err != nil {
		fmt.Fprintf(k.out, "error: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	start := time.Now()
	before, resentBefore := k.views(), k.retransmissions()
	res, err := execTxn(ctx, k.cl, stmts, coord.Options{})
	switch {
	case errors.Is(err, coord.ErrNoAdminKey):
		fmt.Fprintf(k.out, "error: metadata writes need an admin key, which the console does not use: augustus txn --dir DIR --admin admin0 '...'\n")
		return
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(k.out, "no outcome within %s: each group needs %d of its %d replicas running (%s). The transaction may still commit: the client goes on finishing it.\n",
			k.callTimeout, 2*k.f+1, 3*k.f+1, k.runningSummary())
		return
	case err != nil:
		fmt.Fprintf(k.out, "error: %v\n", err)
		return
	}
	if err := printTxn(k.out, k.pmap, stmts, res); err != nil {
		fmt.Fprintf(k.out, "error: %v\n", err)
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(k.out, "(answered after %s: %s)\n", d.Round(100*time.Millisecond),
			k.whySlow(res.Groups, before, k.views(), k.retransmissions()-resentBefore, res.Attempts))
	}
}

// where says which group each key lives in.
func (k *console) where(rest string) {
	toks, err := tokenize(rest)
	if err == nil && len(toks) == 0 {
		err = errors.New("want where KEY...")
	}
	if err != nil {
		fmt.Fprintf(k.out, "error: %v\n", err)
		return
	}
	tw := tabwriter.NewWriter(k.out, 0, 0, 2, ' ', 0)
	for _, t := range toks {
		key, err := bytesOf(t)
		if err != nil {
			fmt.Fprintf(tw, "%s\terror: %v\n", t.text, err)
			continue
		}
		g := k.pmap.KeyGroup(key)
		fmt.Fprintf(tw, "%s\tgroup %d\t(replicas %s)\n", quote(key), g, strings.Join(k.names(k.group(g)), ", "))
	}
	_ = tw.Flush()
}

// group returns the group with id g (nil if none).
func (k *console) group(g bft.GroupID) *cluster.Group {
	for i := range k.c.Groups {
		if bft.GroupID(k.c.Groups[i].ID) == g {
			return &k.c.Groups[i]
		}
	}
	return nil
}

// groupOf returns the group of a replica.
func (k *console) groupOf(name string) *cluster.Group {
	for i := range k.c.Groups {
		for _, r := range k.c.Groups[i].Replicas {
			if r.Name == name {
				return &k.c.Groups[i]
			}
		}
	}
	return nil
}

func (k *console) names(g *cluster.Group) []string {
	var names []string
	if g != nil {
		for _, r := range g.ReplicasByIndex() {
			names = append(names, r.Name)
		}
	}
	return names
}

// views returns the view each group's last accepted replies had.
func (k *console) views() map[bft.GroupID]bft.View {
	v := make(map[bft.GroupID]bft.View, len(k.c.Groups))
	for _, g := range k.c.Groups {
		if k.cl != nil {
			v[bft.GroupID(g.ID)] = k.cl.GroupView(bft.GroupID(g.ID))
		}
	}
	return v
}

// whySlow says what happened during a slow transaction, from what the
// client learned: the view of each involved group's f+1 matching replies
// before and after (a higher one means the group changed its primary),
// whether it had to send envelopes again, and whether conflicts made it
// retry.
func (k *console) whySlow(groups []bft.GroupID, before, after map[bft.GroupID]bft.View, resent float64, attempts int) string {
	var parts []string
	changed := false
	for _, id := range groups {
		g := k.group(id)
		if g == nil {
			continue
		}
		n := uint64(len(g.Replicas))
		primary := func(v bft.View) string { return g.ReplicasByIndex()[uint64(v)%n].Name }
		b, a := before[id], after[id]
		if a > b {
			changed = true
			parts = append(parts, fmt.Sprintf("group %d changed its primary from %s (view %d) to %s (view %d)", id, primary(b), b, primary(a), a))
		} else {
			parts = append(parts, fmt.Sprintf("group %d kept its primary (%s, view %d)", id, primary(a), a))
		}
	}
	what := strings.Join(parts, "; ")
	if attempts > 1 {
		what += fmt.Sprintf("; it took %d attempts (conflicts with other transactions)", attempts)
	}
	switch {
	case resent > 0:
		times := fmt.Sprintf("%.0f times", resent)
		if resent == 1 {
			times = "once"
		}
		what += "; a call got no answer in time and was sent again " + times
	case !changed && attempts <= 1:
		what += "; the replicas were slow to answer (busy, or catching up)"
	}
	return what
}

// retransmissions is how many envelopes the console's group clients re-sent.
func (k *console) retransmissions() float64 {
	if k.reg == nil {
		return 0
	}
	mfs, err := k.reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "augustus_client_retransmissions_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// replica resolves a replica's name (g1r2; r2 or 2 when the cluster has one
// group).
func (k *console) replica(arg string) (cluster.Replica, bool) {
	arg = strings.TrimSpace(arg)
	for _, g := range k.c.Groups {
		for _, r := range g.Replicas {
			idx := strconv.Itoa(int(r.Index))
			if arg == r.Name || (len(k.c.Groups) == 1 && (arg == idx || arg == "r"+idx)) {
				return r, true
			}
		}
	}
	var names []string
	for i := range k.c.Groups {
		names = append(names, k.names(&k.c.Groups[i])...)
	}
	fmt.Fprintf(k.out, "unknown replica %q: one of %s\n", arg, strings.Join(names, ", "))
	return cluster.Replica{}, false
}

// runningSummary lists the running replicas of each group.
func (k *console) runningSummary() string {
	var parts []string
	for i := range k.c.Groups {
		g := &k.c.Groups[i]
		var up []string
		for _, r := range g.ReplicasByIndex() {
			if _, ok := k.sup.Running(r.Name); ok {
				up = append(up, r.Name)
			}
		}
		s := "none running"
		if len(up) > 0 {
			s = "running " + strings.Join(up, ", ")
		}
		parts = append(parts, fmt.Sprintf("group %d: %s", g.ID, s))
	}
	return strings.Join(parts, "; ")
}

// faultNote says whether group g still answers.
func (k *console) faultNote(g *cluster.Group) string {
	if g == nil {
		return ""
	}
	down := 0
	for _, r := range g.Replicas {
		if _, ok := k.sup.Running(r.Name); !ok {
			down++
		}
	}
	switch {
	case down <= k.f:
		return fmt.Sprintf("Group %d: %d of %d replicas down: it still answers (it tolerates f=%d).", g.ID, down, len(g.Replicas), k.f)
	default:
		return fmt.Sprintf("Group %d: %d of %d replicas down: more than f=%d, so it cannot order calls (transactions that touch it wait) until you restart some.", g.ID, down, len(g.Replicas), k.f)
	}
}

// status prints the state of every replica of every group from its
// metrics.
func (k *console) status(ctx context.Context) {
	type row struct {
		name, state                     string
		note                            string // why the metrics are missing
		view, primary, executed, stable string
	}
	rows := make([][]row, len(k.c.Groups))
	var wg sync.WaitGroup
	for gi := range k.c.Groups {
		reps := k.c.Groups[gi].ReplicasByIndex()
		rows[gi] = make([]row, len(reps))
		for i, r := range reps {
			rw := &rows[gi][i]
			*rw = row{name: r.Name, view: "-", primary: "-", executed: "-", stable: "-"}
			pid, running := k.sup.Running(r.Name)
			if !running {
				rw.state = "down"
				continue
			}
			rw.state = fmt.Sprintf("up (pid %d)", pid)
			if r.MetricsAddr == "" {
				rw.state += " *"
				rw.note = "no metrics_addr in cluster.json"
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				m, err := scrape(sctx, r.MetricsAddr)
				if err != nil {
					rw.state += " *"
					rw.note = "metrics unavailable: " + shortError(err)
					return
				}
				show := func(name string) string {
					if v, ok := m.value(name); ok {
						return strconv.FormatFloat(v, 'f', -1, 64)
					}
					return "?"
				}
				if v, ok := m.value(metricView); ok && v >= 0 {
					rw.view = strconv.FormatFloat(v, 'f', -1, 64)
					rw.primary = reps[uint64(v)%uint64(len(reps))].Name
				} else {
					rw.view = "?"
				}
				if v, ok := m.value(metricViewChanging); ok && v > 0 {
					rw.view += " (changing)"
				}
				rw.executed = show(metricExecuted)
				rw.stable = show(metricStable)
			}()
		}
	}
	wg.Wait()
	for gi := range k.c.Groups {
		g := &k.c.Groups[gi]
		if gi > 0 {
			fmt.Fprintln(k.out)
		}
		fmt.Fprintf(k.out, "Group %d%s:\n", g.ID, k.keysOf(bft.GroupID(g.ID)))
		tw := tabwriter.NewWriter(k.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  REPLICA\tSTATE\tVIEW\tPRIMARY\tEXECUTED\tSTABLE")
		for _, r := range rows[gi] {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.state, r.view, r.primary, r.executed, r.stable)
		}
		_ = tw.Flush()
		for _, r := range rows[gi] {
			if r.note != "" {
				fmt.Fprintf(k.out, "  * %s: %s\n", r.name, r.note)
			}
		}
		fmt.Fprintf(k.out, "  %s\n", k.faultNote(g))
	}
	fmt.Fprintf(k.out, "The primary of view v is replica v mod %d of its group (PRIMARY: the one each replica follows).\n", 3*k.f+1)
}

// keysOf describes the key ranges group g holds in the console's map, as
// " (keys from A to B, ...)", or "" without a map.
func (k *console) keysOf(g bft.GroupID) string {
	if k.pmap == nil {
		return ""
	}
	var spans []string
	rs := k.pmap.Ranges()
	for i, r := range rs {
		if !slices.Contains(r.Groups, g) {
			continue
		}
		span := "from " + quote(r.Start)
		if i+1 < len(rs) {
			span += " to " + quote(rs[i+1].Start)
		} else {
			span += " on"
		}
		if len(r.Groups) > 1 {
			span += " (shared by hash)"
		}
		spans = append(spans, span)
	}
	if len(spans) == 0 {
		return " (no keys)"
	}
	return " (keys " + strings.Join(spans, ", ") + ")"
}

// newLineReader reads lines with line editing and history on a terminal,
// and plainly from a pipe or file.
func newLineReader(ctx context.Context, in io.Reader, out io.Writer, historyFile string) (lineReader, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return newReadlineReader(ctx, f, out, historyFile)
	}
	return newPipeReader(ctx, in), nil
}

// readlineReader is an interactive terminal.
type readlineReader struct {
	rl   *readline.Instance
	stop chan struct{}
	wg   sync.WaitGroup
}

func newReadlineReader(ctx context.Context, in *os.File, out io.Writer, historyFile string) (*readlineReader, error) {
	words := []readline.PrefixCompleterInterface{}
	for _, w := range append(slices.Clone(consoleCommands), txnVerbs...) {
		words = append(words, readline.PcItem(w))
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          "augustus> ",
		HistoryFile:     historyFile,
		AutoComplete:    readline.NewPrefixCompleter(words...),
		InterruptPrompt: "^C",
		EOFPrompt:       "quit",
		Stdin:           in,
		Stdout:          out,
	})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	r := &readlineReader{rl: rl, stop: make(chan struct{})}
	r.wg.Add(1)
	go func() { // a signal ends a pending ReadLine
		defer r.wg.Done()
		select {
		case <-ctx.Done():
			_ = rl.Close()
		case <-r.stop:
		}
	}()
	return r, nil
}

func (r *readlineReader) ReadLine() (string, error) {
	for {
		line, err := r.rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			if line == "" {
				fmt.Fprintln(r.rl.Stdout(), "(quit or Ctrl-D leaves)")
			}
			continue
		}
		return line, err
	}
}

func (r *readlineReader) Close() error {
	close(r.stop)
	r.wg.Wait()
	return r.rl.Close()
}

// pipeReader reads lines from a non-terminal input. Its goroutine ends at
// the end of the input or when the console is done with it; a Read blocked
// on an input that never ends is abandoned to the process's exit.
type pipeReader struct {
	lines chan string
	errc  chan error
	ctx   context.Context
	stop  chan struct{}
	once  sync.Once
}

func newPipeReader(ctx context.Context, in io.Reader) *pipeReader {
	p := &pipeReader{lines: make(chan string), errc: make(chan error, 1), ctx: ctx, stop: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 2<<20)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			case <-p.stop:
				return
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.EOF
		}
		p.errc <- err
	}()
	return p
}

func (p *pipeReader) ReadLine() (string, error) {
	select {
	case line := <-p.lines:
		return line, nil
	case err := <-p.errc:
		return "", err
	case <-p.ctx.Done():
		return "", io.EOF
	}
}

func (p *pipeReader) Close() error {
	p.once.Do(func() { close(p.stop) })
	return nil
}
