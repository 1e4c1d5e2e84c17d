package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/bft/replica"
)

// load runs workers that each append unique tokens to their own log
// ("w<i>"), one call at a time, through one shared group client, and
// records which tokens the client accepted. A token whose call failed or
// was cut off is indeterminate: it may or may not have executed.
type load struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	accepted atomic.Int64
	run      string

	mu       sync.Mutex
	ok       map[string]string // token -> key, accepted
	issued   map[string]string // token -> key, every call sent
	firstErr error
	errs     int
}

// startLoad starts workers; run names the tokens so that loads of
// different clients never share one.
func startLoad(cl *client.Client, run string, workers int) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, run: run, ok: map[string]string{}, issued: map[string]string{}}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			key := fmt.Sprintf("w%d", w)
			for i := 0; ctx.Err() == nil; i++ {
				token := fmt.Sprintf("%s.%d.%d", run, w, i)
				l.mu.Lock()
				l.issued[token] = key
				l.mu.Unlock()
				callCtx, cancelCall := context.WithTimeout(ctx, 60*time.Second)
				res, err := cl.Invoke(callCtx, replica.LogAppend(key, []byte(token)))
				cancelCall()
				if err == nil {
					_, err = replica.DecodeLogLength(res)
				}
				l.mu.Lock()
				if err == nil {
					l.ok[token] = key
				} else if ctx.Err() == nil {
					l.errs++
					if l.firstErr == nil {
						l.firstErr = err
					}
				}
				l.mu.Unlock()
				if err == nil {
					l.accepted.Add(1)
				}
			}
		}()
	}
	return l
}

// stop ends the load and waits for the workers.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// waitAccepted waits until n calls in all were accepted.
func (l *load) waitAccepted(t *testing.T, n int64, timeout time.Duration, what string) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%d accepted calls (%s)", n, what), func() bool {
		l.mu.Lock()
		errs, first := l.errs, l.firstErr
		l.mu.Unlock()
		if errs > 0 {
			t.Fatalf("load: %d calls failed, first: %v", errs, first)
		}
		return l.accepted.Load() >= n
	})
}

// checkExactlyOnce reads every log through cl and checks that every
// accepted token is there exactly once, that no token appears twice, and
// that every token there was issued by this load (or by an earlier load
// listed in other). It returns the number of entries read.
func (l *load) checkExactlyOnce(t *testing.T, cl *client.Client, other ...*load) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	entries := 0
	for _, key := range l.keysLocked() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := cl.Invoke(ctx, replica.LogRead(key))
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		vals, err := replica.DecodeLogEntries(res)
		if err != nil {
			t.Fatalf("read %s: %v", key, err)
		}
		for _, v := range vals {
			entries++
			token := string(v)
			seen[token]++
			if _, ok := l.issued[token]; !ok && !issuedBy(other, token) {
				t.Errorf("log %s holds %q, which no client sent", key, token)
			}
		}
	}
	var dup, missing []string
	for token, n := range seen {
		if n > 1 {
			dup = append(dup, fmt.Sprintf("%s×%d", token, n))
		}
	}
	for token := range l.ok {
		if seen[token] != 1 {
			missing = append(missing, token)
		}
	}
	if len(dup) > 0 {
		sort.Strings(dup)
		t.Errorf("%d tokens executed more than once: %s", len(dup), firstFew(dup))
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d accepted tokens are missing from the logs: %s", len(missing), firstFew(missing))
	}
	return entries
}

func (l *load) keysLocked() []string {
	set := map[string]bool{}
	for _, k := range l.issued {
		set[k] = true
	}
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func issuedBy(loads []*load, token string) bool {
	for _, o := range loads {
		o.mu.Lock()
		_, ok := o.issued[token]
		o.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

func firstFew(s []string) string {
	if len(s) > 10 {
		return strings.Join(s[:10], ", ") + ", ..."
	}
	return strings.Join(s, ", ")
}

// invoke runs one call with a deadline.
func invoke(cl *client.Client, payload []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := cl.Invoke(ctx, payload)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("no result within %s: %w", timeout, err)
	}
	return res, err
}
