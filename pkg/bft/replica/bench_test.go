package replica

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGroupNoop runs a group of 4 replicas and one client with W
// callers in this process (all sharing the machine's cores) over loopback
// TLS with pebble, noop application: calls/s through the whole stack.
func BenchmarkGroupNoop(b *testing.B) {
	for _, workers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("callers=%d", workers), func(b *testing.B) {
			g := newTestGroupB(b)
			c := g.client(0)
			var next atomic.Int64
			b.ResetTimer()
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
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}
