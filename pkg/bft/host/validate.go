package host

import (
	"crypto/sha256"
	"sync"

	"github.com/augustus-db/augustus/pkg/bft/envelope"
)

// Validation of client calls (DESIGN.md §3.2). One envelope carries the
// calls of many callers — a gateway's sessions, a driver's goroutines — so
// an invalid call must not fail the others: the request is valid at the PBFT
// level when it is well-formed (its signature, size and envelope encoding
// are checked by bft.Checker), and each call the application's Validate
// rejects executes as a rejection of that call alone, with the reason as its
// result (envelope.EncodeOutcomes). Validate is a pure function of the call,
// so every correct replica rejects the same calls with the same reasons and
// the client accepts the rejection on f+1 matching replies.
//
// Validate runs where the request is checked — on the transport's stream
// goroutines, in parallel, off the event loop — and its verdict is cached by
// the call's digest, so execution looks it up instead of validating again
// (certificates make Validate cost signature checks). A verdict missing from
// the cache (evicted, or the request arrived in a batch this replica learned
// by catch-up) is recomputed: the result is the same either way.

// ValidationCache remembers Validate's verdict per call digest. Safe for
// concurrent use; bounded (it starts over when full).
type ValidationCache struct {
	mu  sync.Mutex
	max int
	m   map[[32]byte]string
}

// NewValidationCache returns a cache of about n verdicts (0: 64K).
func NewValidationCache(n int) *ValidationCache {
	if n <= 0 {
		n = 1 << 16
	}
	return &ValidationCache{max: n, m: make(map[[32]byte]string)}
}

// Verdict returns "" if app accepts call, or the reason it rejects it.
func (c *ValidationCache) Verdict(app Application, call []byte) string {
	var key [32]byte
	if c != nil {
		key = sha256.Sum256(call)
		c.mu.Lock()
		v, ok := c.m[key]
		c.mu.Unlock()
		if ok {
			return v
		}
	}
	var reason string
	if err := app.Validate(call); err != nil {
		reason = err.Error()
		if reason == "" {
			reason = "invalid call"
		}
	}
	if c != nil {
		c.mu.Lock()
		if len(c.m) >= c.max {
			clear(c.m)
		}
		c.m[key] = reason
		c.mu.Unlock()
	}
	return reason
}

// ValidateEnvelope is the runtime's stateless check of a request's payload
// (bft.CheckerConfig.Validate): the envelope must decode; each call's verdict
// is computed (and cached) now, in parallel with other requests, but an
// invalid call does not make the request invalid (see above).
func ValidateEnvelope(app Application, cache *ValidationCache, payload []byte) error {
	calls, err := envelope.DecodeCalls(payload)
	if err != nil {
		return err
	}
	for _, c := range calls {
		cache.Verdict(app, c)
	}
	return nil
}
