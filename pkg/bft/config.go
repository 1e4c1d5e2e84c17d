package bft

import (
	"errors"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft/internal/quorum"
)

// Config configures one replica's core. Durations are in ticks; the host
// decides what a tick is (10 ms in production).
type Config struct {
	// ClusterID and Group are part of every signed byte string, so signatures
	// of one cluster or group are worthless in another.
	ClusterID string
	Group     GroupID
	// ID is this replica; N = 3F+1 replicas in the group. With n = 3f+1, two
	// quorums of 2f+1 share f+1 replicas, at least one correct, and a quorum
	// is available with f replicas silent.
	ID ReplicaID
	N  int
	F  int

	// CheckpointInterval is K: a checkpoint after every K sequence numbers (G1).
	// Checkpoints are also where the host saves the state it serves for
	// state transfer (G3).
	CheckpointInterval SeqNum
	// LogWindow is L, a multiple of K and at least 2K (Validate): H = h + L
	// (G2). With L >= 2K the group goes on ordering the next K batches while
	// the checkpoint at h+K collects its 2f+1 CHECKPOINTs; with L = K the
	// primary would stall at every checkpoint.
	LogWindow SeqNum

	// PipelineWindow is the number of batches the primary keeps in flight
	// (pre-prepared, not yet executed) before it holds requests back (N1).
	PipelineWindow int
	// MaxBatchRequests and MaxBatchBytes bound a batch (N1); backups check
	// the same limits (CheckerConfigFrom, N2).
	MaxBatchRequests int
	MaxBatchBytes    int
	// MaxRequestBytes bounds one client request's payload.
	MaxRequestBytes int
	// ClientWindow is W: envelopes a client may have outstanding (C2).
	ClientWindow uint64
	// MaxPendingRequests bounds the requests a replica holds unexecuted, so
	// a flood of valid requests cannot grow memory without bound.
	MaxPendingRequests int

	// RequestTimeout is the request timer of V1, in ticks, doubled like T
	// after view changes without progress (V6).
	RequestTimeout int
	// ViewChangeTimeout is T of V6, in ticks; it doubles on each successive
	// view change without progress, up to MaxViewChangeTimeout.
	ViewChangeTimeout    int
	MaxViewChangeTimeout int
	// StatusInterval: every so many ticks a replica broadcasts a Status hint
	// and retransmits messages of slots that made no progress.
	StatusInterval int
	// MaxFutureViews bounds how far above the current view messages are
	// buffered (N4). Messages of a view a little ahead are common while a
	// view change completes; the bound keeps a faulty replica from making
	// the log hold phases of arbitrarily many views.
	MaxFutureViews View
	// MaxFetchBatches bounds the committed batches sent in answer to one Fetch
	// (G3).
	MaxFetchBatches int

	// Signer signs this replica's messages; it must be deterministic (P3).
	Signer Signer
	// Logger receives debug output; nil discards it.
	Logger Logger
}

// DefaultConfig returns production defaults for replica id of a group of
// 3f+1. The caller fills ClusterID, Group and Signer. With 10 ms ticks the
// request timer and T are 2 s (T growing to at most 64 s), and Status goes
// out every 200 ms.
func DefaultConfig(id ReplicaID, f int) Config {
	return Config{
		ID:                   id,
		N:                    3*f + 1,
		F:                    f,
		CheckpointInterval:   128,
		LogWindow:            256,
		PipelineWindow:       4,
		MaxBatchRequests:     512,
		MaxBatchBytes:        4 << 20,
		MaxRequestBytes:      1 << 20,
		ClientWindow:         16,
		MaxPendingRequests:   100000,
		RequestTimeout:       200,
		ViewChangeTimeout:    200,
		MaxViewChangeTimeout: 6400,
		StatusInterval:       20,
		MaxFutureViews:       4,
		MaxFetchBatches:      64,
	}
}

// Validate checks the configuration and returns the first problem found.
func (c *Config) Validate() error {
	if _, err := quorum.New(c.N, c.F); err != nil {
		return fmt.Errorf("bft: config: %w", err)
	}
	// quorum.Set holds replica ids 0..63.
	if c.N > quorum.MaxReplicas {
		return fmt.Errorf("bft: config: n=%d exceeds %d replicas", c.N, quorum.MaxReplicas)
	}
	if int(c.ID) >= c.N {
		return fmt.Errorf("bft: config: replica id %d not in 0..%d", c.ID, c.N-1)
	}
	// G2: H falls on a checkpoint, and leaves room for the next checkpoint to
	// form (see LogWindow).
	if c.CheckpointInterval == 0 || c.LogWindow == 0 || c.LogWindow%c.CheckpointInterval != 0 || c.LogWindow < 2*c.CheckpointInterval {
		return fmt.Errorf("bft: config: log window L=%d must be a multiple of the checkpoint interval K=%d and at least 2K", c.LogWindow, c.CheckpointInterval)
	}
	switch {
	case c.PipelineWindow < 1:
		return errors.New("bft: config: pipeline window must be at least 1")
	case c.MaxBatchRequests < 1 || c.MaxBatchBytes < 1:
		return errors.New("bft: config: batch limits must be positive")
	// A request larger than a batch could never be ordered.
	case c.MaxRequestBytes < 1 || c.MaxRequestBytes > c.MaxBatchBytes:
		return errors.New("bft: config: max request bytes must be positive and at most the max batch bytes")
	case c.ClientWindow < 1:
		return errors.New("bft: config: client window must be at least 1")
	case c.MaxPendingRequests < 1:
		return errors.New("bft: config: max pending requests must be positive")
	case c.RequestTimeout < 1 || c.ViewChangeTimeout < 1 || c.MaxViewChangeTimeout < c.ViewChangeTimeout:
		return errors.New("bft: config: timeouts must be positive and max view change timeout at least the view change timeout")
	case c.StatusInterval < 1:
		return errors.New("bft: config: status interval must be positive")
	case c.MaxFetchBatches < 1:
		return errors.New("bft: config: max fetch batches must be positive")
	case c.Signer == nil:
		return errors.New("bft: config: a signer is required")
	}
	return nil
}

// primaryOf returns the primary of view v. The primary rotates with the
// view, so a view change always replaces it, and among any f+1 consecutive
// views one has a correct primary.
func (c *Config) primaryOf(v View) ReplicaID { return ReplicaID(uint64(v) % uint64(c.N)) }

// PrimaryOf returns the primary of view v in a group of n replicas.
func PrimaryOf(v View, n int) ReplicaID { return ReplicaID(uint64(v) % uint64(n)) }

// Logger is the tiny logging interface of the core; output goes to the
// host's structured logger or, in tests, to a buffer.
type Logger interface {
	Debugf(format string, args ...any)
	Warnf(format string, args ...any)
}

type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Warnf(string, ...any)  {}
