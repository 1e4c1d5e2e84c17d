package coord

import (
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
)

// Env is what the coordinator core needs from its host. Every callback runs
// on the core's own thread of control (production: the Client's goroutine;
// simulation: the scheduler), never concurrently with another call into the
// Core.
type Env interface {
	// Invoke sends one call to group g; done is called once with the result
	// f+1 replicas matched (and the signatures that came with it), or an
	// error (e.g. *client.RejectedError). done must not be called from
	// inside Invoke.
	Invoke(g bft.GroupID, payload []byte, done func(client.Result))
	// AfterFunc calls f after d; cancel stops it if it has not run.
	AfterFunc(d time.Duration, f func()) (cancel func())
	// Now returns the current time.
	Now() time.Time
}
