package cli

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
	"github.com/augustus-db/augustus/pkg/storage"
)

// editClusterFile rewrites cluster.json as generic JSON, bypassing
// validation, so tests can write the broken files users do.
func editClusterFile(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, cluster.FileName)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	data, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func replicaField(m map[string]any, group, index int) map[string]any {
	return m["groups"].([]any)[group].(map[string]any)["replicas"].([]any)[index].(map[string]any)
}

func TestReplicaStartupErrorsAreClear(t *testing.T) {
	for name, tc := range map[string]struct {
		setup func(t *testing.T, dir string)
		args  []string
		want  []string
	}{
		"no cluster file": {
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, cluster.FileName))) },
			want:  []string{"no cluster.json in", "augustus init --dir"},
		},
		"malformed cluster file": {
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, cluster.FileName), []byte("{\n  \"f\": one\n}"), 0o644))
			},
			want: []string{"line 2"},
		},
		"unknown id": {
			args: []string{"--id", "g9r9"},
			want: []string{`--id "g9r9": no such replica`, "g0r0, g0r1, g0r2, g0r3"},
		},
		"missing key file": {
			setup: func(t *testing.T, dir string) { require.NoError(t, os.Remove(cluster.KeyPath(dir, "g0r1"))) },
			want:  []string{"no key file for replica g0r1", "g0r1.key does not exist"},
		},
		"key of another replica": {
			setup: func(t *testing.T, dir string) {
				other, err := os.ReadFile(cluster.KeyPath(dir, "g0r2"))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(cluster.KeyPath(dir, "g0r1"), other, 0o600))
			},
			want: []string{"does not match the public key of g0r1"},
		},
		"wrong f for n": {
			setup: func(t *testing.T, dir string) { editClusterFile(t, dir, func(m map[string]any) { m["f"] = 2 }) },
			want:  []string{"group 0 has 4 replicas; f=2 needs exactly 3f+1 = 7"},
		},
		"duplicate address": {
			setup: func(t *testing.T, dir string) {
				editClusterFile(t, dir, func(m map[string]any) {
					replicaField(m, 0, 2)["client_addr"] = replicaField(m, 0, 0)["peer_addr"]
				})
			},
			want: []string{"is also used by", "g0r0"},
		},
		"unknown app": {
			args: []string{"--app", "sql"},
			want: []string{`--app "sql": want "txn", "log" or "noop"`},
		},
		"memtable size not a size": {
			args: []string{"--memtable-size", "lots"},
			want: []string{`invalid argument "lots" for "--memtable-size" flag: want a size such as 64MiB`},
		},
		"memtable size too large": {
			args: []string{"--memtable-size", "8GiB"},
			want: []string{"8.0 GiB is out of range: want 1.0 MiB to 1.0 GiB"},
		},
		"cache size too small": {
			args: []string{"--cache-size", "4096"},
			want: []string{`"--cache-size" flag: 4.0 KiB is out of range`},
		},
		"row cache below fastcache's least": {
			args: []string{"--row-cache-size", "16MiB"},
			want: []string{`"--row-cache-size" flag: 16 MiB is out of range: want 0 (off) or 32 MiB to 1.0 TiB`},
		},
		"bad log level": {
			args: []string{"--log-level", "loud"},
			want: []string{`--log-level "loud"`},
		},
		"metrics port busy": {
			setup: func(t *testing.T, dir string) {
				c, err := cluster.Load(filepath.Join(dir, cluster.FileName))
				require.NoError(t, err)
				lis, err := net.Listen("tcp", c.Groups[0].Replicas[1].MetricsAddr)
				require.NoError(t, err)
				t.Cleanup(func() { _ = lis.Close() })
			},
			want: []string{"listen for metrics on"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, _ := newTestCluster(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			args := append([]string{"replica", "--dir", dir, "--id", "g0r1"}, tc.args...)
			code, _, stderr := runMain(t, args...)
			require.Equal(t, 1, code, "stderr: %s", stderr)
			for _, want := range tc.want {
				require.Contains(t, stderr, want)
			}
			_, err := os.Stat(filepath.Join(dir, "data", "g0r1"))
			require.True(t, os.IsNotExist(err), "a replica that fails its checks creates no store")
		})
	}
}

