package envelope

import (
	"bytes"
	"errors"
	"testing"
)

func TestCallsRoundTrip(t *testing.T) {
	in := [][]byte{{}, []byte("a"), bytes.Repeat([]byte("x"), 300), nil}
	out, err := DecodeCalls(EncodeCalls(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d calls, want %d", len(out), len(in))
	}
	for i := range in {
		if !bytes.Equal(in[i], out[i]) {
			t.Fatalf("call %d: %q != %q", i, out[i], in[i])
		}
	}
}

func TestResultsAreNotCalls(t *testing.T) {
	if _, err := DecodeCalls(EncodeResults([][]byte{[]byte("r")})); !errors.Is(err, ErrMalformed) {
		t.Fatalf("results decoded as calls: %v", err)
	}
}

func TestDecodeRejectsMalformedInput(t *testing.T) {
	good := EncodeCalls([][]byte{[]byte("abc"), []byte("de")})
	for name, b := range map[string][]byte{
		"empty":          {},
		"trailing bytes": append(append([]byte{}, good...), 0),
		"truncated":      good[:len(good)-1],
		"huge count":     {tagCalls, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"length overrun": {tagCalls, 1, 5, 'a'},
	} {
		if _, err := DecodeCalls(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzDecodeCalls: whatever the bytes, decoding never panics, and what
// decodes re-encodes to the same bytes.
func FuzzDecodeCalls(f *testing.F) {
	f.Add(EncodeCalls([][]byte{[]byte("abc"), nil}))
	f.Add([]byte{tagCalls, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		calls, err := DecodeCalls(b)
		if err != nil {
			return
		}
		if re := EncodeCalls(calls); !bytes.Equal(re, b) {
			t.Fatalf("re-encoding differs: %x vs %x", re, b)
		}
	})
}

// Outcomes round-trip, results without rejections decode from either
// encoding, and malformed outcome lists are refused.
func TestOutcomesRoundTripAndStrictness(t *testing.T) {
	results := [][]byte{[]byte("a"), nil, []byte("c")}
	rejected := []string{"", "call 1: bad", ""}
	b := EncodeOutcomes(results, rejected)
	vals, rej, err := DecodeOutcomes(b)
	if err != nil || string(vals[0]) != "a" || vals[1] != nil || string(vals[2]) != "c" || rej[1] != "call 1: bad" || rej[0] != "" {
		t.Fatalf("round trip: %q %q %v", vals, rej, err)
	}
	vals, rej, err = DecodeOutcomes(EncodeResults(results))
	if err != nil || len(vals) != 3 || rej[0] != "" || rej[1] != "" {
		t.Fatalf("plain results: %q %q %v", vals, rej, err)
	}
	for _, bad := range [][]byte{
		nil, {tagOutcomes}, {tagOutcomes, 1, 2, 0}, {tagOutcomes, 1, statusRejected, 0},
		append(EncodeOutcomes(results, rejected), 0), {tagOutcomes, 1, statusOK, 5, 'x'},
	} {
		if _, _, err := DecodeOutcomes(bad); err == nil {
			t.Errorf("DecodeOutcomes(%x) accepted a malformed list", bad)
		}
	}
}

// The outcome decoder reads replies from replicas: a Byzantine one may send
// anything. Whatever it accepts re-encodes to the same bytes (one encoding
// per outcome list).
func FuzzDecodeOutcomes(f *testing.F) {
	f.Add(EncodeOutcomes([][]byte{[]byte("a"), nil}, []string{"", "bad"}))
	f.Add(EncodeResults([][]byte{[]byte("x")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, rej, err := DecodeOutcomes(b)
		if err != nil {
			return
		}
		var re []byte
		if b[0] == tagResults {
			re = EncodeResults(vals)
		} else {
			re = EncodeOutcomes(vals, rej)
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoding differs: %x vs %x", re, b)
		}
	})
}

// EncodeExecuted places the executed calls' results between the rejected
// calls, and is EncodeResults when no call was rejected.
func TestEncodeExecutedPlacesResultsAroundRejections(t *testing.T) {
	if got, want := EncodeExecuted([][]byte{[]byte("a"), []byte("b")}, nil), EncodeResults([][]byte{[]byte("a"), []byte("b")}); !bytes.Equal(got, want) {
		t.Fatalf("no rejection: got %x, want EncodeResults %x", got, want)
	}
	if got, want := EncodeExecuted([][]byte{[]byte("a")}, []string{""}), EncodeResults([][]byte{[]byte("a")}); !bytes.Equal(got, want) {
		t.Fatalf("empty reasons: got %x, want EncodeResults %x", got, want)
	}
	b := EncodeExecuted([][]byte{[]byte("a"), []byte("c")}, []string{"", "bad", ""})
	vals, rejected, err := DecodeOutcomes(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 3 || string(vals[0]) != "a" || string(vals[2]) != "c" || rejected[1] != "bad" || rejected[0] != "" || rejected[2] != "" {
		t.Fatalf("got %q %q", vals, rejected)
	}
}
