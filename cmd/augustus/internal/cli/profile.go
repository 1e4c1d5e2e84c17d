package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// defaultPprofBasePort is where `start --pprof` has the first replica of
// the cluster serve pprof; the k-th replica serves on the port k above.
const defaultPprofBasePort = 6060

// pprofAddr is where replica k (in the order of replicaNames) serves pprof
// under `start --pprof --pprof-base-port base`.
func pprofAddr(base, k int) string { return fmt.Sprintf("127.0.0.1:%d", base+k) }

// maxProfile is the length of the CPU profiles bench --profile pulls.
const maxProfile = 10 * time.Second

// profileRun is bench --profile in progress: one CPU profile being pulled
// from each replica of the group.
type profileRun struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	out map[string]string
}

// startProfiles starts pulling a CPU profile from every replica of g, for
// min(maxProfile, the measured interval), into o.profileDir. It does
// nothing without --profile.
func startProfiles(ctx context.Context, c *cluster.Cluster, g *cluster.Group, o benchOptions) *profileRun {
	return startProfilesIn(ctx, c, []*cluster.Group{g}, o, o.profileDir)
}

// startProfilesIn pulls a CPU profile from every replica of groups into
// dir/NAME.pprof, as startProfiles does. The transaction bench profiles
// every group of the cluster, one directory per measured interval.
func startProfilesIn(ctx context.Context, c *cluster.Cluster, groups []*cluster.Group, o benchOptions, dir string) *profileRun {
	p := &profileRun{out: map[string]string{}}
	if o.profileDir == "" {
		return p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		for _, g := range groups {
			for _, r := range g.ReplicasByIndex() {
				p.out[r.Name] = "none: " + err.Error()
			}
		}
		return p
	}
	secs := int(min(maxProfile, o.duration) / time.Second)
	if secs < 1 {
		secs = 1
	}
	index := map[string]int{}
	for k, n := range replicaNames(c) {
		index[n] = k
	}
	for _, g := range groups {
		for _, r := range g.ReplicasByIndex() {
			addr := pprofAddr(o.pprofBase, index[r.Name])
			path := filepath.Join(dir, r.Name+".pprof")
			p.wg.Go(func() {
				result := path
				if err := pullProfile(ctx, addr, secs, path); err != nil {
					result = "none: " + err.Error()
				}
				p.mu.Lock()
				p.out[r.Name] = result
				p.mu.Unlock()
			})
		}
	}
	return p
}

// wait waits for the profiles and returns, per replica, the file written or
// why there is none (nil without --profile).
func (p *profileRun) wait() map[string]string {
	p.wg.Wait()
	if len(p.out) == 0 {
		return nil
	}
	return p.out
}

// pullProfile fetches a CPU profile of secs seconds from the pprof endpoint
// at addr into path.
func pullProfile(ctx context.Context, addr string, secs int, path string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+10*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w (is the replica started with augustus start --pprof?)", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("%s: %w", url, err)
	}
	return f.Close()
}

// profileRows are a report's rows for --profile: per replica, in name
// order, the profile written or why there is none.
func profileRows(profiles map[string]string) [][]string {
	var rows [][]string
	for _, n := range slices.Sorted(maps.Keys(profiles)) {
		rows = append(rows, []string{"profile " + n, profiles[n]})
	}
	return rows
}
