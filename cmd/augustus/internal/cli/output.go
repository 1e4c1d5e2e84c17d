package cli

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// prefixWriter writes each complete line to w with a prefix, under a mutex
// shared by all the writers of w, so lines of different children never mix.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		p.emit(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > 64<<10 { // a very long line: pass it on in pieces
		p.emit(append(p.buf, '\n'))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// Flush writes what is left of an unterminated last line.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

func (p *prefixWriter) emit(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.w, p.prefix)
	_, _ = p.w.Write(line)
}

// tailWriter remembers the last non-empty line written to it: the line in
// which a replica that cannot start says why.
type tailWriter struct {
	mu      sync.Mutex
	partial []byte
	last    string
}

// maxTailLine bounds what a tailWriter keeps of one line.
const maxTailLine = 4 << 10

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for rest := b; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.partial = appendBounded(t.partial, rest)
			break
		}
		t.partial = appendBounded(t.partial, rest[:i])
		if line := strings.TrimSpace(string(t.partial)); line != "" {
			t.last = line
		}
		t.partial = t.partial[:0]
		rest = rest[i+1:]
	}
	return len(b), nil
}

// Last returns the last non-empty line, counting an unterminated one.
func (t *tailWriter) Last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if line := strings.TrimSpace(string(t.partial)); line != "" {
		return line
	}
	return t.last
}

func appendBounded(dst, b []byte) []byte {
	if room := maxTailLine - len(dst); len(b) > room {
		b = b[:max(room, 0)]
	}
	return append(dst, b...)
}
