package partition

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/txn"
)

// Metrics are the engine's Prometheus metrics. Labels take bounded values
// only (kinds, decisions, reasons and codes; never keys or ids).
type Metrics struct {
	// Votes counts votes by transaction kind, vote and abort reason.
	Votes *prometheus.CounterVec
	// Terminations counts pending transactions terminated, by kind and
	// outcome.
	Terminations *prometheus.CounterVec
	// Refusals counts refusals by code.
	Refusals *prometheus.CounterVec
	// Pending is the number of pending transactions (E6).
	Pending prometheus.Gauge
	// Queued is the number of queued metadata transactions (M4).
	Queued prometheus.Gauge
	// LockHolders is the lock table's size: transactions holding locks.
	LockHolders prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Votes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_votes_total",
			Help: "Votes cast, by transaction kind, vote and abort reason.",
		}, []string{"kind", "vote", "reason"}),
		Terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_terminations_total",
			Help: "Pending transactions terminated, by transaction kind and outcome.",
		}, []string{"kind", "outcome"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_txn_refusals_total",
			Help: "Calls refused at execution, by code.",
		}, []string{"code"}),
		Pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "augustus_txn_pending_transactions",
			Help: "Transactions pending at this replica.",
		}),
		Queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "augustus_txn_queued_transactions",
			Help: "Metadata transactions queued behind pending data transactions.",
		}),
		LockHolders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "augustus_txn_lock_table_holders",
			Help: "Transactions holding locks in the lock table.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Votes, m.Terminations, m.Refusals, m.Pending, m.Queued, m.LockHolders)
	}
	return m
}

func kindOf(r *record) txn.Kind {
	switch {
	case r.meta:
		return txn.KindMeta
	case !r.multi:
		return txn.KindSingle
	case !r.update:
		return txn.KindMultiRead
	}
	return txn.KindMultiUpdate
}

func (m *Metrics) vote(k txn.Kind, d txn.Decision, reason txn.Reason) {
	if m != nil {
		m.Votes.WithLabelValues(k.String(), d.String(), reason.String()).Inc()
	}
}

func (m *Metrics) terminated(k txn.Kind, d txn.Decision) {
	if m != nil {
		m.Terminations.WithLabelValues(k.String(), d.String()).Inc()
	}
}

func (m *Metrics) refused(c txn.RefusalCode) {
	if m != nil {
		m.Refusals.WithLabelValues(c.String()).Inc()
	}
}

func (m *Metrics) gauges(pending, queued, holders int) {
	if m != nil {
		m.Pending.Set(float64(pending))
		m.Queued.Set(float64(queued))
		m.LockHolders.Set(float64(holders))
	}
}
