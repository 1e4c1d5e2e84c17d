package coord

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/txn"
)

// txn.md K5: a conflict abort is retried a bounded number of times, each
// after a jittered exponential back-off; then the caller gets the conflict,
// naming the pending transaction.
func TestK5ConflictRetriesAreBoundedWithJitteredBackoff(t *testing.T) {
	gaps := func(seed uint64) []time.Duration {
		w := newWorld(t, 2, 7)
		w.minDelay, w.maxDelay = time.Millisecond, time.Millisecond // fixed delays: gaps are back-off
		rec := newRecorder(w)
		m := NewMetrics(nil)
		c := w.newClient(50, func(cfg *Config) {
			observe(rec, m)(cfg)
			cfg.Seed = seed
			cfg.Tuning.RecoveryGrace = time.Hour // the blocker stays pending
			cfg.Tuning.MaxRetries = 5
			cfg.Tuning.BackoffBase, cfg.Tuning.BackoffMax = 10*time.Millisecond, 40*time.Millisecond
		})
		byz := w.newRaw(60)
		_, u := byz.abandon(txn.NewBuilder().Insert(k0, []byte("x")).Insert(k1, []byte("y")), 0)
		res, err := c.do(txn.NewBuilder().Insert(k0, []byte("mine")))
		require.ErrorIs(t, err, txn.ErrConflict)
		var ae *AbortedError
		require.ErrorAs(t, err, &ae)
		require.Equal(t, 6, ae.Attempts)
		require.Equal(t, 6, res.Attempts)
		require.NotNil(t, res.Blocker)
		require.Equal(t, u, *res.Blocker, "the conflict names the pending transaction")
		require.Len(t, rec.sent, 6)
		require.Equal(t, 5.0, counter(t, m, "retries", "conflict"))
		require.Equal(t, 1.0, counter(t, m, "transactions", "single", "conflict"))
		var out []time.Duration
		for i := 1; i < len(rec.sent); i++ {
			// A single-group attempt takes 2ms (request and reply); the rest
			// is the back-off before retry i, at most min(40ms, 10ms·2^(i-1)).
			gap := rec.sent[i].at.Sub(rec.sent[i-1].at) - 2*time.Millisecond
			require.GreaterOrEqual(t, gap, time.Duration(0))
			require.LessOrEqual(t, gap, min(40*time.Millisecond, 10*time.Millisecond<<(i-1)), "retry %d", i)
			out = append(out, gap)
		}
		return out
	}
	a, b := gaps(1), gaps(2)
	require.NotEqual(t, a, b, "the back-off is jittered by the seed")
	require.Equal(t, a, gaps(1), "and only by the seed")
}

// txn.md K5: the back-off draw is uniform in [0, min(max, base·2^(k-1))].
func TestK5BackoffStaysWithinItsCeilingAndVaries(t *testing.T) {
	w := newWorld(t, 1, 8)
	c := w.newClient(50, func(cfg *Config) {
		cfg.Tuning.BackoffBase, cfg.Tuning.BackoffMax = time.Millisecond, 50*time.Millisecond
	})
	for k := 1; k <= 40; k++ {
		ceil := min(50*time.Millisecond, time.Millisecond<<min(k-1, 30))
		seen := map[time.Duration]bool{}
		for range 50 {
			d := c.core.backoff(k)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceil)
			seen[d] = true
		}
		require.Greater(t, len(seen), 10, "retry %d: the draws vary", k)
	}
}

