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
