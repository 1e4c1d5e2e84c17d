package host

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// LogApp is a test application: a set of append-only logs, one per key. It
// lets process-level tests check exactly-once execution — each client call
// appends a unique token, and afterwards every token a client saw accepted
// must be in the log exactly once — and gives `augustus demo` something to
// show before the SQL layer exists.
//
// A call is one command; key is 1..MaxLogKey bytes without spaces or
// control characters, value any bytes (up to MaxLogValue):
//
//	append <key> <value>   append value to key's log; result: the new length
//	read <key>             result: every value in the log, in order
//	len <key>              result: the length of the log
//
// Lengths are 8-byte big-endian integers (DecodeLogLength); a read result is
// a uvarint count followed by each value as a uvarint length and its bytes
// (DecodeLogEntries). Build calls with LogAppend, LogRead and LogLen.
//
// Storage, in UserData (so the logs are digested and move with state
// transfer):
//
//	'n' key                       the log's length (8 bytes)
//	'e' uvarint(len(key)) key i   entry i, i an 8-byte big-endian index
//
// The length prefix keeps the entries of "a" apart from those of "a\x00…".
type LogApp struct{}

// Limits of LogApp calls.
const (
	MaxLogKey   = 256
	MaxLogValue = 1 << 20
	// MaxLogRead bounds the bytes a read returns; a longer log is refused
	// with ErrLogTooLong in the result, deterministically.
	MaxLogRead = 16 << 20
)

// Errors of LogApp.Validate.
var (
	// ErrLogCall is wrapped by every malformed call.
	ErrLogCall = errors.New("logapp: malformed call")
)

// errLogTooLongResult is the result of a read whose log exceeds MaxLogRead.
// It cannot be a list of entries: read as one, it claims 14975 entries in 7
// bytes.
var errLogTooLongResult = []byte("\xfftoo long")

// ErrLogTooLong is returned by DecodeLogEntries for the result of a read of a
// log larger than MaxLogRead.
var ErrLogTooLong = errors.New("logapp: log too long to read in one call")

const (
	logOpAppend = "append"
	logOpRead   = "read"
	logOpLen    = "len"
)

// LogAppend returns the call that appends value to key's log.
func LogAppend(key string, value []byte) []byte {
	b := make([]byte, 0, len(logOpAppend)+len(key)+len(value)+2)
	b = append(b, logOpAppend...)
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, ' ')
	return append(b, value...)
}

// LogRead returns the call that reads key's log.
func LogRead(key string) []byte { return []byte(logOpRead + " " + key) }

// LogLen returns the call that returns the length of key's log.
func LogLen(key string) []byte { return []byte(logOpLen + " " + key) }

// logCall is a parsed call.
type logCall struct {
	op    string
	key   []byte
	value []byte
}

// parseLogCall parses and checks a call. The key and value alias call.
func parseLogCall(call []byte) (logCall, error) {
	op, rest, ok := bytes.Cut(call, []byte{' '})
	if !ok {
		switch string(op) {
		case logOpAppend, logOpRead, logOpLen:
			return logCall{}, fmt.Errorf("%w: %q needs a key", ErrLogCall, op)
		}
		return logCall{}, fmt.Errorf("%w: unknown command %q (want append, read or len)", ErrLogCall, truncate(op))
	}
	var c logCall
	switch string(op) {
	case logOpAppend:
		key, value, ok := bytes.Cut(rest, []byte{' '})
		if !ok {
			return logCall{}, fmt.Errorf("%w: append needs a key and a value", ErrLogCall)
		}
		c = logCall{op: logOpAppend, key: key, value: value}
	case logOpRead, logOpLen:
		c = logCall{op: string(op), key: rest}
	default:
		return logCall{}, fmt.Errorf("%w: unknown command %q (want append, read or len)", ErrLogCall, truncate(op))
	}
	if err := checkLogKey(c.key); err != nil {
		return logCall{}, err
	}
	if len(c.value) > MaxLogValue {
		return logCall{}, fmt.Errorf("%w: value of %d bytes exceeds %d", ErrLogCall, len(c.value), MaxLogValue)
	}
	return c, nil
}

func checkLogKey(key []byte) error {
	switch {
	case len(key) == 0:
		return fmt.Errorf("%w: empty key", ErrLogCall)
	case len(key) > MaxLogKey:
		return fmt.Errorf("%w: key of %d bytes exceeds %d", ErrLogCall, len(key), MaxLogKey)
	}
	for _, b := range key {
		if b <= ' ' || b == 0x7f {
			return fmt.Errorf("%w: key %q contains a space or control character", ErrLogCall, truncate(key))
		}
	}
	return nil
}

