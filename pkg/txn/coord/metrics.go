package coord

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Metrics are the client library's Prometheus metrics. The core only counts;
// the process exports (DESIGN.md §9). Labels take bounded values only.
type Metrics struct {
	// Transactions counts transactions completed for callers, by kind and
	// outcome ("committed", an abort reason, "rejected", "canceled").
	Transactions *prometheus.CounterVec
	// Attempts counts transactions sent as owner, by kind (every retry is
	// one).
	Attempts *prometheus.CounterVec
	// Retries counts retries, by the reason that caused them (K1, K5).
	Retries *prometheus.CounterVec
	// Recoveries counts recoveries of other owners' transactions (K4), by
	// result: "committed", "aborted", "gone" (no record at the naming group:
	// already terminated and forgotten), "raced" (its owner or another
	// client finished it meanwhile), "failed".
	Recoveries *prometheus.CounterVec
	// Refreshes counts partition-map refreshes (K1).
	Refreshes prometheus.Counter
	// Latency observes the time from start to outcome, by kind.
	Latency *prometheus.HistogramVec
	// Termination observes the time from the outcome to the moment every
	// group acknowledged it and confirmed the proof (K3), by kind.
	Termination *prometheus.HistogramVec
	// WindowWaits counts transactions that waited for a nonce because P
	// were unfinished (W3).
	WindowWaits prometheus.Counter
	// Unfinished is the number of the client's own transactions not yet
	// terminated and proven everywhere.
	Unfinished prometheus.Gauge
	// Anomalies counts answers a correct group never gives (a refused
	// certificate, a result naming another transaction), by kind.
	Anomalies *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := prometheus.ExponentialBuckets(0.0005, 2, 16)
	m := &Metrics{
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_client_transactions_total",
			Help: "Transactions completed for callers, by kind and outcome.",
		}, []string{"kind", "outcome"}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_client_attempts_total",
			Help: "Transactions sent as owner (each retry is one), by kind.",
		}, []string{"kind"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_client_retries_total",
			Help: "Retries, by the abort reason that caused them.",
		}, []string{"reason"}),
		Recoveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_client_recoveries_total",
			Help: "Recoveries of other owners' pending transactions, by result.",
		}, []string{"result"}),
		Refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_txn_client_map_refreshes_total",
			Help: "Partition map refreshes after stale-metadata or wrong-groups votes.",
		}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "augustus_txn_client_latency_seconds", Buckets: buckets,
			Help: "Time from start to outcome, retries included, by kind.",
		}, []string{"kind"}),
		Termination: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "augustus_txn_client_termination_seconds", Buckets: buckets,
			Help: "Time from outcome to acknowledgement and proof in every group, by kind.",
		}, []string{"kind"}),
		WindowWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_txn_client_window_waits_total",
			Help: "Transactions that waited for a nonce: P of the client's transactions were unfinished.",
		}),
		Unfinished: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "augustus_txn_client_unfinished_transactions",
			Help: "The client's transactions not yet terminated and proven in every group.",
		}),
		Anomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_client_anomalies_total",
			Help: "Answers no correct group gives, by kind.",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.Transactions, m.Attempts, m.Retries, m.Recoveries, m.Refreshes, m.Latency,
			m.Termination, m.WindowWaits, m.Unfinished, m.Anomalies)
	}
	return m
}

// The helpers below are nil-safe: a Core without metrics counts nothing.

func (m *Metrics) transaction(k txn.Kind, outcome string, seconds float64) {
	if m == nil {
		return
	}
	m.Transactions.WithLabelValues(k.String(), outcome).Inc()
	if seconds >= 0 {
		m.Latency.WithLabelValues(k.String()).Observe(seconds)
	}
}

func (m *Metrics) attempt(k txn.Kind) {
	if m != nil {
		m.Attempts.WithLabelValues(k.String()).Inc()
	}
}

func (m *Metrics) retry(reason string) {
	if m != nil {
		m.Retries.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) recovery(result string) {
	if m != nil {
		m.Recoveries.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) refresh() {
	if m != nil {
		m.Refreshes.Inc()
	}
}

func (m *Metrics) terminated(k txn.Kind, seconds float64) {
	if m != nil {
		m.Termination.WithLabelValues(k.String()).Observe(seconds)
	}
}

func (m *Metrics) windowWait() {
	if m != nil {
		m.WindowWaits.Inc()
	}
}

func (m *Metrics) unfinished(n int) {
	if m != nil {
		m.Unfinished.Set(float64(n))
	}
}

func (m *Metrics) anomaly(kind string) {
	if m != nil {
		m.Anomalies.WithLabelValues(kind).Inc()
	}
}
