package history

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParseReadsEveryMicroOpForm(t *testing.T) {
	h, err := ParseString(`
# a comment, then a blank line

ok p3 100 250 append(x,1) r(x)=[1,2] w(y,3) r(y)=nil r(z)=5 r(e)=[]
info p1 20 - append("a key",-5)
fail p2 30 40 w(y,7) r(y)
`)
	require.NoError(t, err)
	require.Equal(t, History{
		{Process: 3, Invoke: 100, Complete: 250, Outcome: OK, Txn: []MicroOp{
			Append("x", 1), ReadList("x", 1, 2), Write("y", 3), ReadNil("y"), ReadValue("z", 5), ReadList("e")}},
		{Process: 1, Invoke: 20, Complete: Never, Outcome: Info, Txn: []MicroOp{Append("a key", -5)}},
		{Process: 2, Invoke: 30, Complete: 40, Outcome: Fail, Txn: []MicroOp{Write("y", 7), Read("y")}},
	}, h)
}

func TestParseRejectsMalformedLines(t *testing.T) {
	for _, line := range []string{
		"done p1 0 1 r(x)",                    // outcome
		"ok 1 0 1 r(x)",                       // process
		"ok p1 a 1 r(x)",                      // invocation
		"ok p1 0 b r(x)",                      // completion
		"ok p1 0 - r(x)=1",                    // OK without completion
		"ok p1 5 1 r(x)=1",                    // completes before invocation
		"ok p1 0 1 cas(x,1)",                  // unknown micro-op
		"ok p1 0 1 append(x)",                 // append without value
		"ok p1 0 1 append(x,1)=[1]",           // write with a result: trailing garbage
		"ok p1 0 1 r(x)=[1,,2]",               // list syntax
		"ok p1 0 1 r(x)=[1",                   // unterminated list
		"ok p1 0 1 r(\"x)=1",                  // unterminated quote
		"ok p1 0 1 r(x)=1r(y)=2",              // missing separator
		"ok p1 0 1 r(x)=99999999999999999999", // overflow
	} {
		_, err := ParseString(line)
		require.Error(t, err, line)
	}
	_, err := ParseString("ok p1 0 1 r(x)=1\nok p1 0 1 bogus(x)")
	require.ErrorIs(t, err, ErrSyntax)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 2, se.Line)
}

// genKey draws keys that need quoting as well as bare ones.
func genKey() *rapid.Generator[string] {
	return rapid.OneOf(rapid.SampledFrom([]string{"x", "y", "k-1", "a/b:c.d_e", "nil", ""}), rapid.String())
}

func genMicroOp(outcome Outcome) *rapid.Generator[MicroOp] {
	return rapid.Custom(func(t *rapid.T) MicroOp {
		k := genKey().Draw(t, "key")
		v := rapid.Int64().Draw(t, "v")
		switch rapid.IntRange(0, 5).Draw(t, "form") {
		case 0:
			return Append(k, v)
		case 1:
			return Write(k, v)
		case 2:
			return Read(k)
		}
		if outcome != OK {
			return Read(k)
		}
		switch rapid.IntRange(0, 2).Draw(t, "result") {
		case 0:
			return ReadNil(k)
		case 1:
			return ReadValue(k, v)
		}
		return ReadList(k, rapid.SliceOf(rapid.Int64()).Draw(t, "list")...)
	})
}

func genHistory() *rapid.Generator[History] {
	return rapid.Custom(func(t *rapid.T) History {
		n := rapid.IntRange(0, 8).Draw(t, "ops")
		h := make(History, n)
		for i := range h {
			o := rapid.SampledFrom([]Outcome{OK, Fail, Info}).Draw(t, "outcome")
			inv := rapid.Int64Range(-1000, 1000).Draw(t, "invoke")
			c := inv + rapid.Int64Range(0, 1000).Draw(t, "span")
			if o == Info && rapid.Bool().Draw(t, "never") {
				c = Never
			}
			h[i] = Op{Process: rapid.IntRange(0, 100).Draw(t, "p"), Invoke: inv, Complete: c, Outcome: o,
				Txn: rapid.SliceOfN(genMicroOp(o), 0, 5).Draw(t, "txn")}
		}
		return h
	})
}

func TestTextEncodingRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHistory().Draw(t, "h")
		require.NoError(t, h.Validate())
		got, err := ParseString(h.String())
		require.NoError(t, err, h.String())
		require.Len(t, got, len(h))
		for i := range h {
			require.Equal(t, h[i].String(), got[i].String())
			require.Equal(t, len(h[i].Txn), len(got[i].Txn))
			for j := range h[i].Txn {
				require.True(t, h[i].Txn[j].Equal(got[i].Txn[j]), "%s vs %s", h[i].Txn[j], got[i].Txn[j])
			}
		}
	})
}

