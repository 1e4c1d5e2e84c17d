package coord

// Nonces and the watermark (W1, W3, K3).
//
// The client numbers its transactions with consecutive nonces. Its stated
// watermark — carried by every transaction it sends — is the lowest nonce
// not yet finished: terminated in every involved group, and, for a
// multi-group update, proven to every group that voted commit (W2, K3).
// Groups raise their copy of it from each transaction before the window
// check (W1), so a nonce n is sent only while n < watermark + P (W3): then
// no group ever answers a correct client's transaction with E2's window
// abort, and no group forgets a record another group may still need.

// canLaunch reports whether the next nonce may be sent now.
func (c *Core) canLaunch() bool {
	return c.ready && c.nextNonce-c.watermark < c.cfg.Limits.Window
}

// takeNonce assigns the next nonce to a run.
func (c *Core) takeNonce(r *run) {
	r.nonce = c.nextNonce
	c.nextNonce++
	c.unfinished[r.nonce] = r
	c.cfg.Metrics.unfinished(len(c.unfinished))
}

// nonceFinished records that run r (the owner's) owes nothing more to any
// group: the watermark may pass its nonce — only now, after every
// acknowledgement and proof confirmation (K3), so no later transaction of
// this client can reach a group before the proof does.
func (c *Core) nonceFinished(r *run) {
	if c.unfinished[r.nonce] != r {
		return
	}
	delete(c.unfinished, r.nonce)
	c.cfg.Metrics.unfinished(len(c.unfinished))
	if o := c.cfg.Observer; o != nil {
		o.Finished(r.id, r.nonce)
	}
	for c.watermark < c.nextNonce {
		if _, ok := c.unfinished[c.watermark]; ok {
			break
		}
		c.watermark++
	}
	c.drainWaiting()
}

// drainWaiting launches waiting transactions while nonces are free, in the
// order they started waiting.
func (c *Core) drainWaiting() {
	for len(c.waiting) > 0 && c.canLaunch() {
		r := c.waiting[0]
		c.waiting[0] = nil
		c.waiting = c.waiting[1:]
		r.waitingNonce = false
		r.launch()
	}
}

// wait queues a request until a nonce is free.
func (c *Core) wait(r *request) {
	if r.waitingNonce {
		return
	}
	r.waitingNonce = true
	if c.ready {
		c.cfg.Metrics.windowWait()
	}
	c.waiting = append(c.waiting, r)
}

// unwait removes a request from the queue (it was cancelled).
func (c *Core) unwait(r *request) {
	if !r.waitingNonce {
		return
	}
	r.waitingNonce = false
	for i, w := range c.waiting {
		if w == r {
			c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
			return
		}
	}
}