func truncate(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// Validate implements Application: it parses the call.
func (LogApp) Validate(call []byte) error {
	_, err := parseLogCall(call)
	return err
}

// Execute implements Application.
func (LogApp) Execute(_ bft.SeqNum, calls []Call, w *storage.Batch) ([][]byte, error) {
	out := make([][]byte, len(calls))
	for i, call := range calls {
		c, err := parseLogCall(call.Payload)
		if err != nil {
			// Validate ran before the batch was accepted (N2); every correct
			// replica sees the same bytes, so answering with the error keeps
			// execution deterministic.
			out[i] = []byte(err.Error())
			continue
		}
		n, err := logLength(w, c.key)
		if err != nil {
			return nil, err
		}
		switch c.op {
		case logOpAppend:
			if err := w.Set(storage.UserData, logEntryKey(c.key, n), c.value); err != nil {
				return nil, fmt.Errorf("logapp: append: %w", err)
			}
			n++
			if err := w.Set(storage.UserData, logLenKey(c.key), binary.BigEndian.AppendUint64(nil, n)); err != nil {
				return nil, fmt.Errorf("logapp: append: %w", err)
			}
			out[i] = binary.BigEndian.AppendUint64(nil, n)
		case logOpLen:
			out[i] = binary.BigEndian.AppendUint64(nil, n)
		case logOpRead:
			if out[i], err = readLog(w, c.key, n); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Restored implements Application: LogApp keeps nothing in memory.
func (LogApp) Restored(Reader) error { return nil }

func logLenKey(key []byte) []byte { return append([]byte{'n'}, key...) }

func logEntryPrefix(key []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+8)
	b = append(b, 'e')
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(b, key...)
}

func logEntryKey(key []byte, i uint64) []byte {
	return binary.BigEndian.AppendUint64(logEntryPrefix(key), i)
}

func logLength(r Reader, key []byte) (uint64, error) {
	v, err := r.Get(storage.UserData, logLenKey(key))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("logapp: length of %q: %w", truncate(key), err)
	case len(v) != 8:
		return 0, fmt.Errorf("logapp: length of %q: %d bytes, want 8", truncate(key), len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func readLog(r Reader, key []byte, n uint64) ([]byte, error) {
	out := binary.AppendUvarint(nil, n)
	var got uint64
	err := r.Scan(storage.UserData, logEntryKey(key, 0), logEntryKey(key, n), 0, func(_, value []byte) error {
		if len(out)+binary.MaxVarintLen64+len(value) > MaxLogRead {
			return ErrLogTooLong
		}
		out = binary.AppendUvarint(out, uint64(len(value)))
		out = append(out, value...)
		got++
		return nil
	})
	switch {
	case errors.Is(err, ErrLogTooLong):
		return append([]byte(nil), errLogTooLongResult...), nil
	case err != nil:
		return nil, fmt.Errorf("logapp: read %q: %w", truncate(key), err)
	case got != n:
		return nil, fmt.Errorf("logapp: read %q: %d entries stored, length says %d", truncate(key), got, n)
	}
	return out, nil
}

// DecodeLogLength decodes the result of an append or len call.
func DecodeLogLength(result []byte) (uint64, error) {
	if len(result) != 8 {
		return 0, fmt.Errorf("logapp: length result of %d bytes, want 8: %q", len(result), truncate(result))
	}
	return binary.BigEndian.Uint64(result), nil
}

// DecodeLogEntries decodes the result of a read call; the values alias
// result.
func DecodeLogEntries(result []byte) ([][]byte, error) {
	if bytes.Equal(result, errLogTooLongResult) {
		return nil, ErrLogTooLong
	}
	n, k := binary.Uvarint(result)
	if k <= 0 || n > uint64(len(result)) {
		return nil, fmt.Errorf("logapp: read result: bad count: %q", truncate(result))
	}
	b := result[k:]
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("logapp: read result: entry %d overruns the result", i)
		}
		out = append(out, b[k:k+int(l):k+int(l)])
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("logapp: read result: %d trailing bytes", len(b))
	}
	return out, nil
}

// ReadLog returns the entries of key's log in r, as a read call would
// (tests and the simulator's durability checker read stores directly).
func ReadLog(r Reader, key string) ([][]byte, error) {
	n, err := logLength(r, []byte(key))
	if err != nil {
		return nil, err
	}
	b, err := readLog(r, []byte(key), n)
	if err != nil {
		return nil, err
	}
	return DecodeLogEntries(b)
}
