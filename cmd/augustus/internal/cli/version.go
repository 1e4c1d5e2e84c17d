package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version and Commit are set at build time (make build):
// -ldflags "-X ...cli.Version=$(git describe ...) -X ...cli.Commit=$(git rev-parse ...)".
var (
	Version = "dev"
	Commit  = ""
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Long: `Print one line: the version, the commit it was built from, and the Go
toolchain and platform. The commit comes from the build (make build sets it),
else from the VCS information Go stamps into binaries built in a checkout.`,
		Example: "  augustus version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			fmt.Fprintln(cmd.OutOrStdout(), versionLine(Version, Commit, info))
			return nil
		},
	}
}

// versionLine is what `augustus version` prints: the version, then the
// commit once — not at all if the version already names it (git describe
// of an untagged tree is the short hash) — then the toolchain.
func versionLine(version, commit string, info *debug.BuildInfo) string {
	modified := false
	if commit == "" && info != nil {
		// Fallback: the VCS stamp of `go build` in a checkout.
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var parts []string
	if commit != "" {
		short := commit[:min(len(commit), 12)]
		if !strings.Contains(version, short[:min(len(short), 7)]) {
			if modified {
				short += "-dirty"
			}
			parts = append(parts, "commit "+short)
		}
	} else if !strings.ContainsAny(version, "0123456789") {
		// A version that names no commit ("dev") and no commit known.
		parts = append(parts, "commit not recorded in this build")
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("augustus %s (%s)", version, strings.Join(parts, ", "))
}
