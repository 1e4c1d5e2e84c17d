package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// maxProfile is the length of the CPU profiles --profile pulls.
const maxProfile = 10 * time.Second

// profileRun is --profile in progress: one CPU profile being pulled from
// each replica of some groups.
type profileRun struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	out    map[string]string
	cancel context.CancelFunc
}

// startProfiles pulls a CPU profile from every replica of groups, for
// min(maxProfile, the measured interval), into dir/NAME.pprof. It does
// nothing without --profile. The group workloads profile their group into
// --profile; the transaction workloads every group, one directory per
// measured interval.
func startProfiles(ctx context.Context, c *cluster.Cluster, groups []*cluster.Group, o *Options, h Host, dir string) *profileRun {
	ctx, cancel := context.WithCancel(ctx)
	p := &profileRun{out: map[string]string{}, cancel: cancel}
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
	for _, g := range groups {
		for _, r := range g.ReplicasByIndex() {
			addr := h.PprofAddr(c, r.Name, o.pprofBase)
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
	p.cancel()
	if len(p.out) == 0 {
		return nil
	}
	return p.out
}

// stop abandons the profiles (a run that failed) and waits for the pulls
// to end.
func (p *profileRun) stop() {
	p.cancel()
	p.wg.Wait()
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

// profileRows adds a report's rows for --profile: per replica, in name
// order, the profile written or why there is none.
func profileRows(r *report, profiles map[string]string) {
	for _, n := range sortedKeys(profiles) {
		r.row("profile "+n, profiles[n])
	}
}
