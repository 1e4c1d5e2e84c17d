package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/chzyer/readline"
	"golang.org/x/term"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/bft/replica"
)

const consoleHelp = `Commands:
  append KEY VALUE   append VALUE (the rest of the line) to the log of KEY
  read KEY           show the log of KEY
  len KEY            show the length of the log of KEY
  status             view, executed and stable sequence numbers of each replica
  kill REPLICA       kill -9 a replica (g0r1, r1 or 1): the group survives f of them
  restart REPLICA    start a killed replica again: it catches up with the others
  help               this text
  quit               stop the replicas and leave (also exit, Ctrl-D)
`

// console is the demo's command loop.
type console struct {
	out io.Writer
	cl  *client.Client
	// metrics are cl's metrics: the console reads its retransmissions.
	metrics     *client.Metrics
	sup         *supervisor
	group       *cluster.Group
	f           int
	callTimeout time.Duration
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
		fmt.Fprint(k.out, consoleHelp)
	case "append":
		key, value, ok := strings.Cut(rest, " ")
		if !ok || key == "" {
			fmt.Fprintln(k.out, "usage: append KEY VALUE")
			return false
		}
		if res, ok := k.call(ctx, replica.LogAppend(key, []byte(value))); ok {
			if n, err := replica.DecodeLogLength(res); err != nil {
				fmt.Fprintf(k.out, "error: %v\n", err)
			} else {
				fmt.Fprintf(k.out, "ok: %s has %s\n", key, entries(n))
			}
		}
	case "read":
		if !k.needKey("read", rest) {
			return false
		}
		if res, ok := k.call(ctx, replica.LogRead(rest)); ok {
			list, err := replica.DecodeLogEntries(res)
			if err != nil {
				fmt.Fprintf(k.out, "error: %v\n", err)
				return false
			}
			fmt.Fprintf(k.out, "%s: %s\n", rest, entries(uint64(len(list))))
			for i, e := range list {
				fmt.Fprintf(k.out, "  %d  %s\n", i+1, printable(e))
			}
		}
	case "len":
		if !k.needKey("len", rest) {
			return false
		}
		if res, ok := k.call(ctx, replica.LogLen(rest)); ok {
			if n, err := replica.DecodeLogLength(res); err != nil {
				fmt.Fprintf(k.out, "error: %v\n", err)
			} else {
				fmt.Fprintf(k.out, "%s: %s\n", rest, entries(n))
			}
		}
	case "status":
		k.status(ctx)
	case "kill":
		name, ok := k.replicaName(rest)
		if !ok {
			return false
		}
		if err := k.sup.Kill(name); err != nil {
			fmt.Fprintf(k.out, "error: %v\n", err)
			return false
		}
		fmt.Fprintf(k.out, "killed %s (SIGKILL). %s\n", name, k.faultNote())
	case "restart", "start":
		name, ok := k.replicaName(rest)
		if !ok {
			return false
		}
		pid, err := k.sup.Start(name)
		if err != nil {
			fmt.Fprintf(k.out, "error: %v\n", err)
			return false
		}
		fmt.Fprintf(k.out, "started %s (pid %d); it recovers from its store and catches up. Try status.\n", name, pid)
	default:
		fmt.Fprintf(k.out, "unknown command %q; type help for the commands\n", cmd)
	}
	return false
}

func (k *console) needKey(cmd, key string) bool {
	if key == "" || strings.ContainsAny(key, " \t") {
		fmt.Fprintf(k.out, "usage: %s KEY (a key has no spaces)\n", cmd)
		return false
	}
	return true
}

// call runs one call against the group within the console's timeout.
func (k *console) call(ctx context.Context, payload []byte) ([]byte, bool) {
	if err := (replica.LogApp{}).Validate(payload); err != nil {
		fmt.Fprintf(k.out, "error: %v\n", err)
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	start := time.Now()
	viewBefore, resentBefore := k.cl.View(), k.retransmissions()
	res, err := k.cl.Invoke(ctx, payload)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(k.out, "no answer within %s: the group needs %d of its %d replicas running (%s). The call is still pending and may execute later.\n",
				k.callTimeout, 2*k.f+1, len(k.group.Replicas), k.runningSummary())
		} else {
			fmt.Fprintf(k.out, "error: %v\n", err)
		}
		return nil, false
	}
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(k.out, "(answered after %s: %s)\n", d.Round(100*time.Millisecond),
			k.whySlow(viewBefore, k.cl.View(), k.retransmissions()-resentBefore))
	}
	return res, true
}

