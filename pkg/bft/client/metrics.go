package client

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the group client's metrics (augustus_client_*).
type Metrics struct {
	EnvelopesSent   prometheus.Counter
	Retransmissions prometheus.Counter
	BadReplies      prometheus.Counter
	EnvelopeCalls   prometheus.Histogram
	EnvelopeLatency prometheus.Histogram
	CallLatency     prometheus.Histogram
}

// NewMetrics registers the client metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	latency := prometheus.ExponentialBuckets(0.0001, 2, 18)
	m := &Metrics{
		EnvelopesSent:   prometheus.NewCounter(prometheus.CounterOpts{Name: "augustus_client_envelopes_sent_total", Help: "Signed envelopes sent."}),
		Retransmissions: prometheus.NewCounter(prometheus.CounterOpts{Name: "augustus_client_retransmissions_total", Help: "Envelopes re-sent to every replica after a timeout."}),
		BadReplies:      prometheus.NewCounter(prometheus.CounterOpts{Name: "augustus_client_bad_replies_total", Help: "Replies whose MAC, addressing or result signatures did not verify."}),
		EnvelopeCalls:   prometheus.NewHistogram(prometheus.HistogramOpts{Name: "augustus_client_envelope_size_calls", Help: "Calls per envelope (the size of each envelope sent, in calls).", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		EnvelopeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "augustus_client_envelope_latency_seconds", Help: "From sending an envelope to accepting its result.", Buckets: latency}),
		CallLatency:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "augustus_client_call_latency_seconds", Help: "From Invoke to its result.", Buckets: latency}),
	}
	if reg != nil {
		reg.MustRegister(m.EnvelopesSent, m.Retransmissions, m.BadReplies, m.EnvelopeCalls, m.EnvelopeLatency, m.CallLatency)
	}
	return m
}
