package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var cfg = Config{BaseDelay: 100 * time.Millisecond, Multiplier: 2, Jitter: 0.2, MaxDelay: time.Second}

func TestDelayGrowsByTheMultiplierUpToTheMaximum(t *testing.T) {
	for failures, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		require.Equal(t, want*time.Millisecond, delay(cfg, failures, 0.5), "after %d failures", failures)
	}
	require.Equal(t, time.Second, delay(cfg, 1<<20, 0.5), "no overflow after many failures")
}

func TestDelayIsJitteredWithinTheConfiguredFraction(t *testing.T) {
	require.Equal(t, 80*time.Millisecond, delay(cfg, 0, 0))
	require.InDelta(t, float64(120*time.Millisecond), float64(delay(cfg, 0, 0.999999)), float64(time.Microsecond))
	seen := map[time.Duration]bool{}
	for range 200 {
		d := Delay(cfg, 2)
		require.GreaterOrEqual(t, d, 320*time.Millisecond)
		require.LessOrEqual(t, d, 480*time.Millisecond)
		seen[d] = true
	}
	require.Greater(t, len(seen), 100, "the delays are spread, not one value")
}

func TestDelayWithAMaximumBelowTheBaseUsesTheBase(t *testing.T) {
	c := Config{BaseDelay: time.Second, Multiplier: 2, MaxDelay: time.Millisecond}
	require.Equal(t, time.Second, delay(c, 3, 0.5))
}
