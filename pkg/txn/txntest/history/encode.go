package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by Parse's errors.
var ErrSyntax = errors.New("history: syntax error")

// SyntaxError says where a history text is malformed.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("history: line %d: %s", e.Line, e.Msg) }

// Unwrap lets errors.Is(err, ErrSyntax) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// bareKey says whether a key can be written without quotes.
func bareKey(k string) bool {
	if k == "" || k == "nil" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !bareByte(k[i]) {
			return false
		}
	}
	return true
}

func bareByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '/' || c == '-'
}

func appendKey(b []byte, k string) []byte {
	if bareKey(k) {
		return append(b, k...)
	}
	return strconv.AppendQuote(b, k)
}

// AppendText appends the micro-op's text form: append(k,1), w(k,1), r(k),
// r(k)=nil, r(k)=1, r(k)=[1,2].
func (m MicroOp) AppendText(b []byte) []byte {
	b = append(b, m.Kind.String()...)
	b = append(b, '(')
	b = appendKey(b, m.Key)
	if m.IsWrite() {
		b = append(b, ',')
		b = strconv.AppendInt(b, m.Value, 10)
	}
	b = append(b, ')')
	if m.Kind != KindRead {
		return b
	}
	switch m.Result {
	case ResultNil:
		b = append(b, "=nil"...)
	case ResultValue:
		b = append(b, '=')
		b = strconv.AppendInt(b, m.Value, 10)
	case ResultList:
		b = append(b, "=["...)
		for i, v := range m.List {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, v, 10)
		}
		b = append(b, ']')
	}
	return b
}

func (m MicroOp) String() string { return string(m.AppendText(nil)) }

// AppendText appends the op's one-line text form (without a newline).
func (op Op) AppendText(b []byte) []byte {
	b = append(b, op.Outcome.String()...)
	b = append(b, " p"...)
	b = strconv.AppendInt(b, int64(op.Process), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, op.Invoke, 10)
	b = append(b, ' ')
	if op.Complete == Never {
		b = append(b, '-')
	} else {
		b = strconv.AppendInt(b, op.Complete, 10)
	}
	for _, m := range op.Txn {
		b = append(b, ' ')
		b = m.AppendText(b)
	}
	return b
}

func (op Op) String() string { return string(op.AppendText(nil)) }

// Encode writes the history, one op per line.
func Encode(w io.Writer, h History) error {
	var b []byte
	for _, op := range h {
		b = append(op.AppendText(b[:0]), '\n')
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("history: encode: %w", err)
		}
	}
	return nil
}

// String is the history's text encoding.
func (h History) String() string {
	var sb strings.Builder
	_ = Encode(&sb, h) // a strings.Builder never fails
	return sb.String()
}

// ParseString parses the text encoding.
func ParseString(s string) (History, error) { return Parse(strings.NewReader(s)) }

