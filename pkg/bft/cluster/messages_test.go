package cluster

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// prefixRE finds the package prefix where a message or a wrapper starts.
var prefixRE = regexp.MustCompile(`(^|: )cluster: `)

// An error of this package says "cluster:" once and names the file once,
// however many layers wrapped it: "cluster: load …: cluster: invalid
// cluster" was the message a user saw.
func TestErrorsNameThePackageAndTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	once := func(t *testing.T, err error, wantIs error, wantIn ...string) {
		t.Helper()
		require.ErrorIs(t, err, wantIs)
		msg := err.Error()
		require.Len(t, prefixRE.FindAllString(msg, -1), 1, msg)
		for _, w := range wantIn {
			require.Equal(t, 1, strings.Count(msg, w), "%q in %s", w, msg)
		}
	}

	require.NoError(t, os.WriteFile(path, []byte("{\n  \"f\": one\n}"), 0o644))
	_, err := Load(path)
	once(t, err, ErrInvalid, path, "line 2")
	var syn *json.SyntaxError
	require.ErrorAs(t, err, &syn, "the JSON error stays in the chain")

	c := validCluster(t)
	c.F = 2
	data, err := json.Marshal(c)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Load(path)
	once(t, err, ErrGroupSize, path)

	require.Error(t, c.Save(filepath.Join(dir, "other.json")))
	once(t, c.Save(filepath.Join(dir, "other.json")), ErrGroupSize, "other.json")

	opts := DefaultGenerateOptions(filepath.Join(dir, "gen"))
	opts.F = -1
	_, err = Generate(opts)
	once(t, err, ErrBadParameter, "f=-1")
}

// A problem found by another error keeps that error in its chain.
func TestValidationProblemsKeepTheirCause(t *testing.T) {
	c := validCluster(t)
	c.Groups[0].Replicas[0].PeerAddr = "nope"
	err := c.Validate()
	require.ErrorIs(t, err, ErrBadAddress)
	var addrErr *net.AddrError
	require.ErrorAs(t, err, &addrErr)
}
