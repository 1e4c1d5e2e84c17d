package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/bft"
)

// Metrics are the replica's Prometheus metrics (augustus_bft_*).
type Metrics struct {
	View                 prometheus.Gauge
	ViewChanging         prometheus.Gauge
	LastExecuted         prometheus.Gauge
	StableCheckpoint     prometheus.Gauge
	CheckpointLag        prometheus.Gauge
	BatchSize            prometheus.Histogram
	RequestLatency       prometheus.Histogram
	PersistLatency       prometheus.Histogram
	SyncLatency          prometheus.Histogram
	ExecuteLatency       prometheus.Histogram
	StateTransferBytes   prometheus.Counter
	StateTransferResumes prometheus.Counter
	StateTransfers       *prometheus.CounterVec
	Rejected             *prometheus.CounterVec
	ViewChanges          prometheus.Counter
	NewViews             prometheus.Counter
	RequestTimeouts      prometheus.Counter
	Equivocations        prometheus.Counter
	BatchesExecuted      prometheus.Counter
	RequestsExecuted     prometheus.Counter
	CommittedFetched     prometheus.Counter
	// ReplySignatures counts the Ed25519 signatures made for replies and
	// ReplySignedMessages the messages they covered (more than one per
	// signature when a signature tree covers a round's replies).
	ReplySignatures      prometheus.Counter
	ReplySignedMessages  prometheus.Counter
	CoreDropped          *prometheus.CounterVec
	last                 bft.Stats
	coreDroppedByReason  []prometheus.Counter
	stateTransfersOK     prometheus.Counter
	stateTransfersFailed prometheus.Counter
}

// NewMetrics registers the replica's metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := func(c prometheus.Collector) {
		if reg != nil {
			reg.MustRegister(c)
		}
	}
	g := func(name, help string) prometheus.Gauge {
		m := prometheus.NewGauge(prometheus.GaugeOpts{Name: "augustus_bft_" + name, Help: help})
		f(m)
		return m
	}
	c := func(name, help string) prometheus.Counter {
		m := prometheus.NewCounter(prometheus.CounterOpts{Name: "augustus_bft_" + name, Help: help})
		f(m)
		return m
	}
	h := func(name, help string, buckets []float64) prometheus.Histogram {
		m := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "augustus_bft_" + name, Help: help, Buckets: buckets})
		f(m)
		return m
	}
	latency := prometheus.ExponentialBuckets(0.0001, 2, 18) // 100 µs .. 13 s
	m := &Metrics{
		View:                 g("view", "Current PBFT view (the target view during a view change)."),
		ViewChanging:         g("view_changing", "1 while a view change is in progress."),
		LastExecuted:         g("last_executed_seq", "Last executed sequence number."),
		StableCheckpoint:     g("stable_checkpoint_seq", "Sequence number of the last stable checkpoint (the low watermark)."),
		CheckpointLag:        g("checkpoint_lag_seqs", "Executed sequence numbers above the last stable checkpoint."),
		BatchSize:            h("batch_size_requests", "Requests per executed batch.", prometheus.ExponentialBuckets(1, 2, 12)),
		RequestLatency:       h("request_latency_seconds", "Time from a request's arrival at this replica to its reply.", latency),
		PersistLatency:       h("persist_duration_seconds", "Time to commit one round of log records (without sync; a sync job covers it).", latency),
		SyncLatency:          h("sync_duration_seconds", "Time of one sync job: the WAL sync that covers every round committed before it (group commit).", latency),
		ExecuteLatency:       h("execute_duration_seconds", "Time to execute and commit a run of batches (without sync; the next sync covers it).", latency),
		StateTransferBytes:   c("state_transfer_bytes_total", "Bytes of state received by state transfer."),
		StateTransferResumes: c("state_transfer_resumes_total", "State-transfer streams that broke and continued from another peer after the last chunk received."),
		StateTransfers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "augustus_bft_state_transfers_total",
			Help: "State transfers by outcome (installed, failed: a peer's state or stream was bad)."}, []string{"outcome"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "augustus_bft_rejected_messages_total",
			Help: "Messages and requests that failed verification, by kind."}, []string{"kind"}),
		ViewChanges:      c("view_changes_total", "View changes this replica started."),
		NewViews:         c("new_views_total", "Views entered through NEW-VIEW."),
		RequestTimeouts:  c("request_timeouts_total", "Request timers that expired (V1)."),
		Equivocations:    c("equivocations_total", "Conflicting PRE-PREPAREs seen from a primary."),
		BatchesExecuted:  c("batches_executed_total", "Batches executed."),
		RequestsExecuted: c("requests_executed_total", "Client envelopes executed."),
		CommittedFetched: c("committed_fetched_total", "Batches learned through commit certificates (catch-up)."),
		ReplySignatures:  c("reply_signatures_total", "Ed25519 signatures made for replies (one per signature tree)."),
		ReplySignedMessages: c("reply_signed_messages_total",
			"Reply messages signed (votes, acknowledgements); divided by augustus_bft_reply_signatures_total, the messages per signature tree."),
		CoreDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "augustus_bft_core_dropped_messages_total",
			Help: "Messages the core dropped after verification, by reason."}, []string{"reason"}),
	}
	f(m.StateTransfers)
	f(m.Rejected)
	f(m.CoreDropped)
	for _, name := range bft.DropReasonNames {
		m.coreDroppedByReason = append(m.coreDroppedByReason, m.CoreDropped.WithLabelValues(name))
	}
	m.stateTransfersOK = m.StateTransfers.WithLabelValues("installed")
	m.stateTransfersFailed = m.StateTransfers.WithLabelValues("failed")
	return m
}

// observe exports the node's state and the growth of its counters.
func (m *Metrics) observe(n *bft.Node) {
	v, changing := n.View()
	m.View.Set(float64(v))
	if changing {
		m.ViewChanging.Set(1)
	} else {
		m.ViewChanging.Set(0)
	}
	m.LastExecuted.Set(float64(n.LastExecuted()))
	m.StableCheckpoint.Set(float64(n.LowWatermark()))
	m.CheckpointLag.Set(float64(n.LastExecuted()) - float64(n.LowWatermark()))
	st := n.Stats()
	add := func(c prometheus.Counter, now, before uint64) {
		if now > before {
			c.Add(float64(now - before))
		}
	}
	add(m.ViewChanges, st.ViewChanges, m.last.ViewChanges)
	add(m.NewViews, st.NewViews, m.last.NewViews)
	add(m.RequestTimeouts, st.RequestTimeouts, m.last.RequestTimeouts)
	add(m.Equivocations, st.Equivocations, m.last.Equivocations)
	add(m.BatchesExecuted, st.BatchesExecuted, m.last.BatchesExecuted)
	add(m.RequestsExecuted, st.RequestsExecuted, m.last.RequestsExecuted)
	add(m.CommittedFetched, st.CommittedFetched, m.last.CommittedFetched)
	for i, c := range m.coreDroppedByReason {
		add(c, st.Dropped[i], m.last.Dropped[i])
	}
	m.last = st
}
