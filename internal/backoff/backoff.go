package backoff

import (
	"math/rand/v2"
	"time"

	grpcbackoff "google.golang.org/grpc/backoff"
)

// Config is gRPC's back-off configuration: BaseDelay after the first
// failure, multiplied by Multiplier per further failure up to MaxDelay, then
// randomized by ±Jitter (a fraction).
type Config = grpcbackoff.Config

// Delay returns the wait before the next attempt after failures
// consecutive failures (0: the first retry). As in gRPC, the delay grows
// from BaseDelay by Multiplier up to MaxDelay and is then spread uniformly
// over [d(1-Jitter), d(1+Jitter)], so processes that failed together do not
// retry in lockstep. Unlike gRPC's, the first retry is jittered too: a group
// whose replicas all lost the same peer at once should not redial it at the
// same instant.
func Delay(c Config, failures int) time.Duration {
	return delay(c, failures, rand.Float64())
}

// delay is Delay with the random draw u in [0, 1) given.
func delay(c Config, failures int, u float64) time.Duration {
	d, maxD := float64(c.BaseDelay), float64(c.MaxDelay)
	if maxD < d {
		maxD = d
	}
	for ; failures > 0 && d < maxD; failures-- {
		d *= c.Multiplier
	}
	d = min(d, maxD)
	d *= 1 + c.Jitter*(u*2-1)
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}
