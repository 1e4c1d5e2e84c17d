package host

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/storage"
)

func openLogAppEngine(t *testing.T) *storage.Engine {
	t.Helper()
	e, err := storage.Open("logapp", storage.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// execLog runs calls as one batch through LogApp and commits it.
func execLog(t *testing.T, e *storage.Engine, calls ...[]byte) [][]byte {
	t.Helper()
	b := e.NewIndexedBatch()
	defer b.Close()
	cs := make([]Call, len(calls))
	for i, c := range calls {
		require.NoError(t, LogApp{}.Validate(c), "call %q", c)
		cs[i] = Call{Client: "c", Timestamp: 1, Index: i, Payload: c}
	}
	res, err := LogApp{}.Execute(1, cs, b)
	require.NoError(t, err)
	require.Len(t, res, len(calls))
	require.NoError(t, e.Commit(b, false))
	return res
}

func logLen(t *testing.T, res []byte) uint64 {
	t.Helper()
	n, err := DecodeLogLength(res)
	require.NoError(t, err)
	return n
}

func TestLogAppAppendReturnsNewLengthAndReadReturnsValuesInOrder(t *testing.T) {
	e := openLogAppEngine(t)
	res := execLog(t, e, LogAppend("k", []byte("a")), LogAppend("k", []byte("b c")), LogLen("k"))
	require.Equal(t, uint64(1), logLen(t, res[0]))
	require.Equal(t, uint64(2), logLen(t, res[1]), "a second append in the same batch sees the first")
	require.Equal(t, uint64(2), logLen(t, res[2]))

	res = execLog(t, e, LogAppend("k", []byte{0, 0xff, '\n'}), LogRead("k"))
	require.Equal(t, uint64(3), logLen(t, res[0]), "an append in a later batch sees the committed log")
	entries, err := DecodeLogEntries(res[1])
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("a"), []byte("b c"), {0, 0xff, '\n'}}, entries)
}

func TestLogAppKeepsLogsOfDifferentKeysApart(t *testing.T) {
	e := openLogAppEngine(t)
	// "a" and "a\x01..." would collide if entries were stored under key+index.
	execLog(t, e, LogAppend("a", []byte("1")), LogAppend("a\x7e", []byte("2")), LogAppend("ab", []byte("3")))
	res := execLog(t, e, LogRead("a"), LogRead("a\x7e"), LogRead("ab"), LogRead("missing"), LogLen("missing"))
	for i, want := range [][][]byte{{[]byte("1")}, {[]byte("2")}, {[]byte("3")}, {}} {
		got, err := DecodeLogEntries(res[i])
		require.NoError(t, err)
		require.Equal(t, want, got, "read %d", i)
	}
	require.Equal(t, uint64(0), logLen(t, res[4]))
}

func TestLogAppAcceptsEmptyValues(t *testing.T) {
	e := openLogAppEngine(t)
	res := execLog(t, e, LogAppend("k", nil), LogRead("k"))
	require.Equal(t, uint64(1), logLen(t, res[0]))
	got, err := DecodeLogEntries(res[1])
	require.NoError(t, err)
	require.Equal(t, [][]byte{{}}, got)
}

func TestLogAppIsDeterministicAcrossReplicas(t *testing.T) {
	calls := [][]byte{LogAppend("x", []byte("1")), LogAppend("y", []byte("2")), LogAppend("x", []byte("3")), LogRead("x"), LogLen("y")}
	var sums [][]byte
	var results [][][]byte
	for range 2 {
		e := openLogAppEngine(t)
		results = append(results, execLog(t, e, calls...))
		sum, err := e.Sum()
		require.NoError(t, err)
		sums = append(sums, sum[:])
	}
	require.Equal(t, results[0], results[1])
	require.Equal(t, sums[0], sums[1], "the same calls give the same state digest")
}

func TestLogAppValidateRejectsMalformedCalls(t *testing.T) {
	for name, call := range map[string][]byte{
		"empty":            {},
		"unknown command":  []byte("delete k"),
		"no key":           []byte("read"),
		"empty key":        []byte("read "),
		"append no value":  []byte("append k"),
		"append empty key": []byte("append  v"),
		"space in key":     []byte("len a b"),
		"control in key":   []byte("read a\x00b"),
		"key too long":     []byte("read " + strings.Repeat("k", MaxLogKey+1)),
		"value too long":   LogAppend("k", make([]byte, MaxLogValue+1)),
		"upper case op":    []byte("APPEND k v"),
	} {
		t.Run(name, func(t *testing.T) {
			err := LogApp{}.Validate(call)
			require.ErrorIs(t, err, ErrLogCall)
		})
	}
}

func TestLogAppValidateErrorsNameTheProblem(t *testing.T) {
	require.ErrorContains(t, LogApp{}.Validate([]byte("delete k")), `unknown command "delete"`)
	require.ErrorContains(t, LogApp{}.Validate([]byte("append k")), "needs a key and a value")
	require.ErrorContains(t, LogApp{}.Validate([]byte("read a b")), "space or control character")
}

func TestLogAppAnswersAMalformedCallWithItsErrorWithoutStopping(t *testing.T) {
	e := openLogAppEngine(t)
	b := e.NewIndexedBatch()
	defer b.Close()
	res, err := LogApp{}.Execute(1, []Call{{Payload: []byte("bogus")}, {Payload: LogAppend("k", []byte("v"))}}, b)
	require.NoError(t, err)
	require.Contains(t, string(res[0]), "unknown command")
	require.Equal(t, uint64(1), logLen(t, res[1]))
}

func TestLogAppRefusesAReadLargerThanTheLimit(t *testing.T) {
	e := openLogAppEngine(t)
	value := bytes.Repeat([]byte("v"), MaxLogValue)
	var calls [][]byte
	for range MaxLogRead/MaxLogValue + 1 {
		calls = append(calls, LogAppend("big", value))
	}
	execLog(t, e, calls...)
	res := execLog(t, e, LogRead("big"))
	_, err := DecodeLogEntries(res[0])
	require.ErrorIs(t, err, ErrLogTooLong)
}

func TestDecodeLogEntriesRejectsMalformedResults(t *testing.T) {
	for i, b := range [][]byte{nil, {2, 1, 'a'}, {1, 5, 'a'}, {1, 1, 'a', 'b'}, {0x80}} {
		_, err := DecodeLogEntries(b)
		require.Error(t, err, "result %d %q", i, b)
		require.False(t, errors.Is(err, ErrLogTooLong))
	}
	_, err := DecodeLogLength([]byte("short"))
	require.Error(t, err)
}

func ExampleLogAppend() {
	fmt.Printf("%q %q %q\n", LogAppend("k", []byte("v")), LogRead("k"), LogLen("k"))
	// Output: "append k v" "read k" "len k"
}
