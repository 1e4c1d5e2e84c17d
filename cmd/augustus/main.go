// Command augustus is the single binary of Augustus: replicas, cluster tooling,
// benchmarks and (in later layers) the SQL gateway and shell.
package main

import (
	"os"

	"github.com/augustus-db/augustus/cmd/augustus/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
