package transport

import (
	"math/rand/v2"
	"time"
)

// Backoff is the exponential back-off with jitter between attempts to
// (re)open a stream.
type Backoff struct {
	// Min is the first delay (default 50ms); each failure doubles it up to
	// Max (default 5s). The actual wait is uniform in [d/2, d).
	Min, Max time.Duration
}

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

// delay returns the wait before attempt number attempt (0-based).
func (b Backoff) delay(attempt int) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}
