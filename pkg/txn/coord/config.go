package coord

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/txn"
	"github.com/augustus-db/augustus/pkg/txn/oracle"
)

// Config configures a Core.
type Config struct {
	// Owner is the client's id: the Ed25519 public key its group clients
	// sign envelopes with. Transactions carry it; only envelopes signed by
	// it count as the owner's (T3).
	Owner bft.ClientID
	// Keys are the cluster's replica and admin keys and signing domain; the
	// groups of the cluster are Keys.Groups().
	Keys *txn.Keys
	// Map is the partition map the client starts with (cluster.json's,
	// oracle.FromCluster), at metadata version MapVersion (K1). A stale map
	// is refreshed from the groups when a vote says so.
	Map        *oracle.Map
	MapVersion uint64
	// Limits must be the replicas' limits: Window is P, the nonces an owner
	// may have unfinished (W3); zero means txn.DefaultLimits().
	Limits txn.Limits
	// Admin, if set, is an admin key listed in cluster.json: it signs
	// metadata transactions (M5).
	Admin ed25519.PrivateKey
	// Seed seeds the back-off jitter (K5): the core's only randomness.
	Seed uint64
	// Tuning are the retry, back-off and recovery parameters.
	Tuning Tuning
	// Metrics receives counts; nil counts nothing.
	Metrics *Metrics
	// Observer, if set, is told of every transaction the core sends and
	// terminates (the transaction simulator's history recorder).
	Observer Observer
	// Logger receives protocol anomalies (a group that refuses a
	// certificate it should accept, results that name the wrong
	// transaction); nil discards.
	Logger *slog.Logger
}

// Tuning are the core's retry, back-off and recovery parameters. Zero values
// take the defaults.
type Tuning struct {
	// MaxRetries bounds the retries of a transaction that aborts on a
	// conflict (K5); Options.MaxRetries overrides it per transaction.
	// Default 8; negative: none.
	MaxRetries int
	// MaxRefreshes bounds the retries after stale-metadata and wrong-groups
	// votes (K1), each after refreshing the partition map. Default 8;
	// negative: none.
	MaxRefreshes int
	// BackoffBase and BackoffMax shape the jittered exponential back-off
	// before retry k: a uniform draw from [0, min(BackoffMax, BackoffBase·2^k)]
	// (K5, "full jitter"). Defaults 2ms and 200ms.
	BackoffBase, BackoffMax time.Duration
	// RecoveryGrace is how long a pending transaction of another owner is
	// left to its owner after f+1 replies named it before this client
	// recovers it (K4). Default 100ms.
	RecoveryGrace time.Duration
	// PollInterval is the first interval between re-deliveries of a queued
	// metadata transaction (M4); it doubles up to PollMax. Defaults 20ms and
	// 1s.
	PollInterval, PollMax time.Duration
	// MaxRecoveryPolls bounds the polls of a recovery that meets a queued
	// metadata transaction. Default 32.
	MaxRecoveryPolls int
	// RejectRetries is how often a call whose whole envelope the groups
	// rejected (its signature, size or encoding: not the call's doing) is
	// sent again, after a random delay, before the rejection counts
	// (default 3; negative: never). A call the application's validation
	// rejects fails at once: it would be rejected every time, and the
	// envelope's other calls executed (DESIGN.md §3.2).
	RejectRetries int
	// ReportAtDecision reports a multi-group transaction's outcome to the
	// caller as soon as it is decided, instead of once every group
	// acknowledged it (K3): one round trip sooner, but the caller's next
	// transaction may then conflict with the locks of this one.
	ReportAtDecision bool
}

// DefaultTuning returns the defaults.
func DefaultTuning() Tuning {
	return Tuning{
		MaxRetries: 8, MaxRefreshes: 8,
		BackoffBase: 2 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		RecoveryGrace: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond, PollMax: time.Second,
		MaxRecoveryPolls: 32, RejectRetries: 3,
	}
}

func (t Tuning) withDefaults() Tuning {
	d := DefaultTuning()
	if t.MaxRetries == 0 {
		t.MaxRetries = d.MaxRetries
	}
	if t.MaxRefreshes == 0 {
		t.MaxRefreshes = d.MaxRefreshes
	}
	if t.BackoffBase <= 0 {
		t.BackoffBase = d.BackoffBase
	}
	if t.BackoffMax <= 0 {
		t.BackoffMax = d.BackoffMax
	}
	if t.RecoveryGrace <= 0 {
		t.RecoveryGrace = d.RecoveryGrace
	}
	if t.PollInterval <= 0 {
		t.PollInterval = d.PollInterval
	}
	if t.PollMax < t.PollInterval {
		t.PollMax = max(d.PollMax, t.PollInterval)
	}
	if t.MaxRecoveryPolls <= 0 {
		t.MaxRecoveryPolls = d.MaxRecoveryPolls
	}
	if t.RejectRetries == 0 {
		t.RejectRetries = d.RejectRetries
	}
	return t
}

