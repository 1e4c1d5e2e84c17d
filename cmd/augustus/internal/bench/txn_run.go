package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/augustus-db/augustus/pkg/bft/cluster"
)

// run measures one interval of a transaction workload: the Byzantine
// callers (if any) start first and run unpaced; the correct callers run
// under the runner, closed-loop or at --rate; every replica of every group
// is scraped at the interval's ends.
func (e *txnEnv) run(ctx context.Context, w txnWorkload, rc RunConfig) (*TxnRun, error) {
	o := e.o
	nByz := byzCount(o.clients, rc.ByzantinePct)
	nCorrect := o.clients - nByz
	in := w.info()
	res := &TxnRun{
		Workload: o.workload, Shape: in.shape, Groups: len(e.c.Groups), Items: in.items, ValueSize: in.valueSize,
		MultiGroupPct: rc.MultiGroupPct, ByzantinePct: rc.ByzantinePct, Callers: o.clients, CorrectCallers: nCorrect,
		ByzantineCallers: nByz, StartedAt: time.Now().UTC(), WarmupSeconds: o.warmup.Seconds(), Mix: w.mixRow(rc),
		CallTimeoutSeconds: o.callTimeout.Seconds(), RecoveryGraceSeconds: e.grace().Seconds(),
		LoadAvgBefore: loadAvg(), CallBytesSingle: e.callBytes(w.sampleOps()), replicasPerGroup: e.c.N(),
		RateLimit: o.rate, perReplica: o.replicaCPU, machine: thisMachine().String(), build: e.h.Version,
	}
	fmt.Fprintf(e.stderr, "bench: workload %s (%s), %d groups, %d items, multi-group %d%%, %d callers (%d Byzantine), warm-up %s, measuring %s\n",
		o.workload, in.shape, len(e.c.Groups), in.items, rc.MultiGroupPct, o.clients, nByz, o.warmup, o.duration)

	var byzs []*byzCaller
	byzCtx, stopByz := context.WithCancel(ctx)
	defer stopByz()
	done := make(chan struct{})
	stopByzantine := func() {
		stopByz()
		<-done
	}
	if nByz > 0 {
		var err error
		if byzs, err = e.startByzantine(ctx, w.(abandoner), nByz, nCorrect); err != nil {
			return nil, err
		}
	}
	go func() {
		defer close(done)
		waitAll(byzCtx, byzs)
	}()
	defer stopByzantine()

	groups := make([]*cluster.Group, len(e.c.Groups))
	for i := range e.c.Groups {
		groups[i] = &e.c.Groups[i]
	}
	var before, after snapshot
	var profiles *profileRun
	r := &runner{callers: nCorrect, rate: o.rate, warmup: o.warmup, duration: o.duration, callTimeout: o.callTimeout,
		progress: o.progress, stderr: e.stderr, noResult: "outcome",
		begin: func(ctx context.Context) {
			before = takeSnapshot(ctx, groups, e.reg, txnClientCounters)
			// One directory per measured interval (multi-M-byz-B), since
			// one process measures several.
			dir := filepath.Join(o.profileDir, fmt.Sprintf("multi-%d-byz-%d", rc.MultiGroupPct, rc.ByzantinePct))
			profiles = startProfiles(ctx, e.c, groups, o, e.h, dir)
		},
		end: func(ctx context.Context, err error) {
			if err != nil {
				profiles.stop()
				return
			}
			after = takeSnapshot(ctx, groups, e.reg, txnClientCounters)
			res.Profiles = profiles.wait()
			// The Byzantine callers stop before the correct ones drain.
			stopByzantine()
		},
	}
	m, err := r.run(ctx, w, rc)
	if err != nil {
		return nil, e.rejectedRun(err)
	}
	res.fill(m)
	res.fillCPU(before, after)
	if len(byzs) > 0 {
		res.Byzantine = e.finishByzantine(ctx, byzs)
	}
	res.LoadAvgAfter = loadAvg()
	res.judge(o)
	return res, nil
}

// waitAll runs the Byzantine callers until ctx ends and waits for them.
func waitAll(ctx context.Context, byzs []*byzCaller) {
	done := make(chan struct{}, len(byzs))
	for _, bc := range byzs {
		go func() {
			defer func() { done <- struct{}{} }()
			bc.run(ctx)
		}()
	}
	for range byzs {
		<-done
	}
}