// --cache-size, --memtable-size and --row-cache-size set the store's sizes
// (their defaults storage's; a row cache of 0 is none), and start passes
// them on to every replica it runs.
func TestStoreSizeFlagsReachTheReplicasStore(t *testing.T) {
	dir, _ := newTestCluster(t)
	for name, tc := range map[string]struct {
		args                      []string
		cache, memTable, rowCache int64
	}{
		"defaults": {cache: storage.DefaultCacheSize, memTable: storage.DefaultMemTableSize, rowCache: storage.DefaultRowCacheSize},
		"IEC": {args: []string{"--cache-size", "256MiB", "--memtable-size", "32 MiB", "--row-cache-size", "128MiB"},
			cache: 256 << 20, memTable: 32 << 20, rowCache: 128 << 20},
		"SI and bytes": {args: []string{"--cache-size", "100MB", "--memtable-size", "8388608", "--row-cache-size", "50MB"},
			cache: 100_000_000, memTable: 8 << 20, rowCache: 50_000_000},
		"no row cache": {args: []string{"--row-cache-size", "0"},
			cache: storage.DefaultCacheSize, memTable: storage.DefaultMemTableSize, rowCache: -1},
	} {
		t.Run(name, func(t *testing.T) {
			check := func(t *testing.T, sizes storeSizes) {
				t.Helper()
				o := replicaOptions{dir: dir, id: "g0r1", app: appTxn, sizes: sizes}
				_, _, cfg, err := loadReplicaSetup(o)
				require.NoError(t, err)
				require.EqualValues(t, tc.cache, cfg.StorageOptions.CacheSize)
				require.EqualValues(t, tc.memTable, cfg.StorageOptions.MemTableSize)
				require.EqualValues(t, tc.rowCache, cfg.StorageOptions.RowCacheSize)
			}
			rc := newReplicaCommand()
			require.NoError(t, rc.ParseFlags(tc.args))
			check(t, replicaSizes(t, rc))

			// start's command line for a replica carries the same sizes:
			// parsed by start's flags, passed on by replicaArgs, parsed
			// again by replica's.
			sc := newStartCommand()
			require.NoError(t, sc.ParseFlags(tc.args))
			so := startOptions{dir: dir, app: appTxn, logLevel: "info", sizes: replicaSizes(t, sc)}
			args := replicaArgs(so, "g0r1", 1)
			require.Equal(t, "replica", args[0])
			rc = newReplicaCommand()
			require.NoError(t, rc.ParseFlags(args[1:]))
			check(t, replicaSizes(t, rc))
		})
	}

	// startOptions without sizes (tests, the demo) start replicas at
	// their defaults instead of passing a size of zero, which they refuse
	// (or, for the row cache, take as "off").
	args := replicaArgs(startOptions{dir: dir, app: appTxn, logLevel: "info"}, "g0r1", 1)
	require.NotContains(t, args, "--cache-size")
	require.NotContains(t, args, "--memtable-size")
	require.NotContains(t, args, "--row-cache-size")
}

// replicaSizes returns the store sizes cmd's flags parsed.
func replicaSizes(t *testing.T, cmd *cobra.Command) storeSizes {
	t.Helper()
	return storeSizes{cache: *sizeFlag(t, cmd, "cache-size"), memTable: *sizeFlag(t, cmd, "memtable-size"),
		rowCache: *sizeFlag(t, cmd, "row-cache-size")}
}

// sizeFlag returns the value of cmd's size flag name.
func sizeFlag(t *testing.T, cmd *cobra.Command, name string) *byteSize {
	t.Helper()
	f := cmd.Flags().Lookup(name)
	require.NotNil(t, f, "no flag --%s", name)
	v, ok := f.Value.(*byteSize)
	require.True(t, ok, "--%s is a %T", name, f.Value)
	return v
}
