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

// CallsValidator is an Application that validates several calls together
// for less than one at a time — the transaction engine checks the signatures
// of every certificate an envelope carries in one batch verification.
// ValidateCalls returns one error per call, each exactly what Validate
// returns for it, so a verdict does not depend on the calls that travelled
// with it.
type CallsValidator interface {
	ValidateCalls(calls [][]byte) []error
}

// reasonOf is the verdict of Validate's error.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	if r := err.Error(); r != "" {
		return r
	}
	return "invalid call"
}

// Verdicts computes and caches the verdicts of an envelope's calls that the
// cache does not hold, together through CallsValidator when app is one.
func (c *ValidationCache) Verdicts(app Application, calls [][]byte) {
	cv, ok := app.(CallsValidator)
	if !ok || len(calls) < 2 {
		for _, call := range calls {
			c.Verdict(app, call)
		}
		return
	}
	missing := calls
	var keys [][32]byte
	if c != nil {
		missing = make([][]byte, 0, len(calls))
		for _, call := range calls {
			key := sha256.Sum256(call)
			if _, hit := c.get(key); !hit {
				missing = append(missing, call)
				keys = append(keys, key)
			}
		}
	}
	if len(missing) == 0 {
		return
	}
	errs := cv.ValidateCalls(missing)
	if c == nil {
		return
	}
	for i := range missing {
		c.put(keys[i], reasonOf(errs[i]))
	}
}

// Verdict returns "" if app accepts call, or the reason it rejects it.
func (c *ValidationCache) Verdict(app Application, call []byte) string {
	var key [32]byte
	if c != nil {
		key = sha256.Sum256(call)
		if v, ok := c.get(key); ok {
			return v
		}
	}
	reason := reasonOf(app.Validate(call))
	if c != nil {
		c.put(key, reason)
	}
	return reason
}

// get returns the verdict cached under key.
func (c *ValidationCache) get(key [32]byte) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// put caches a verdict, starting over when the cache is full.
func (c *ValidationCache) put(key [32]byte, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[key] = reason
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
	cache.Verdicts(app, calls)
	return nil
}
