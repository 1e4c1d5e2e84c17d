package bft_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/auth"
	"github.com/augustus-db/augustus/pkg/bft/bftpb"
)

// benchGroup drives four cores in one goroutine, with real Ed25519
// signatures: every node signs its own messages (once per batch message)
// and every received message is verified with the Checker, client
// signatures included, as the replica runtime does. No network, no
// storage: the cost of ordering itself.
type benchGroup struct {
	nodes    []*bft.Node
	checker  *bft.Checker
	queue    []*bftpb.Message // in flight: (to, msg)
	to       []int
	executed int
}

func newBenchGroup(b *testing.B, batch int) *benchGroup {
	const f = 1
	n := 3*f + 1
	var privs []ed25519.PrivateKey
	var pubs []ed25519.PublicKey
	for i := 0; i < n; i++ {
		seed := sha256.Sum256([]byte(fmt.Sprintf("bench-replica-%d", i)))
		priv := ed25519.NewKeyFromSeed(seed[:])
		privs = append(privs, priv)
		pubs = append(pubs, priv.Public().(ed25519.PublicKey))
	}
	verifier, err := auth.NewVerifier(auth.VerifierConfig{Replicas: pubs, Policy: auth.ClientsOpen})
	if err != nil {
		b.Fatal(err)
	}
	g := &benchGroup{}
	for i := 0; i < n; i++ {
		cfg := bft.DefaultConfig(bft.ReplicaID(i), f)
		cfg.ClusterID = "bench"
		cfg.MaxBatchRequests = batch
		cfg.PipelineWindow = 1
		signer, err := auth.NewSigner(privs[i])
		if err != nil {
			b.Fatal(err)
		}
		cfg.Signer = signer
		node, err := bft.NewNode(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		g.nodes = append(g.nodes, node)
		if i == 0 {
			if g.checker, err = bft.NewChecker(bft.CheckerConfigFrom(cfg, verifier, nil)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return g
}

var benchDigest = sha256.Sum256([]byte("state"))

// drain runs every node's Ready until the group is quiet: messages are
// verified and stepped, executions reported.
func (g *benchGroup) drain(b *testing.B) {
	for {
		progress := false
		for i, node := range g.nodes {
			for node.HasReady() {
				progress = true
				rd := node.Ready()
				for _, out := range rd.Messages {
					for j := range g.nodes {
						if j != i && (out.Broadcast || j == int(out.To)) {
							g.queue = append(g.queue, out.Msg)
							g.to = append(g.to, j)
						}
					}
				}
				for _, ex := range rd.Executions {
					var d []byte
					if ex.Checkpoint {
						d = benchDigest[:]
					}
					if err := node.Executed(ex.Seq, make([][]byte, len(ex.Execute)), d); err != nil {
						b.Fatal(err)
					}
					if i == 0 {
						g.executed += len(ex.Execute)
					}
				}
				node.Advance()
			}
		}
		for len(g.queue) > 0 {
			progress = true
			m, to := g.queue[0], g.to[0]
			g.queue, g.to = g.queue[1:], g.to[1:]
			if err := g.checker.Message(m); err != nil {
				b.Fatalf("verify: %v", err)
			}
			g.nodes[to].Step(m)
		}
		if !progress {
			return
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCoreOrdering measures committed requests per second and CPU time
// per request for a group of 4 cores, all in one goroutine (so CPU time is
// the sum over the four replicas), with batches of 1, 16 and 128 requests
// of 0 B and 1 KiB. Signing is per batch message; every replica verifies
// every client signature once.
func BenchmarkCoreOrdering(b *testing.B) {
	for _, size := range []int{0, 1024} {
		for _, batch := range []int{1, 16, 128} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				g := newBenchGroup(b, batch)
				seed := sha256.Sum256([]byte("bench-client"))
				client := ed25519.NewKeyFromSeed(seed[:])
				id := client.Public().(ed25519.PublicKey)
				dom := bft.NewDomain("bench", 0)
				payload := make([]byte, size)
				// Requests are signed by clients, outside the replicas:
				// prepare them off the clock.
				reqs := make([]*bftpb.Request, 0, b.N)
				ts := uint64(1)
				b.StopTimer()
				for len(reqs) < b.N {
					r := &bftpb.Request{Client: id, Timestamp: ts, Low: ts - 1, Payload: payload}
					ts++
					r.Signature = ed25519.Sign(client, dom.RequestBytes(r))
					reqs = append(reqs, r)
				}
				b.StartTimer()
				startCPU := cpuTime()
				start := time.Now()
				for i := 0; i < len(reqs); i += batch {
					end := i + batch
					if end > len(reqs) {
						end = len(reqs)
					}
					for _, r := range reqs[i:end] {
						if err := g.checker.Request(r); err != nil {
							b.Fatal(err)
						}
						if err := g.nodes[0].Propose(r); err != nil {
							b.Fatal(err)
						}
					}
					g.drain(b)
				}
				elapsed := time.Since(start)
				cpu := cpuTime() - startCPU
				if g.executed != len(reqs) {
					b.Fatalf("executed %d of %d", g.executed, len(reqs))
				}
				b.ReportMetric(float64(len(reqs))/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(len(reqs)), "cpu-µs/req")
			})
		}
	}
}
