package host

import (
	"context"
	"fmt"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/envelope"
	"github.com/augustus-db/augustus/pkg/storage"
)

// RunExecutions executes an execution job (N7, P2): per run of batches one
// indexed storage batch holding the application's writes, the client-table
// changes (C2) and the applied sequence number, committed atomically without
// a sync of its own (the loop's next WAL sync covers it; durable.go says why
// that keeps P2 and what a power cut can lose), split after each checkpoint
// so that the checkpoint's digest and snapshot are exactly the state after
// that batch (G1; saving the checkpoint syncs the WAL). The Executor calls it
// off the loop; it touches only the store, the application and the
// snapshots. It also runs a sync job (Job.Sync).
func (l *Loop) RunExecutions(job *Job) *JobResult {
	if job.Sync {
		return l.runSync(job)
	}
	start := l.now()
	exs := job.Executions
	out := &JobResult{Job: job, Results: make([][][]byte, len(exs)), Digests: make([][]byte, len(exs))}
	var b *storage.Batch
	defer func() {
		if b != nil {
			_ = b.Close()
		}
	}()
	for i := range exs {
		ex := &exs[i]
		if b == nil {
			b = l.engine.NewIndexedBatch()
		}
		res, err := l.apply(ex, b)
		if err != nil {
			out.Err = err
			return out
		}
		out.Results[i] = res
		if l.metrics != nil {
			l.metrics.BatchSize.Observe(float64(len(ex.Batch.GetRequests())))
		}
		if !ex.Checkpoint && i != len(exs)-1 {
			continue
		}
		if err := l.engine.Commit(b, false); err != nil {
			out.Err = fmt.Errorf("host: commit executed batches: %w", err)
			return out
		}
		_ = b.Close()
		b = nil
		if ex.Checkpoint {
			sum, err := l.engine.Sum()
			if err != nil {
				out.Err = fmt.Errorf("host: state digest: %w", err)
				return out
			}
			out.Digests[i] = sum[:]
			if err := l.snaps.save(ex.Seq); err != nil {
				out.Err = fmt.Errorf("host: save checkpoint: %w", err)
				return out
			}
		}
	}
	if l.metrics != nil {
		l.observeSince(l.metrics.ExecuteLatency, start)
	}
	return out
}

// apply executes one batch into b: the application's calls, then the
// client table and the applied seq. It returns one result per request.
func (l *Loop) apply(ex *bft.Execution, b *storage.Batch) ([][]byte, error) {
	// Decode every envelope first, so the calls slice is allocated once.
	decoded := make([][][]byte, len(ex.Execute))
	total := 0
	for i, req := range ex.Execute {
		payloads, err := envelope.DecodeCalls(req.Payload)
		if err != nil {
			// Impossible for a request that passed the checker; every correct
			// replica sees the same bytes, so this stays deterministic.
			continue
		}
		decoded[i] = payloads
		total += len(payloads)
	}
	// Calls the application's Validate rejects do not execute: each gets its
	// reason as its result (validate.go), the others run as usual.
	calls := make([]Call, 0, total)
	executed := make([]int, len(ex.Execute)) // calls of each request that run
	var rejected [][]string                  // per request, nil if none of its calls is rejected
	for i, req := range ex.Execute {
		client := bft.ClientID(req.Client)
		for j, p := range decoded[i] {
			if reason := l.validation.Verdict(l.app, p); reason != "" {
				if rejected == nil {
					rejected = make([][]string, len(ex.Execute))
				}
				if rejected[i] == nil {
					rejected[i] = make([]string, len(decoded[i]))
				}
				rejected[i][j] = reason
				continue
			}
			calls = append(calls, Call{Client: client, Timestamp: req.Timestamp, Index: j, Payload: p})
			executed[i]++
		}
	}
	res, err := l.app.Execute(ex.Seq, calls, b)
	if err != nil {
		return nil, fmt.Errorf("host: application failed at seq %d: %w", ex.Seq, err)
	}
	if len(res) != len(calls) {
		return nil, fmt.Errorf("host: application returned %d results for %d calls at seq %d", len(res), len(calls), ex.Seq)
	}
	out := make([][]byte, len(ex.Execute))
	k := 0
	for i, c := range executed {
		var reasons []string
		if rejected != nil {
			reasons = rejected[i]
		}
		out[i] = envelope.EncodeExecuted(res[k:k+c], reasons)
		k += c
	}
	if err := writeClientUpdates(b, ex, out); err != nil {
		return nil, fmt.Errorf("host: client table: %w", err)
	}
	return out, nil
}

// Install streams the state of an install job's target into the store
// (G3). The store checks the digest against the target's certified digest
// before anything becomes visible, so a bad stream leaves the old state in
// place and the Executor can try another peer. The Executor calls it off
// the loop, after every job submitted before.
func (l *Loop) Install(ctx context.Context, t *bft.StateTarget, next func() (storage.Chunk, error)) error {
	err := l.engine.InstallCheckpoint(ctx, next, t.Digest)
	if err != nil && l.metrics != nil && ctx.Err() == nil {
		l.metrics.stateTransfersFailed.Inc()
	}
	return err
}