// FuzzParse: whatever parses re-encodes to text that parses to the same
// history (the text form is canonical).
func FuzzParse(f *testing.F) {
	f.Add("ok p3 100 250 append(x,1) r(x)=[1,2] w(y,3) r(y)=nil r(z)=5\ninfo p1 20 - append(\"k\\x00\",5)")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseString(s)
		if err != nil {
			return
		}
		enc := h.String()
		h2, err := ParseString(enc)
		require.NoError(t, err, enc)
		require.Equal(t, enc, h2.String())
	})
}

func TestRecorderRecordsConcurrentClients(t *testing.T) {
	var clock atomic.Int64
	r := NewRecorder(func() int64 { return clock.Add(1) })
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				v := int64(p*1000 + i)
				h := r.Invoke(p, Append("x", v), Read("x"))
				require.NoError(t, r.Complete(h, OK, []MicroOp{Append("x", v), ReadList("x", v)}))
			}
		}()
	}
	wg.Wait()
	h := r.History()
	require.Len(t, h, 400)
	require.NoError(t, h.Validate())
	for i, op := range h {
		require.Equal(t, OK, op.Outcome)
		require.Less(t, op.Invoke, op.Complete)
		if i > 0 {
			require.Less(t, h[i-1].Invoke, op.Invoke, "history is in invocation order")
		}
	}
}

func TestRecorderKeepsPendingOpsAsInfo(t *testing.T) {
	now := int64(0)
	r := NewRecorder(func() int64 { now += 10; return now })
	a := r.Invoke(1, Write("x", 1), Read("y"))
	b := r.Invoke(2, Read("x"))
	c := r.Invoke(3, Write("z", 9))
	require.NoError(t, r.Complete(a, Fail, nil))
	require.NoError(t, r.Complete(b, OK, []MicroOp{ReadValue("x", 4)}))
	_ = c
	require.Equal(t, strings.TrimSpace(`
fail p1 10 40 w(x,1) r(y)
ok p2 20 50 r(x)=4
info p3 30 - w(z,9)`), strings.TrimSpace(r.History().String()))
}

func TestRecorderRejectsMismatchedCompletions(t *testing.T) {
	r := NewRecorder(func() int64 { return 0 })
	h := r.Invoke(1, Write("x", 1), Read("y"))
	require.ErrorIs(t, r.Complete(h, OK, []MicroOp{Write("x", 1)}), ErrMismatch)
	require.ErrorIs(t, r.Complete(h, OK, []MicroOp{Write("x", 2), ReadNil("y")}), ErrMismatch)
	require.ErrorIs(t, r.Complete(h, OK, []MicroOp{Write("x", 1), Read("y")}), ErrMismatch, "OK reads need results")
	require.ErrorIs(t, r.Complete(h, OK, []MicroOp{Write("x", 1), ReadNil("z")}), ErrMismatch)
	require.ErrorIs(t, r.Complete(Handle{}, OK, nil), ErrBadHandle)
	require.NoError(t, r.Complete(h, OK, []MicroOp{Write("x", 1), ReadNil("y")}))
	require.ErrorIs(t, r.Complete(h, Info, nil), ErrCompleted)
}

func TestRecorderDropsReadsOfUncommittedOps(t *testing.T) {
	r := NewRecorder(func() int64 { return 0 })
	h := r.Invoke(1, ReadValue("y", 3)) // a result passed at invocation is dropped too
	require.NoError(t, r.Complete(h, Info, []MicroOp{ReadValue("y", 3)}))
	require.Equal(t, "info p1 0 0 r(y)", r.History()[0].String())
}

func TestValidateRejectsMalformedOps(t *testing.T) {
	for _, op := range []Op{
		{Outcome: 0},
		{Outcome: OK, Invoke: 2, Complete: 1},
		{Outcome: Fail, Complete: Never},
		{Outcome: OK, Txn: []MicroOp{{Kind: 9}}},
		{Outcome: OK, Txn: []MicroOp{{Kind: KindWrite, Result: ResultValue}}},
		{Outcome: OK, Txn: []MicroOp{{Kind: KindRead, Result: ResultList}}},
		{Outcome: OK, Txn: []MicroOp{{Kind: KindRead, Result: ResultNil, Value: 3}}},
		{Outcome: OK, Txn: []MicroOp{{Kind: KindRead, Result: 7}}},
	} {
		require.ErrorIs(t, History{op}.Validate(), ErrInvalid, "%+v", op)
	}
}

func TestWriteFileReplaysWithReadFile(t *testing.T) {
	h := History{
		{Process: 1, Invoke: 0, Complete: 10, Outcome: OK, Txn: []MicroOp{Append("x", 1), ReadList("x", 1)}},
		{Process: 2, Invoke: 5, Complete: Never, Outcome: Info, Txn: []MicroOp{Write("a b", 3)}},
	}
	path := t.TempDir() + "/h.txt"
	require.NoError(t, WriteFile(path, h, "seed 42\nfound G1c"))
	got, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, h, got)
	_, err = ReadFile(path + ".missing")
	require.Error(t, err)
}