// Options are per-transaction options.
type Options struct {
	// MaxRetries overrides Tuning.MaxRetries for this transaction (K5); a
	// negative value means no retry.
	MaxRetries int
	// PinVersion makes the transaction declare MetadataVersion for every
	// group it involves (the cmp(metadata-version) of M2) instead of the
	// version the client holds, and report a stale-metadata abort whose
	// group shows another version to the caller instead of refreshing and
	// retrying (K1). A caller that built the operations from metadata at
	// that version — a SQL statement planned against its catalog — must
	// rebuild them, not have them re-sent: re-sent at a newer version they
	// could write rows of a schema they were not built for. The client
	// still learns the group's version and refreshes its partition map
	// before it reports the abort, so the caller's reload finds them. A
	// stale-metadata abort at the pinned version itself (a metadata
	// transaction queued there, M4) and wrong-groups aborts (T5) are
	// retried as usual: neither means the metadata moved past the pin.
	PinVersion      bool
	MetadataVersion uint64
	// Groups are the groups of a transaction that has no data operation
	// (only metadata reads, which run at every declared group, M1); default
	// the cluster's first group. Ignored otherwise: data operations are
	// routed by the partition map (K1) and metadata writes involve every
	// group (M1).
	Groups []bft.GroupID
}

// Observer is told what the core does with each transaction it sends: the
// transaction simulator records histories from it. Calls run on the core's
// thread of control.
type Observer interface {
	// Sent: this client sent transaction t (its encoding enc, id id) as the
	// owner — a new attempt or, after a restart, one it resumes (W3).
	Sent(id txn.TxnID, t *txn.Txn)
	// Decided: the outcome of t is known to this client (it holds a
	// certificate, or the owner's release decides a read-only transaction,
	// or a single group voted). recovered is set when this client decided
	// another owner's transaction (K4) from recorded votes (a recovery that
	// meets a group which can no longer vote — E2's stale nonce, second id
	// or window aborts — terminates the transaction where it is pending
	// but learns nothing of its outcome, and is not reported).
	Decided(id txn.TxnID, outcome txn.Decision, recovered bool)
	// Finished: the owner's transaction with this nonce is terminated in
	// every group and proven where W2 needs it: the watermark may pass it.
	Finished(id txn.TxnID, nonce uint64)
}

// Errors of the client library.
var (
	// ErrCanceled is what Core.Cancel gives the caller whose transaction it
	// cancels.
	ErrCanceled = errors.New("coord: canceled")
	// ErrClosed: the client is closed.
	ErrClosed = errors.New("coord: closed")
	// ErrNoAdminKey: a metadata transaction without an admin key (M5).
	ErrNoAdminKey = errors.New("coord: metadata transactions need an admin key")
	// ErrConfig: an unusable Config.
	ErrConfig = errors.New("coord: bad configuration")
	// ErrInvalid: a transaction the client refuses to send (limits, no
	// operations, unknown groups).
	ErrInvalid = errors.New("coord: invalid transaction")
	// ErrStartup: the start-up query (W3) failed.
	ErrStartup = errors.New("coord: start-up")
	// ErrNotTxnEngine: a group answered the start-up query with a reply
	// that is not the transaction engine's: its replicas run another
	// application (augustus start --app noop or log).
	ErrNotTxnEngine = errors.New("coord: the replicas do not run the transaction engine")
)

func (c *Config) check() error {
	if len(c.Owner) != txn.OwnerSize {
		return fmt.Errorf("%w: owner id of %d bytes, want %d", ErrConfig, len(c.Owner), txn.OwnerSize)
	}
	if c.Keys == nil || c.Map == nil {
		return fmt.Errorf("%w: keys and a partition map are required", ErrConfig)
	}
	for _, g := range c.Map.Groups() {
		if !c.Keys.HasGroup(g) {
			return fmt.Errorf("%w: the partition map names group %d, not in the cluster", ErrConfig, g)
		}
	}
	if c.Limits == (txn.Limits{}) {
		c.Limits = txn.DefaultLimits()
	}
	if err := c.Limits.Valid(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.Admin != nil && len(c.Admin) != ed25519.PrivateKeySize {
		return fmt.Errorf("%w: admin key of %d bytes", ErrConfig, len(c.Admin))
	}
	c.Tuning = c.Tuning.withDefaults()
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
