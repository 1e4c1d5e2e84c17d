package replica

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/augustus-db/augustus/pkg/bft/client"
)

// ioSyscalls returns the read and write system calls this process made
// (/proc/self/io; zeros where it is missing).
func ioSyscalls() (reads, writes float64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// histogram returns the sum and count of a histogram.
func histogram(h prometheus.Histogram) (sum, count float64) {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return 0, 0
	}
	return m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())
}

// processCPU returns the CPU time (user + system) this process used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGroupNoop runs a group of 4 replicas and one client with W
// callers in this process (all sharing the machine's cores) over loopback
// TLS with pebble, noop application: calls/s through the whole stack, and
// the CPU time of the whole process (4 replicas and the client) per call
// and per PBFT batch.
func BenchmarkGroupNoop(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("callers=%d", workers), func(b *testing.B) {
			g := newTestGroupB(b)
			c := g.clientWith(0, func(c *client.Config) {
				// BENCH_INFLIGHT: envelopes a client keeps outstanding
				// (default: the client's).
				if n, err := strconv.Atoi(os.Getenv("BENCH_INFLIGHT")); err == nil {
					c.InFlight = n
				}
			})
			var next atomic.Int64
			batches0 := testutil.ToFloat64(g.metrics[0].BatchesExecuted)
			syncSum0, syncs0 := histogram(g.metrics[0].SyncLatency)
			b.ResetTimer()
			cpu0 := processCPU()
			r0, w0 := ioSyscalls()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						_, err := c.Invoke(ctx, nil)
						cancel()
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), processCPU()-cpu0
			batches := testutil.ToFloat64(g.metrics[0].BatchesExecuted) - batches0
			r1, w1 := ioSyscalls()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/call")
			if batches > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/batches, "cpu-µs/batch")
				b.ReportMetric(float64(b.N)/batches, "calls/batch")
				b.ReportMetric((r1-r0)/batches, "reads/batch")
				b.ReportMetric((w1-w0)/batches, "writes/batch")
				syncSum, syncs := histogram(g.metrics[0].SyncLatency)
				if syncs > syncs0 {
					// At the primary: how long a sync takes, and how many
					// batches one covers.
					b.ReportMetric((syncSum-syncSum0)/(syncs-syncs0)*1e6, "µs/sync@primary")
					b.ReportMetric(batches/(syncs-syncs0), "batches/sync@primary")
				}
			}
		})
	}
}
