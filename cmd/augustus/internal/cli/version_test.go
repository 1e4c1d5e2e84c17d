package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionPrintsVersionAndGoRuntime(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "augustus "+Version) || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("unexpected version output %q", out.String())
	}
}

func TestUnknownCommandFails(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"no-such-command"}, &out, &errb); code == 0 {
		t.Fatalf("unknown command succeeded")
	}
	if !strings.Contains(errb.String(), "unknown command") {
		t.Fatalf("stderr %q does not name the problem", errb.String())
	}
}
