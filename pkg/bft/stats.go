package bft

// Drop reasons counted in Stats.Dropped. Drops are not errors: faulty
// peers, reordering and retransmission all produce them, and the counts
// show which rule turned a message away.
const (
	dropInvalid    = iota // malformed, or from ourselves
	dropWrongView         // not for the current view (or beyond the buffer)
	dropWatermark         // outside (h, H]
	dropConflict          // a second PRE-PREPARE for (v, s) with another digest, or a conflicting vote
	dropDuplicate         // already have it
	dropNotPrimary        // a PRE-PREPARE or NEW-VIEW from a replica that is not the primary
	dropStale             // about state we already passed
	dropRequest           // a request refused (window, capacity)
	numDropReasons
)

// DropReasonNames names the drop reasons, in index order.
var DropReasonNames = [numDropReasons]string{"invalid", "wrong_view", "watermark", "conflict", "duplicate", "not_primary", "stale", "request"}

// Stats are the core's counters; drivers export them as metrics. They only
// grow, and are not persisted.
type Stats struct {
	Dropped           [numDropReasons]uint64
	Equivocations     uint64 // conflicting PRE-PREPAREs seen from a primary
	RequestTimeouts   uint64
	ViewChanges       uint64 // view changes started
	NewViews          uint64 // views entered through NEW-VIEW
	BatchesProposed   uint64
	RequestsProposed  uint64
	BatchesExecuted   uint64
	RequestsExecuted  uint64
	StableCheckpoints uint64
	StateTransfers    uint64
	Fetches           uint64 // catch-up fetches sent
	CommittedFetched  uint64 // batches learned through commit certificates
	// NewViewsAboveExecuted counts views entered whose NEW-VIEW's min-s was
	// above the last executed sequence number: the window in which a
	// backup must refuse PRE-PREPAREs at or below min-s (V5, G2).
	NewViewsAboveExecuted uint64
}
