package cli

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

type txnOptions struct {
	dir      string
	client   string
	admin    string
	timeout  time.Duration
	json     bool
	retries  int
	logLevel string
}

func newTxnCommand() *cobra.Command {
	o := txnOptions{}
	cmd := &cobra.Command{
		Use:   "txn --dir DIR 'OPERATION; OPERATION; ...'",
		Short: "Run one transaction and print its outcome and results",
		Long: `Run one short transaction against the cluster in DIR and print its outcome
(committed, or aborted with the reason) and the result of every operation.

The operations all run in one transaction, atomically, in whatever groups
their keys live in (the partition map routes them; a transaction over two
groups commits in both or in neither). Separate them with ';' or newlines:

  read K                    the value of K, or absent
  read-range START [END] [limit N]
                            the present keys in [START, END) (no END: to the
                            end), at most N (default 100); "more" says the
                            range goes on
  cmp K V                   the transaction aborts unless K's value is V
  cmp K absent              ... unless K does not exist
  insert K V                set K to V; aborts if K exists
  write K V                 set K to V; aborts unless K exists
  delete K                  delete K; aborts unless K exists
  meta OPERATION            the same on the metadata keyspace (writes need
                            an admin key: --admin)

A key or value is a word, a double-quoted string with Go escapes ("a b",
"\x90"), or 0x followed by hex digits. With the default map of two groups,
keys whose first byte is below 0x80 (all ASCII keys) live in group 0, the
others (e.g. "\x90k", 0x9001, or a UTF-8 word like "été") in group 1.

Conflicts with other transactions are retried with back-off, and
transactions other clients left unfinished are recovered on the way. The
exit status is 0 when the transaction committed, 1 otherwise. The client
key is DIR/keys/NAME.key for --client NAME (default: the last client in
cluster.json; two processes must not use one client key at the same time).`,
		Example: `  augustus txn --dir ./cluster 'insert k1 v1; insert "\x90k2" v2'
  augustus txn --dir ./cluster 'read k1; cmp k1 v1; write "\x90k2" v3'
  augustus txn --dir ./cluster 'read-range "" limit 10'
  augustus txn --dir ./cluster --json 'read k1'
  augustus txn --dir ./cluster --admin admin0 'meta insert schema/t "{...}"'`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("want the transaction as one argument (quote it), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTxn(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "cluster directory (cluster.json and keys/; required)")
	fl.StringVar(&o.client, "client", "", "client name in cluster.json (default: the last one listed)")
	fl.StringVar(&o.admin, "admin", "", "admin name in cluster.json, for metadata writes (e.g. admin0)")
	fl.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long (connecting included)")
	fl.BoolVar(&o.json, "json", false, "print the outcome and results as JSON")
	fl.IntVar(&o.retries, "retries", 0, "retries of conflict aborts (0: the library's default; -1: none)")
	fl.StringVar(&o.logLevel, "log-level", "error", "debug, info, warn or error (the library's and connections' logs, on stderr)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// txnStatement is one parsed operation, with its text for the output.
type txnStatement struct {
	text string
	op   txn.Op
}

// parseTxn parses the transaction language of `augustus txn --help`.
func parseTxn(src string) ([]txnStatement, error) {
	var out []txnStatement
	n := 0
	for _, line := range strings.Split(src, "\n") {
		stmts, err := splitStatements(line)
		if err != nil {
			return nil, err
		}
		for _, s := range stmts {
			if strings.TrimSpace(s) == "" {
				continue
			}
			n++
			st, err := parseStatement(s)
			if err != nil {
				return nil, fmt.Errorf("operation %d (%s): %w", n, strings.TrimSpace(s), err)
			}
			out = append(out, st)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no operations (see augustus txn --help)")
	}
	return out, nil
}

// splitStatements splits a line at the semicolons outside quotes.
func splitStatements(line string) ([]string, error) {
	var out []string
	start, quoted, escaped := 0, false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			out = append(out, line[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", strings.TrimSpace(line))
	}
	return append(out, line[start:]), nil
}

// tokenize splits a statement into words and quoted strings (token.quoted
// tells which, so `cmp k absent` and `cmp k "absent"` differ).
type token struct {
	text   string
	quoted bool
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '"':
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '"' {
					break
				}
			}
			if j >= len(s) {
				return nil, errors.New("unterminated quote")
			}
			v, err := strconv.Unquote(s[i : j+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted string %s: %w", s[i:j+1], err)
			}
			out = append(out, token{text: v, quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' && s[j] != '"' {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

// bytesOf reads a key or value: 0x-prefixed hex unless quoted.
func bytesOf(t token) ([]byte, error) {
	if !t.quoted && strings.HasPrefix(t.text, "0x") {
		b, err := hex.DecodeString(t.text[2:])
		if err != nil {
			return nil, fmt.Errorf("bad hex %s: %w", t.text, err)
		}
		return b, nil
	}
	return []byte(t.text), nil
}

var txnOps = "read, read-range, cmp, insert, write, delete, or meta followed by one of them"

func parseStatement(s string) (txnStatement, error) {
	toks, err := tokenize(s)
	if err != nil {
		return txnStatement{}, err
	}
	st := txnStatement{text: strings.Join(strings.Fields(strings.TrimSpace(s)), " ")}
	if len(toks) > 0 && !toks[0].quoted && toks[0].text == "meta" {
		st.op.Meta = true
		toks = toks[1:]
	}
	if len(toks) == 0 || toks[0].quoted {
		return st, fmt.Errorf("want an operation: %s", txnOps)
	}
	verb, args := toks[0].text, toks[1:]
	want := func(n int, form string) error {
		if len(args) != n {
			return fmt.Errorf("want %s", form)
		}
		return nil
	}
	var keys [][]byte
	for _, a := range args {
		b, err := bytesOf(a)
		if err != nil {
			return st, err
		}
		keys = append(keys, b)
	}
	switch verb {
	case "read":
		err = want(1, "read KEY")
		st.op.Kind = txn.OpRead
	case "delete":
		err = want(1, "delete KEY")
		st.op.Kind = txn.OpDelete
	case "insert", "write":
		err = want(2, verb+" KEY VALUE")
		st.op.Kind = txn.OpInsert
		if verb == "write" {
			st.op.Kind = txn.OpWrite
		}
		if err == nil {
			st.op.Value = keys[1]
		}
	case "cmp":
		err = want(2, "cmp KEY VALUE, or cmp KEY absent")
		st.op.Kind = txn.OpCmp
		if err == nil {
			if !args[1].quoted && args[1].text == "absent" {
				st.op.Absent = true
			} else {
				st.op.Value = keys[1]
			}
		}
	case "read-range":
		return parseReadRange(st, args, keys)
	case "cmp-range":
		return st, errors.New("cmp-range carries per-group digests: the SQL layer builds it, not this command")
	default:
		return st, fmt.Errorf("unknown operation %q: want %s", verb, txnOps)
	}
	if err != nil {
		return st, err
	}
	st.op.Key = keys[0]
	if len(st.op.Key) == 0 {
		return st, errors.New("empty key")
	}
	return st, nil
}

func parseReadRange(st txnStatement, args []token, keys [][]byte) (txnStatement, error) {
	const form = "read-range START [END] [limit N]"
	st.op.Kind, st.op.Limit = txn.OpReadRange, 100
	if n := len(args); n >= 2 && !args[n-2].quoted && args[n-2].text == "limit" {
		l, err := strconv.ParseUint(args[n-1].text, 10, 32)
		if err != nil || l == 0 {
			return st, fmt.Errorf("limit %q: want a positive number", args[n-1].text)
		}
		st.op.Limit = uint32(l)
		args, keys = args[:n-2], keys[:n-2]
	}
	switch len(args) {
	case 1:
		st.op.Key = keys[0]
	case 2:
		st.op.Key, st.op.End = keys[0], keys[1]
	default:
		return st, fmt.Errorf("want %s", form)
	}
	if st.op.Key == nil {
		st.op.Key = []byte{}
	}
	return st, nil
}

func runTxn(ctx context.Context, stdout, stderr io.Writer, o txnOptions, src string) error {
	stmts, err := parseTxn(src)
	if err != nil {
		return fmt.Errorf("txn: %w", err)
	}
	c, err := loadClusterDir(o.dir)
	if err != nil {
		return err
	}
	key, err := txnClientKey(c, o)
	if err != nil {
		return err
	}
	var admin ed25519.PrivateKey
	if o.admin != "" {
		if _, err := c.Admin(o.admin); err != nil {
			return fmt.Errorf("--admin %q: %w", o.admin, err)
		}
		if admin, err = cluster.LoadAdminKey(o.dir, o.admin); err != nil {
			return fmt.Errorf("--admin %q: %w", o.admin, err)
		}
	}
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	pmap, err := oracle.FromCluster(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cl, err := coord.NewClient(ctx, coord.ClientConfig{
		Cluster: c, Key: key, Admin: admin, Map: pmap, Logger: logger,
		GroupTimeout: 500 * time.Millisecond, DrainTimeout: o.timeout,
	})
	if err != nil {
		return fmt.Errorf("txn: connect: %w", withAppHint(err, o.dir))
	}
	res, err := execTxn(ctx, cl, stmts, coord.Options{MaxRetries: o.retries})
	// Close waits for the termination (outcome, proofs) to reach every
	// group, so the transaction leaves nothing unproven behind this process
	// (the next process with this key would finish it anyway, W3). The
	// outcome is printed first.
	defer cl.Close()
	switch {
	case errors.Is(err, coord.ErrNoAdminKey):
		return errors.New("txn: metadata writes need an admin key: pass --admin NAME (an admin of cluster.json, e.g. admin0)")
	case err != nil:
		return fmt.Errorf("txn: %w", err)
	}
	if o.json {
		err = printTxnJSON(stdout, pmap, stmts, res)
	} else {
		err = printTxn(stdout, pmap, stmts, res)
	}
	if err != nil {
		return err
	}
	if !res.Committed {
		return &exitError{code: 1, err: errors.New("aborted")}
	}
	return nil
}

// execTxn runs parsed statements as one transaction with cl (augustus txn
// and the demo's console). It returns the result when the transaction
// committed or aborted for good (res.Committed tells which); an error when
// there is no outcome to print: the groups rejected it, ctx ended first (it
// may still commit), or coord.ErrNoAdminKey for a metadata write without an
// admin key.
func execTxn(ctx context.Context, cl *coord.Client, stmts []txnStatement, opts coord.Options) (*coord.Result, error) {
	ops := make(coord.Ops, len(stmts))
	for i := range stmts {
		ops[i] = stmts[i].op
	}
	res, err := cl.Do(ctx, ops, opts)
	var aborted *coord.AbortedError
	switch {
	case errors.Is(err, coord.ErrNoAdminKey):
		return nil, err
	case errors.As(err, &aborted):
		return res, nil
	case errors.Is(err, client.ErrRejected):
		return nil, fmt.Errorf("the groups rejected the transaction: %w", err)
	case err != nil:
		return nil, err
	}
	return res, nil
}

// txnClientKey loads the client key: --client, or the last listed client.
func txnClientKey(c *cluster.Cluster, o txnOptions) (ed25519.PrivateKey, error) {
	name := o.client
	if name == "" {
		if len(c.Clients) == 0 {
			return nil, errors.New("cluster.json lists no client: add one (augustus init --clients N) or pass --client")
		}
		name = c.Clients[len(c.Clients)-1].Name
	}
	found := false
	for _, cl := range c.Clients {
		found = found || cl.Name == name
	}
	if !found && c.ClientPolicy == cluster.PolicyListed {
		return nil, fmt.Errorf("--client %q: not a client of cluster.json, and the replicas admit only listed clients", name)
	}
	path := cluster.KeyPath(o.dir, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--client %q: no key file %s", name, path)
	}
	return cluster.LoadClientKey(o.dir, name)
}

// groupOf names where an operation ran.
func groupOf(m *oracle.Map, op *txn.Op, declared []bft.GroupID) string {
	if op.Meta || op.Kind.IsRange() {
		// Metadata is replicated everywhere: it runs at every declared
		// group (M1).
		gs := declared
		if !op.Meta {
			gs = m.AppendRangeGroups(nil, op.Key, op.End)
		}
		parts := make([]string, len(gs))
		for i, g := range gs {
			parts[i] = strconv.Itoa(int(g))
		}
		return strings.Join(parts, ",")
	}
	return strconv.Itoa(int(m.KeyGroup(op.Key)))
}

func kindName(k txn.Kind) string {
	switch k {
	case txn.KindSingle:
		return "single-group"
	case txn.KindMultiRead:
		return "multi-group read-only"
	case txn.KindMultiUpdate:
		return "multi-group update"
	case txn.KindMeta:
		return "metadata"
	}
	return k.String()
}

func groupList(gs []bft.GroupID) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = strconv.Itoa(int(g))
	}
	if len(parts) == 1 {
		return "group " + parts[0]
	}
	return "groups " + strings.Join(parts, ", ")
}

// abortText explains an abort for people.
func abortText(stmts []txnStatement, res *coord.Result) string {
	ae := res.Abort
	if ae == nil {
		return "aborted"
	}
	at := fmt.Sprintf("at group %d", ae.Group)
	switch ae.Reason {
	case txn.ReasonCompare, txn.ReasonKeyExists, txn.ReasonNotFound, txn.ReasonMapChange:
		what := map[txn.Reason]string{txn.ReasonCompare: "comparison failed", txn.ReasonKeyExists: "key exists",
			txn.ReasonNotFound: "key not found", txn.ReasonMapChange: "the map change would move data"}[ae.Reason]
		op := ""
		if ae.Op >= 0 && ae.Op < len(stmts) {
			op = fmt.Sprintf(" (%s)", stmts[ae.Op].text)
		}
		return fmt.Sprintf("%s at operation %d%s, %s", what, ae.Op, op, at)
	case txn.ReasonConflict:
		if res.Blocker != nil {
			return fmt.Sprintf("conflict with pending transaction %s %s", res.Blocker, at)
		}
	case txn.ReasonStaleMetadata:
		return fmt.Sprintf("stale metadata %s (its version is %d)", at, ae.Version)
	}
	return fmt.Sprintf("%s %s", strings.ReplaceAll(ae.Reason.String(), "_", " "), at)
}

func printTxn(w io.Writer, m *oracle.Map, stmts []txnStatement, res *coord.Result) error {
	attempts := "1 attempt"
	if res.Attempts != 1 {
		attempts = fmt.Sprintf("%d attempts", res.Attempts)
	}
	head := fmt.Sprintf("%s, %s, nonce %d, %s, %s", kindName(res.Kind), groupList(res.Groups), res.Nonce, attempts,
		res.Latency.Round(10*time.Microsecond))
	if !res.Committed {
		fmt.Fprintf(w, "aborted: %s\n  (%s)\n", abortText(stmts, res), head)
		return nil
	}
	fmt.Fprintf(w, "committed (%s)\n", head)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  #\toperation\tgroup\tresult\n")
	for i := range stmts {
		op := &stmts[i].op
		var result string
		var extra []string
		switch op.Kind {
		case txn.OpRead:
			result = "absent"
			if r := res.Ops[i]; r.Present {
				result = quote(r.Value)
			}
		case txn.OpReadRange:
			r := res.Ops[i]
			result = fmt.Sprintf("%d entries", len(r.Entries))
			if len(r.Entries) == 1 {
				result = "1 entry"
			}
			if r.More {
				result += fmt.Sprintf(", more from %s", quote(r.Next))
			}
			for _, kv := range r.Entries {
				extra = append(extra, fmt.Sprintf("    \t  %s = %s\t\t\n", quote(kv.Key), quote(kv.Value)))
			}
		default:
			result = "ok"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", i, stmts[i].text, groupOf(m, op, res.Groups), result)
		for _, e := range extra {
			fmt.Fprint(tw, e)
		}
	}
	return tw.Flush()
}

// quote prints bytes as a Go string literal (so binary keys stay readable).
func quote(b []byte) string { return strconv.Quote(string(b)) }

type txnJSON struct {
	Outcome   string       `json:"outcome"`
	ID        string       `json:"id"`
	Kind      string       `json:"kind"`
	Groups    []uint32     `json:"groups"`
	Nonce     uint64       `json:"nonce"`
	Attempts  int          `json:"attempts"`
	LatencyMS float64      `json:"latency_ms"`
	Abort     *txnAbortOut `json:"abort,omitempty"`
	Ops       []txnOpOut   `json:"ops"`
}

type txnAbortOut struct {
	Reason  string `json:"reason"`
	Group   uint32 `json:"group"`
	Op      *int   `json:"op,omitempty"`
	Blocker string `json:"blocker,omitempty"`
	Message string `json:"message"`
}

type txnOpOut struct {
	Op      string      `json:"op"`
	Group   string      `json:"group"`
	Present *bool       `json:"present,omitempty"`
	Value   *string     `json:"value,omitempty"`
	Entries []txnKVJSON `json:"entries,omitempty"`
	More    bool        `json:"more,omitempty"`
	Next    *string     `json:"next,omitempty"`
}

type txnKVJSON struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// jsonBytes renders bytes as a string: as is when valid UTF-8, else as a
// Go-quoted literal (never lossy).
func jsonBytes(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return quote(b)
}

func printTxnJSON(w io.Writer, m *oracle.Map, stmts []txnStatement, res *coord.Result) error {
	out := txnJSON{Outcome: "committed", ID: hex.EncodeToString(res.ID[:]), Kind: res.Kind.String(), Nonce: res.Nonce,
		Attempts: res.Attempts, LatencyMS: float64(res.Latency.Microseconds()) / 1000}
	for _, g := range res.Groups {
		out.Groups = append(out.Groups, uint32(g))
	}
	if !res.Committed {
		out.Outcome = "aborted"
		if ae := res.Abort; ae != nil {
			a := &txnAbortOut{Reason: ae.Reason.String(), Group: uint32(ae.Group), Message: abortText(stmts, res)}
			switch ae.Reason {
			case txn.ReasonCompare, txn.ReasonKeyExists, txn.ReasonNotFound, txn.ReasonMapChange:
				op := ae.Op
				a.Op = &op
			}
			if res.Blocker != nil {
				a.Blocker = hex.EncodeToString(res.Blocker[:])
			}
			out.Abort = a
		}
	}
	for i := range stmts {
		op := &stmts[i].op
		o := txnOpOut{Op: stmts[i].text, Group: groupOf(m, op, res.Groups)}
		if res.Committed {
			r := res.Ops[i]
			switch op.Kind {
			case txn.OpRead:
				present := r.Present
				o.Present = &present
				if present {
					v := jsonBytes(r.Value)
					o.Value = &v
				}
			case txn.OpReadRange:
				o.Entries = []txnKVJSON{}
				for _, kv := range r.Entries {
					o.Entries = append(o.Entries, txnKVJSON{Key: jsonBytes(kv.Key), Value: jsonBytes(kv.Value)})
				}
				if o.More = r.More; r.More {
					n := jsonBytes(r.Next)
					o.Next = &n
				}
			}
		}
		out.Ops = append(out.Ops, o)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
