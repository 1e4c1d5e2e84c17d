package auth

import (
	"crypto/sha256"
	"sync"
)

// sigKey names one (public key, message, signature) triple: the SHA-256 of
// the three. Verification is a deterministic function of the triple, and
// SHA-256 binds the key to it, so a triple found in the cache was verified
// valid before.
type sigKey [sha256.Size]byte

var sigScratch = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// makeSigKey returns the cache key of (pub, msg, sig). The lengths of pub
// and sig are fixed by the callers (checked before), so the concatenation
// is unambiguous.
func makeSigKey(pub, msg, sig []byte) sigKey {
	bp := sigScratch.Get().(*[]byte)
	b := append(append(append((*bp)[:0], pub...), sig...), msg...)
	k := sigKey(sha256.Sum256(b))
	if cap(b) <= 1<<16 {
		*bp = b[:0]
		sigScratch.Put(bp)
	}
	return k
}

// sigCache remembers signatures verified valid, so that a message or a
// certificate is verified once however often it arrives: retransmissions,
// PREPAREs and COMMITs again inside the certificates of VIEW-CHANGEs and
// catch-up, VIEW-CHANGEs again inside a NEW-VIEW, a client's request again
// inside a PRE-PREPARE. Only valid signatures are remembered (an invalid one
// costs its sender a verification each time, as before). It holds at most
// capacity keys and forgets the oldest first; it is safe for concurrent use
// and allocates nothing once full.
type sigCache struct {
	mu   sync.Mutex
	m    map[sigKey]struct{}
	ring []sigKey
	next int
	full bool
}

// DefaultSignatureCache is the number of verified signatures a Verifier
// remembers: more than a log window's worth of certificates.
const DefaultSignatureCache = 1 << 13

func newSigCache(capacity int) *sigCache {
	return &sigCache{m: make(map[sigKey]struct{}, capacity), ring: make([]sigKey, capacity)}
}

func (c *sigCache) has(k sigKey) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	_, ok := c.m[k]
	c.mu.Unlock()
	return ok
}

func (c *sigCache) add(k sigKey) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	if c.full {
		delete(c.m, c.ring[c.next])
	}
	c.ring[c.next] = k
	c.m[k] = struct{}{}
	c.next++
	if c.next == len(c.ring) {
		c.next, c.full = 0, true
	}
}

// len returns the number of remembered signatures.
func (c *sigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