// Parse reads the text encoding (see the package comment) and validates
// each op's shape.
func Parse(r io.Reader) (History, error) {
	var h History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		op, err := ParseOp(text)
		if err != nil {
			var se *SyntaxError
			if errors.As(err, &se) {
				se.Line = line
				return nil, se
			}
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		h = append(h, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	return h, nil
}

// ParseOp parses one op line.
func ParseOp(text string) (Op, error) {
	p := parser{s: text}
	op, err := p.op()
	if err != nil {
		return Op{}, &SyntaxError{Msg: fmt.Sprintf("%s (at column %d)", err, p.i+1)}
	}
	if err := op.validate(); err != nil {
		return Op{}, err
	}
	return op, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// word returns the next run of non-space bytes.
func (p *parser) word() string {
	p.skipSpace()
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != '\t' {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) expect(c byte) error {
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q", c)
	}
	p.i++
	return nil
}

func (p *parser) int() (int64, error) {
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	v, err := strconv.ParseInt(p.s[start:p.i], 10, 64)
	if err != nil {
		p.i = start
		return 0, fmt.Errorf("expected an integer")
	}
	return v, nil
}

func (p *parser) op() (Op, error) {
	var op Op
	switch w := p.word(); w {
	case "ok":
		op.Outcome = OK
	case "fail":
		op.Outcome = Fail
	case "info":
		op.Outcome = Info
	default:
		return op, fmt.Errorf("unknown outcome %q", w)
	}
	w := p.word()
	if len(w) < 2 || w[0] != 'p' {
		return op, fmt.Errorf("expected a process p<n>, got %q", w)
	}
	proc, err := strconv.Atoi(w[1:])
	if err != nil {
		return op, fmt.Errorf("bad process %q", w)
	}
	op.Process = proc
	if op.Invoke, err = strconv.ParseInt(p.word(), 10, 64); err != nil {
		return op, fmt.Errorf("bad invocation time")
	}
	switch w := p.word(); w {
	case "-":
		op.Complete = Never
	default:
		if op.Complete, err = strconv.ParseInt(w, 10, 64); err != nil {
			return op, fmt.Errorf("bad completion time %q", w)
		}
	}
	for {
		p.skipSpace()
		if p.i >= len(p.s) {
			return op, nil
		}
		m, err := p.microOp()
		if err != nil {
			return op, err
		}
		if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != '\t' {
			return op, fmt.Errorf("expected a space after a micro-op")
		}
		op.Txn = append(op.Txn, m)
	}
}

func (p *parser) key() (string, error) {
	if p.i < len(p.s) && p.s[p.i] == '"' {
		q, err := strconv.QuotedPrefix(p.s[p.i:])
		if err != nil {
			return "", fmt.Errorf("bad quoted key")
		}
		p.i += len(q)
		k, err := strconv.Unquote(q)
		if err != nil {
			return "", fmt.Errorf("bad quoted key")
		}
		return k, nil
	}
	start := p.i
	for p.i < len(p.s) && bareByte(p.s[p.i]) {
		p.i++
	}
	if start == p.i {
		return "", fmt.Errorf("expected a key")
	}
	return p.s[start:p.i], nil
}

func (p *parser) microOp() (MicroOp, error) {
	var m MicroOp
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= 'a' && p.s[p.i] <= 'z' {
		p.i++
	}
	switch name := p.s[start:p.i]; name {
	case "append":
		m.Kind = KindAppend
	case "w":
		m.Kind = KindWrite
	case "r":
		m.Kind = KindRead
	default:
		p.i = start
		return m, fmt.Errorf("unknown micro-op %q", name)
	}
	if err := p.expect('('); err != nil {
		return m, err
	}
	var err error
	if m.Key, err = p.key(); err != nil {
		return m, err
	}
	if m.IsWrite() {
		if err := p.expect(','); err != nil {
			return m, err
		}
		if m.Value, err = p.int(); err != nil {
			return m, err
		}
	}
	if err := p.expect(')'); err != nil {
		return m, err
	}
	if m.Kind != KindRead || p.i >= len(p.s) || p.s[p.i] != '=' {
		return m, nil
	}
	p.i++
	switch {
	case strings.HasPrefix(p.s[p.i:], "nil"):
		p.i += 3
		m.Result = ResultNil
	case p.i < len(p.s) && p.s[p.i] == '[':
		p.i++
		m.Result, m.List = ResultList, []int64{}
		for p.i < len(p.s) && p.s[p.i] != ']' {
			if len(m.List) > 0 {
				if err := p.expect(','); err != nil {
					return m, err
				}
			}
			v, err := p.int()
			if err != nil {
				return m, err
			}
			m.List = append(m.List, v)
		}
		if err := p.expect(']'); err != nil {
			return m, err
		}
	default:
		if m.Value, err = p.int(); err != nil {
			return m, err
		}
		m.Result = ResultValue
	}
	return m, nil
}

// WriteFile saves a history in its text encoding, with an optional comment
// header (each line prefixed with "# "): a failing history saved this way
// under testdata/ replays with ReadFile.
func WriteFile(path string, h History, comment string) error {
	var sb strings.Builder
	if comment != "" {
		for _, line := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
			sb.WriteString("# " + line + "\n")
		}
	}
	if err := Encode(&sb, h); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// ReadFile loads a history saved by WriteFile (or written by hand).
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	h, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
