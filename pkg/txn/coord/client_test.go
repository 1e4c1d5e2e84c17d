package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/coord"
	"github.com/augustus-db/augustus/pkg/txn/coord/coordtest"
)

func newClient(t *testing.T, cl *coordtest.Cluster, i int, reg prometheus.Registerer) *coord.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := coord.NewClient(ctx, coord.ClientConfig{
		Cluster: cl.Cluster, Key: cl.ClientKey(i), GroupTimeout: 300 * time.Millisecond, Registerer: reg,
	})
	require.NoError(t, err)
	return c
}

// The production client over real replica groups (2 groups of 4 replicas on
// loopback, PBFT, the transaction engine): concurrent cross-group transfers
// from many goroutines sharing one client (their calls share envelopes) and
// from a second client; conflicts are retried (K5) and recovered (K4); the
// total is preserved; every transaction terminates and is proven; Close
// leaves no goroutine behind.
func TestClientRunsCrossGroupTransactionsOverRealReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 replicas")
	}
	ignore := goleak.IgnoreCurrent()
	cl := coordtest.Start(t, coordtest.Options{})
	defer func() {
		cl.Stop() // first: only the clients' goroutines count
		goleak.VerifyNone(t, ignore)
	}()
	reg := prometheus.NewRegistry()
	a := newClient(t, cl, 0, reg)
	b := newClient(t, cl, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	accounts := [][]byte{[]byte("acct-0"), []byte("acct-1"), []byte("acct-2"), []byte("acct-3"),
		{0x90, '0'}, {0x90, '1'}, {0xa0, '2'}, {0xa0, '3'}}
	ins := txn.NewBuilder()
	for _, k := range accounts {
		ins.Insert(k, []byte("100"))
	}
	res, err := a.Do(ctx, ins, coord.Options{})
	require.NoError(t, err)
	require.Equal(t, txn.KindMultiUpdate, res.Kind)

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	worker := func(c *coord.Client, w int) {
		defer wg.Done()
		for i := 0; i < 4; i++ {
			from, to := accounts[(w+i)%len(accounts)], accounts[(w+i+3)%len(accounts)]
			for {
				rd, err := c.Do(ctx, txn.NewBuilder().Read(from).Read(to), coord.Options{})
				if err != nil {
					errs <- fmt.Errorf("read: %w", err)
					return
				}
				fb, _ := strconv.Atoi(string(rd.Ops[0].Value))
				tb, _ := strconv.Atoi(string(rd.Ops[1].Value))
				_, err = c.Do(ctx, txn.NewBuilder().Cmp(from, rd.Ops[0].Value).Cmp(to, rd.Ops[1].Value).
					Write(from, []byte(strconv.Itoa(fb-1))).Write(to, []byte(strconv.Itoa(tb+1))), coord.Options{})
				if errors.Is(err, txn.ErrCompareFailed) || errors.Is(err, txn.ErrConflict) {
					continue // someone moved money meanwhile: read again
				}
				if err != nil {
					errs <- fmt.Errorf("transfer: %w", err)
					return
				}
				break
			}
		}
	}
	for w := range 6 {
		wg.Add(1)
		go worker(a, w)
	}
	for w := range 2 {
		wg.Add(1)
		go worker(b, w+6)
	}
	wg.Wait()
	t.Logf("32 transfers by 8 goroutines in %s", time.Since(start))
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	audit := txn.NewBuilder()
	for _, k := range accounts {
		audit.Read(k)
	}
	res, err = b.Do(ctx, audit, coord.Options{})
	require.NoError(t, err)
	total := 0
	for _, op := range res.Ops {
		n, err := strconv.Atoi(string(op.Value))
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, 100*len(accounts), total)
	committed := 0.0
	for _, k := range []string{"single", "multi_update", "multi_read"} {
		committed += testutil.ToFloat64(a.Metrics().Transactions.WithLabelValues(k, "committed"))
	}
	require.GreaterOrEqual(t, committed, 1+6*4*2.0, "the insert, and a read and a write per transfer")
	// The calls of concurrent transactions share envelopes (DESIGN.md §3.1).
	fams, err := reg.Gather()
	require.NoError(t, err)
	var calls, envelopes float64
	for _, f := range fams {
		if f.GetName() == "augustus_client_envelope_size_calls" {
			for _, m := range f.GetMetric() {
				calls += m.GetHistogram().GetSampleSum()
				envelopes += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Logf("%.0f calls in %.0f envelopes", calls, envelopes)
	require.Greater(t, calls, envelopes, "some envelopes carried several calls")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	_, err = a.Do(ctx, audit, coord.Options{})
	require.ErrorIs(t, err, coord.ErrClosed)
}

// A caller whose context ends gets ctx.Err() at once; the client still
// terminates what it sent; a new client with the same key continues the
// nonce sequence (W3).
func TestClientCancelAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 replicas")
	}
	cl := coordtest.Start(t, coordtest.Options{})
	c := newClient(t, cl, 0, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quick, stop := context.WithCancel(ctx)
	stop()
	_, err := c.Do(quick, txn.NewBuilder().Insert([]byte("k"), nil), coord.Options{})
	require.ErrorIs(t, err, context.Canceled)

	short, stop2 := context.WithTimeout(ctx, time.Millisecond)
	defer stop2()
	_, err = c.Do(short, txn.NewBuilder().Insert([]byte("a"), []byte("1")).Insert([]byte{0x90}, []byte("2")), coord.Options{})
	if err != nil {
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	// The transaction terminates (and is proven) though its caller left.
	deadline := time.Now().Add(30 * time.Second)
	for st := c.Stats(); st.Unfinished+st.Requests > 0; st = c.Stats() {
		require.True(t, time.Now().Before(deadline), "still unfinished: %+v", st)
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, c.Close())

	c2 := newClient(t, cl, 0, nil)
	defer c2.Close()
	s := c2.Stats()
	require.True(t, s.Ready)
	require.Equal(t, s.NextNonce, s.Watermark)
	res, err := c2.Do(ctx, txn.NewBuilder().Read([]byte("a")).Read([]byte{0x90}), coord.Options{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Nonce, uint64(1))
	require.True(t, res.Ops[0].Present, "the cancelled caller's transaction committed")
}

// BenchmarkClientSerial measures one caller's transactions back to back over
// 2 groups of 4 in-process replicas (loopback, fsync per batch): the latency
// of each kind, uncontended.
func BenchmarkClientSerial(b *testing.B) {
	cl := coordtest.Start(b, coordtest.Options{})
	ctx := context.Background()
	c, err := coord.NewClient(ctx, coord.ClientConfig{Cluster: cl.Cluster, Key: cl.ClientKey(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, txn.NewBuilder().Insert([]byte("k"), []byte("0")).Insert([]byte{0x90}, []byte("0")), coord.Options{}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		ops  func(i int) *txn.Builder
	}{
		{"single", func(i int) *txn.Builder { return txn.NewBuilder().Write([]byte("k"), []byte(strconv.Itoa(i))) }},
		{"multi_read", func(int) *txn.Builder { return txn.NewBuilder().Read([]byte("k")).Read([]byte{0x90}) }},
		{"multi_update", func(i int) *txn.Builder {
			return txn.NewBuilder().Write([]byte("k"), []byte(strconv.Itoa(i))).Write([]byte{0x90}, []byte(strconv.Itoa(i)))
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := c.Do(ctx, bc.ops(i), coord.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