// txn.md K5: Options.MaxRetries < 0 disables retries; aborts that a retry
// cannot change (comparison failed, key exists, not found) are never
// retried.
func TestK5OnlyConflictsAreRetried(t *testing.T) {
	w := newWorld(t, 2, 9)
	rec := newRecorder(w)
	c := w.newClient(50, func(cfg *Config) {
		observe(rec, nil)(cfg)
		cfg.Tuning.RecoveryGrace = time.Hour
	})
	byz := w.newRaw(60)
	byz.abandon(txn.NewBuilder().Insert(k1, []byte("x")).Insert(k0b, []byte("y")), 0)
	res, err := c.doWith(txn.NewBuilder().Read(k1), Options{MaxRetries: -1})
	require.ErrorIs(t, err, txn.ErrConflict)
	require.Equal(t, 1, res.Attempts)

	n := len(rec.sent)
	_, err = c.do(txn.NewBuilder().Insert(k0, []byte("v")))
	require.NoError(t, err)
	_, err = c.do(txn.NewBuilder().Insert(k0, []byte("v")))
	require.ErrorIs(t, err, txn.ErrKeyExists)
	_, err = c.do(txn.NewBuilder().Write([]byte("a9"), []byte("v")))
	require.ErrorIs(t, err, txn.ErrKeyNotFound)
	res, err = c.do(txn.NewBuilder().Cmp(k0, []byte("w")).Write(k0, []byte("z")))
	require.ErrorIs(t, err, txn.ErrCompareFailed)
	require.Equal(t, 0, res.Abort.Op)
	require.Len(t, rec.sent, n+4, "one attempt each")
}

// txn.md K4/K5: once this client is terminating the pending transaction a
// retry met again, the next retry waits for that recovery to end instead of
// backing off: until the blocker is gone a retry can only meet it again, and
// each retry is an ordered call. With a 1–2 ms back-off and 10 ms round
// trips, retrying on regardless sends two attempts into the 20 ms recovery
// (checked by disabling the wait in request.retry).
func TestK5RetryThatMeetsItsBlockerAgainWaitsForTheRecovery(t *testing.T) {
	w := newWorld(t, 2, 11)
	w.minDelay, w.maxDelay = 5*time.Millisecond, 5*time.Millisecond
	rec := newRecorder(w)
	m := NewMetrics(nil)
	c := w.newClient(50, func(cfg *Config) {
		observe(rec, m)(cfg)
		cfg.Tuning.RecoveryGrace = 20 * time.Millisecond
		cfg.Tuning.MaxRetries = 50
		cfg.Tuning.BackoffBase, cfg.Tuning.BackoffMax = time.Millisecond, 2*time.Millisecond
	})
	byz := w.newRaw(60)
	_, uid := byz.abandon(txn.NewBuilder().Insert(k0, []byte("u0")).Insert(k1, []byte("u1")), 0)
	res, err := c.do(txn.NewBuilder().Insert(k0b, []byte("mine")).Write(k0, []byte("mine")))
	require.NoError(t, err)
	require.True(t, res.Committed)

	var start, end time.Time
	for _, cr := range w.callsFor(txn.CallTxn, uid) {
		if cr.client == c.id && start.IsZero() {
			start = cr.at // the recovery's first call: its grace is over
		}
	}
	for _, cr := range w.callsFor(txn.CallOutcome, uid) {
		if cr.client == c.id && cr.at.After(end) {
			end = cr.at // the recovery's last outcome call
		}
	}
	require.False(t, start.IsZero(), "this client recovered the blocker")
	require.True(t, end.After(start))
	// The client's own attempts, as the group received them: its
	// transaction calls that are not the recovered transaction.
	var attempts []time.Time
	for _, cr := range w.calls {
		if cr.client != c.id || cr.kind != txn.CallTxn {
			continue
		}
		call, err := txn.DecodeCall(cr.payload)
		require.NoError(t, err)
		if w.dom.ID(call.Txn) != uid {
			attempts = append(attempts, cr.at)
		}
	}
	during := 0
	for _, at := range attempts {
		if at.After(start) && at.Before(end) {
			during++
		}
	}
	require.LessOrEqual(t, during, 1, "at most the attempt already out when the recovery started")
	last := attempts[len(attempts)-1]
	require.True(t, last.After(end), "the committing attempt follows the recovery")
	require.Less(t, last.Sub(end), 10*time.Millisecond, "at once, not after a time-out")
}
