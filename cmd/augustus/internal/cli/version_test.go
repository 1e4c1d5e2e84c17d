package cli

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionPrintsOneLineWithVersionAndGoRuntime(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"version"}, &out, &errb), errb.String())
	require.True(t, strings.HasPrefix(out.String(), "augustus "+Version), out.String())
	require.Contains(t, out.String(), runtime.Version())
	require.Equal(t, 1, strings.Count(out.String(), "\n"), "one line")
	require.NotContains(t, out.String(), "unknown")
}

// The commit appears once: a version from `git describe` of an untagged
// tree is the commit, and "commit unknown" beside it was what users saw.
func TestVersionLineNamesTheCommitOnce(t *testing.T) {
	goLine := runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "25761f2c3b1a9d8e7f6a5b4c3d2e1f0a9b8c7d6e"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, tc := range []struct {
		name, version, commit string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"tagged release", "v0.3.0", "25761f2c3b1a", nil, "augustus v0.3.0 (commit 25761f2c3b1a, " + goLine + ")"},
		{"describe is the hash", "25761f2-dirty", "25761f2c3b1a", nil, "augustus 25761f2-dirty (" + goLine + ")"},
		{"describe names the hash", "v0.3.0-4-g25761f2", "25761f2c3b1a", nil, "augustus v0.3.0-4-g25761f2 (" + goLine + ")"},
		{"describe, no commit flag, no VCS stamp", "25761f2-dirty", "", nil, "augustus 25761f2-dirty (" + goLine + ")"},
		{"go build in a checkout", "dev", "", stamped, "augustus dev (commit 25761f2c3b1a-dirty, " + goLine + ")"},
		{"nothing known", "dev", "", &debug.BuildInfo{}, "augustus dev (commit not recorded in this build, " + goLine + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, versionLine(tc.version, tc.commit, tc.info))
		})
	}
}

func TestUnknownCommandFails(t *testing.T) {
	var out, errb bytes.Buffer
	require.NotEqual(t, 0, Main([]string{"no-such-command"}, &out, &errb))
	require.Contains(t, errb.String(), "unknown command")
}