// whySlow says what happened during a slow call, from what the client
// learned: the view of the f+1 matching replies before and after (a higher
// one means the group changed its primary), and whether it had to send the
// call again.
func (k *console) whySlow(before, after bft.View, resent float64) string {
	n := uint64(len(k.group.Replicas))
	primary := func(v bft.View) string {
		return k.group.ReplicasByIndex()[uint64(v)%n].Name
	}
	var what string
	switch {
	case after > before:
		what = fmt.Sprintf("the group changed its primary from %s (view %d) to %s (view %d)", primary(before), before, primary(after), after)
	default:
		what = fmt.Sprintf("no change of primary (still %s, view %d)", primary(after), after)
	}
	switch {
	case resent > 0:
		times := fmt.Sprintf("%.0f times", resent)
		if resent == 1 {
			times = "once"
		}
		what += "; the call got no answer in time and was sent again " + times
	case after == before:
		what += "; the replicas were slow to answer (busy, or catching up)"
	}
	return what
}

// retransmissions is how many envelopes the console's client re-sent.
func (k *console) retransmissions() float64 {
	if k.metrics == nil {
		return 0
	}
	return counterValue(k.metrics.Retransmissions)
}

// replicaName resolves g0r1, r1 or 1 to a replica of the group.
func (k *console) replicaName(arg string) (string, bool) {
	arg = strings.TrimSpace(arg)
	for _, r := range k.group.Replicas {
		idx := strconv.Itoa(int(r.Index))
		if arg == r.Name || arg == idx || arg == "r"+idx {
			return r.Name, true
		}
	}
	var names []string
	for _, r := range k.group.ReplicasByIndex() {
		names = append(names, r.Name)
	}
	fmt.Fprintf(k.out, "unknown replica %q: one of %s\n", arg, strings.Join(names, ", "))
	return "", false
}

func (k *console) runningSummary() string {
	var up []string
	for _, r := range k.group.ReplicasByIndex() {
		if _, ok := k.sup.Running(r.Name); ok {
			up = append(up, r.Name)
		}
	}
	if len(up) == 0 {
		return "none running"
	}
	return "running: " + strings.Join(up, ", ")
}

func (k *console) faultNote() string {
	down := 0
	for _, r := range k.group.Replicas {
		if _, ok := k.sup.Running(r.Name); !ok {
			down++
		}
	}
	switch {
	case down <= k.f:
		return fmt.Sprintf("%d of %d replicas down: the group still answers (it tolerates f=%d).", down, len(k.group.Replicas), k.f)
	default:
		return fmt.Sprintf("%d of %d replicas down: more than f=%d, so the group cannot order calls until you restart some.", down, len(k.group.Replicas), k.f)
	}
}

// status prints each replica's state from its metrics.
func (k *console) status(ctx context.Context) {
	type row struct {
		name, state            string
		view, executed, stable string
	}
	reps := k.group.ReplicasByIndex()
	rows := make([]row, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		rows[i] = row{name: r.Name, view: "-", executed: "-", stable: "-"}
		pid, running := k.sup.Running(r.Name)
		if !running {
			rows[i].state = "down"
			continue
		}
		rows[i].state = fmt.Sprintf("up (pid %d)", pid)
		if r.MetricsAddr == "" {
			rows[i].state += ", no metrics_addr in cluster.json"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			m, err := scrape(sctx, r.MetricsAddr)
			if err != nil {
				rows[i].state += ", metrics unavailable: " + shortError(err)
				return
			}
			show := func(name string) string {
				if v, ok := m.value(name); ok {
					return strconv.FormatFloat(v, 'f', -1, 64)
				}
				return "?"
			}
			rows[i].view = show(metricView)
			if v, ok := m.value(metricViewChanging); ok && v > 0 {
				rows[i].view += " (changing)"
			}
			rows[i].executed = show(metricExecuted)
			rows[i].stable = show(metricStable)
		}()
	}
	wg.Wait()
	tw := tabwriter.NewWriter(k.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tSTATE\tVIEW\tEXECUTED\tSTABLE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.state, r.view, r.executed, r.stable)
	}
	_ = tw.Flush()
	fmt.Fprintf(k.out, "The primary of view v is replica v mod %d. %s\n", len(reps), k.faultNote())
}

func entries(n uint64) string {
	if n == 1 {
		return "1 entry"
	}
	return strconv.FormatUint(n, 10) + " entries"
}

// printable shows a value as text when it is, else quoted.
func printable(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < ' ' && r != '\t' }) {
		return string(b)
	}
	return strconv.Quote(string(b))
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
	for _, w := range []string{"append", "read", "len", "status", "kill", "restart", "help", "quit"} {
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
