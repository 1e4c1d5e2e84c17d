package transport

import (
	"time"

	"github.com/augustus-db/augustus/internal/backoff"
)

// Backoff is the exponential back-off with jitter between attempts to
// (re)open a stream, and of the gRPC channel underneath it: both use one
// configuration (Config) and one algorithm, gRPC's (internal/backoff).
type Backoff struct {
	// Min is the first delay (default 50ms); each failure doubles it up to
	// Max (default 5s). The actual wait is spread ±Jitter around it.
	Min, Max time.Duration
}

// backoffJitter is the fraction by which delays are randomized.
const backoffJitter = 0.2

func (b Backoff) withDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = 50 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Second
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	return b
}

// Config is the gRPC back-off configuration of b: what the channel's
// reconnects use, and what delay computes stream re-opens from.
func (b Backoff) Config() backoff.Config {
	return backoff.Config{BaseDelay: b.Min, Multiplier: 2, Jitter: backoffJitter, MaxDelay: b.Max}
}

// delay returns the wait before attempt number attempt (0-based).
func (b Backoff) delay(attempt int) time.Duration { return backoff.Delay(b.Config(), attempt) }
