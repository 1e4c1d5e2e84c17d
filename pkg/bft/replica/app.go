package replica

import "github.com/augustus-db/augustus/pkg/bft/host"

// The application interface and the applications live in pkg/bft/host,
// shared with the simulator; these aliases keep the replica's API whole.
type (
	// Application is the replicated state machine a group runs (DESIGN.md §3.2).
	Application = host.Application
	// Signing is implemented by applications whose results need replica signatures.
	Signing = host.Signing
	// Call is one operation of a client envelope.
	Call = host.Call
	// Reader reads the store.
	Reader = host.Reader
	// NoopApp executes nothing.
	NoopApp = host.NoopApp
	// LogApp is the append-only log test application.
	LogApp = host.LogApp
	// Metrics are the replica's augustus_bft_* metrics.
	Metrics = host.Metrics
)

// The LogApp call builders and result decoders.
var (
	LogAppend        = host.LogAppend
	LogRead          = host.LogRead
	LogLen           = host.LogLen
	DecodeLogLength  = host.DecodeLogLength
	DecodeLogEntries = host.DecodeLogEntries
)

// MaxLogValue bounds a LogApp value.
const MaxLogValue = host.MaxLogValue
