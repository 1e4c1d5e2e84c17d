package transport

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// sized returns a Prepare whose encoding is size bytes.
func sized(size int) *bftpb.Message {
	m := prepare(0, 1, 0)
	pad := size - proto.Size(m) - 3 // tag and length of the padded field
	m.GetPrepare().Signature = make([]byte, max(pad, 0))
	return m
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// window bounds the messages in flight so that the benchmark measures the
// stream, not the drops of an overflowing queue.
const window = 1024

// BenchmarkPeerStream measures one Peer stream on loopback with TLS: Send on
// one replica to OnMessage on another, marshaling and decoding included.
// Both ends run in this process, so cpu-µs/msg is the cost of both.
func BenchmarkPeerStream(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c := newCluster(b, 2)
			m := sized(size)
			sem := make(chan struct{}, window)
			var got atomic.Int64
			done := make(chan struct{})
			c.nodes[1].rec.mu.Lock()
			c.nodes[1].rec.sink = func(uint32, *bftpb.Message) {
				<-sem
				if got.Add(1) == int64(b.N)+1 { // +1: the warm-up message
					close(done)
				}
			}
			c.nodes[1].rec.mu.Unlock()
			// Open the stream before timing.
			sem <- struct{}{}
			c.nodes[0].peers.Send(1, m)
			for got.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			b.SetBytes(int64(proto.Size(m)))
			b.ReportAllocs()
			cpu0, t0 := cpuTime(), time.Now()
			b.ResetTimer()
			for range b.N {
				sem <- struct{}{}
				c.nodes[0].peers.Send(1, m)
			}
			<-done
			b.StopTimer()
			elapsed, cpu := time.Since(t0), cpuTime()-cpu0
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs/msg")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
			if d := dropped(b, c.nodes[0].metrics, DropQueueFull); d != 0 {
				b.Fatalf("%v drops", d)
			}
		})
	}
}

// BenchmarkBroadcast measures one replica broadcasting to three over TLS
// (marshaled once), all four in this process.
func BenchmarkBroadcast(b *testing.B) {
	for _, size := range []int{256, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c := newCluster(b, 4)
			m := sized(size)
			sem := make(chan struct{}, window)
			var got atomic.Int64
			done := make(chan struct{})
			total := int64(3 * (b.N + 1)) // +1: the warm-up broadcast
			for _, nd := range c.nodes[1:] {
				nd.rec.mu.Lock()
				nd.rec.sink = func(uint32, *bftpb.Message) {
					if n := got.Add(1); n%3 == 0 {
						<-sem
						if n == total {
							close(done)
						}
					}
				}
				nd.rec.mu.Unlock()
			}
			sem <- struct{}{}
			c.nodes[0].peers.Broadcast(m)
			for got.Load() < 3 {
				time.Sleep(time.Millisecond)
			}
			b.SetBytes(int64(3 * proto.Size(m)))
			cpu0, t0 := cpuTime(), time.Now()
			b.ResetTimer()
			for range b.N {
				sem <- struct{}{}
				c.nodes[0].peers.Broadcast(m)
			}
			<-done
			b.StopTimer()
			elapsed, cpu := time.Since(t0), cpuTime()-cpu0
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "broadcasts/s")
			b.ReportMetric(float64(elapsed.Microseconds())/float64(b.N), "µs/broadcast")
			b.ReportMetric(float64(cpu.Microseconds())/float64(3*b.N), "cpu-µs/msg")
		})
	}
}

// BenchmarkClientRoundTrip measures request → OnRequest → SendReply → reply
// on one client stream, with up to window requests outstanding.
func BenchmarkClientRoundTrip(b *testing.B) {
	c := newCluster(b, 1)
	nd := c.nodes[0]
	nd.rec.mu.Lock()
	nd.rec.onReq = func(_ context.Context, r *bftpb.Request, _ *ClientConn) {
		nd.srv.SendReply(&bftpb.Reply{Client: r.Client, Timestamp: r.Timestamp, Result: r.Payload})
	}
	nd.rec.mu.Unlock()
	key, id := newClientKey(b)
	cl, err := DialClient(context.Background(), nd.addr, dialTLS(nil, c.pins), WithClientLogger(quietLog), WithClientKey(key))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	req := &bftpb.Request{Client: id, Payload: make([]byte, 256), Signature: make([]byte, 64)}
	inflight := 0
	b.ResetTimer()
	t0 := time.Now()
	for i := range b.N {
		for inflight >= window {
			<-cl.Replies()
			inflight--
		}
		req.Timestamp = uint64(i)
		cl.Send(req)
		inflight++
	}
	for ; inflight > 0; inflight-- {
		<-cl.Replies()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "reqs/s")
}
