package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// The replicas' metrics bench reads (the CLI's console reads others with
// its own copy of these few scrape helpers, cli/scrape.go).
const (
	metricCPU       = "process_cpu_seconds_total"
	metricStartTime = "process_start_time_seconds"
	metricBatchSize = "augustus_bft_batch_size_requests"
)

// metrics is one scrape of a /metrics endpoint.
type metrics map[string]*dto.MetricFamily

// scrapeClient is shared by every scrape; each request is bounded by its
// context.
var scrapeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// replicaScrape is one replica's metrics, or why there are none.
type replicaScrape struct {
	name string
	m    metrics
	err  error
}

// scrapeReplicas scrapes every replica of reps at once and returns one
// result per replica, in reps' order; a replica without a metrics address
// gets an error saying so.
func scrapeReplicas(ctx context.Context, reps []cluster.Replica) []replicaScrape {
	out := make([]replicaScrape, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		out[i].name = r.Name
		if r.MetricsAddr == "" {
			out[i].err = errors.New("no metrics_addr in cluster.json")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].m, out[i].err = scrape(ctx, r.MetricsAddr)
		}()
	}
	wg.Wait()
	return out
}

// allReplicas lists the replicas of every group, group by group.
func allReplicas(c *cluster.Cluster) []cluster.Replica {
	var reps []cluster.Replica
	for _, g := range c.Groups {
		reps = append(reps, g.Replicas...)
	}
	return reps
}

// scrape fetches and parses http://addr/metrics (text format).
func scrape(ctx context.Context, addr string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, &scrapeError{addr, err}
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, &scrapeError{addr, err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil, &scrapeError{addr, fmt.Errorf("HTTP %s", resp.Status)}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, &scrapeError{addr, fmt.Errorf("malformed metrics: %w", err)}
	}
	return metrics(fams), nil
}

// value returns the value of the counter, gauge or untyped sample name whose
// labels include the given pairs (label, value, label, value, ...).
func (m metrics) value(name string, labels ...string) (float64, bool) {
	fam, ok := m[name]
	if !ok {
		return 0, false
	}
next:
	for _, s := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range s.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
					break
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			return s.Counter.GetValue(), true
		case s.Gauge != nil:
			return s.Gauge.GetValue(), true
		case s.Untyped != nil:
			return s.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// shortError says in a few words why a scrape failed: the system call's
// error ("connection refused") rather than the whole chain of wrappers.
func shortError(err error) string {
	var errno syscall.Errno
	var se *scrapeError
	addr := ""
	if errors.As(err, &se) {
		addr = se.addr
	}
	reason := err.Error()
	switch {
	case errors.As(err, &errno):
		reason = errno.Error()
	case errors.Is(err, context.DeadlineExceeded):
		reason = "no answer in time"
	case se != nil:
		reason = se.err.Error()
	}
	if addr == "" {
		return reason
	}
	return fmt.Sprintf("metrics at %s unreachable: %s", addr, reason)
}

// scrapeError is a failed scrape of the metrics at addr.
type scrapeError struct {
	addr string
	err  error
}

func (e *scrapeError) Error() string { return fmt.Sprintf("scrape %s: %v", e.addr, e.err) }
func (e *scrapeError) Unwrap() error { return e.err }
