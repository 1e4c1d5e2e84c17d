package host

import (
	"errors"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/storage"
)

// Call is one operation of a client envelope (pbft.md C1): clients pack the
// calls of many callers into one signed request; the runtime unpacks them.
type Call struct {
	Client bft.ClientID
	// Timestamp is the envelope's timestamp; Index the call's position in it.
	Timestamp uint64
	Index     int
	Payload   []byte
}

// Application is the replicated state machine a group runs (DESIGN.md
// §3.2). The transaction engine implements it; NoopApp is a trivial one.
type Application interface {
	// Validate checks one call without state: decoding, size limits, the
	// certificates it carries. It is deterministic and safe for concurrent
	// use; the runtime calls it before the primary batches a request and
	// before a backup prepares a batch (pbft.md N2); its verdict is cached
	// for the execution (ValidationCache). An invalid call executes as a
	// rejection of that call alone (validate.go).
	Validate(call []byte) error
	// Execute executes the calls of one committed batch in order,
	// deterministically, reading and writing the replicated keyspaces it owns
	// (UserData, Metadata, TxnRecords) through w, and returns one result per
	// call. The runtime commits w together with the client table and the
	// sequence number. An error is a local fault: the replica stops rather
	// than diverge.
	Execute(seq bft.SeqNum, calls []Call, w *storage.Batch) ([][]byte, error)
	// Restored tells the application that the store changed under it — at
	// start-up and after a state transfer installed a checkpoint — so it
	// rebuilds whatever it keeps in memory (the lock table) from r.
	Restored(r Reader) error
}

// Signing is implemented by an Application some of whose results must be
// signed by the replica's key (DESIGN.md §3.2; txn.md E9: multi-group votes
// and acknowledgements). SignBytes is a pure function of one call's result:
// non-nil means "sign these bytes". The runtime signs after execution, off
// the event loop, also whenever it re-sends a cached reply, and sends the
// signature beside the result (bftpb.Reply.Signatures), never in it: the
// result is replicated state and must be the same at every replica.
// Clients verify with the same function.
type Signing interface {
	SignBytes(result []byte) []byte
}

// The state digest, checkpoint snapshots and their restoration (Digest,
// Snapshot and Restore of DESIGN.md §3.2) are the runtime's: the store's
// LtHash covers every replicated keyspace, Snapshot.Export streams them and
// Engine.InstallCheckpoint restores them, after which Restored is called.

var errCallTooLarge = errors.New("host: call exceeds the size limit")

// NoopApp executes nothing: every call returns an empty result. It is what
// `augustus bench --workload noop` measures: the cost of ordering.
type NoopApp struct {
	// MaxCall bounds a call's size (0: no bound).
	MaxCall int
}

// Validate implements Application.
func (a NoopApp) Validate(call []byte) error {
	if a.MaxCall > 0 && len(call) > a.MaxCall {
		return errCallTooLarge
	}
	return nil
}

// Execute implements Application.
func (NoopApp) Execute(_ bft.SeqNum, calls []Call, _ *storage.Batch) ([][]byte, error) {
	return make([][]byte, len(calls)), nil
}

// Restored implements Application.
func (NoopApp) Restored(Reader) error { return nil }
