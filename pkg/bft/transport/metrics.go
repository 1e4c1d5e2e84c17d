package transport

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Drop reasons: the bounded values of the "reason" label of
// augustus_transport_dropped_messages_total.
const (
	// DropQueueFull: a peer's or client's send queue was full; the oldest
	// queued message was evicted to make room for the newest.
	DropQueueFull = "queue_full"
	// DropTooLarge: the message exceeds the maximum message size.
	DropTooLarge = "too_large"
	// DropFault: the fault injector dropped it.
	DropFault = "fault"
	// DropPartition: the fault injector cut the link.
	DropPartition = "partition"
	// DropStreamError: the stream broke while sending it.
	DropStreamError = "stream_error"
	// DropClosed: sent after Close or after the stream ended.
	DropClosed = "closed"
	// DropUnknownPeer: Send to a replica index that is not configured.
	DropUnknownPeer = "unknown_peer"
	// DropNoClient: a reply for a client with no open stream.
	DropNoClient = "no_client"
	// DropNoBody: a received Message without a body this version knows.
	DropNoBody = "no_body"
	// DropEncode: protobuf refused to marshal the message.
	DropEncode = "encode_error"
	// DropNoClientID: a client request without a client id.
	DropNoClientID = "no_client_id"
	// DropNotBound: a reply pushed on a client stream that is not bound to
	// the reply's client (ClientConn.Send).
	DropNotBound = "not_bound"
)

// Reasons for rejecting a peer (augustus_transport_rejected_peers_total).
const (
	// RejectUnknown: PeerIdentity did not map the certificate to a replica.
	RejectUnknown = "unknown_peer"
	// RejectNoTLS: the stream did not run over TLS.
	RejectNoTLS = "no_tls"
	// RejectWrongPeer: a dialed server is another replica than configured.
	RejectWrongPeer = "wrong_peer"
	// RejectClientMismatch: a client stream carried two client ids.
	RejectClientMismatch = "client_mismatch"
	// RejectUnprovenBind: a bind request without a signature; the stream
	// stays open and unbound.
	RejectUnprovenBind = "unproven_bind"
	// RejectBadBind: a bind request whose signature does not verify for
	// the stream's challenge (a wrong key, or a bind replayed from another
	// stream or TLS session); the stream is closed.
	RejectBadBind = "bad_bind"
)

// RPC names: the values of the "rpc" label.
const (
	rpcPeer       = "peer"
	rpcClient     = "client"
	rpcFetchState = "fetch_state"
)

// Metrics are the transport's Prometheus metrics. One Metrics may be shared
// by the Peers, Server and Clients of a process.
type Metrics struct {
	sentMessages *prometheus.CounterVec
	sentBytes    *prometheus.CounterVec
	recvMessages *prometheus.CounterVec
	recvBytes    *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	reconnects   *prometheus.CounterVec
	queueMsgs    *prometheus.GaugeVec
	queueBytes   *prometheus.GaugeVec
	rejected     *prometheus.CounterVec
	decodeErrs   *prometheus.CounterVec
	handshakes   *prometheus.CounterVec
	streams      *prometheus.GaugeVec
	peerWrites   prometheus.Counter

	// Resolved per kind and reason so the hot path does no label lookups.
	sentMsgK, sentBytesK, recvMsgK, recvBytesK [numKinds]prometheus.Counter
	drops                                      map[string]prometheus.Counter
}

var dropReasons = []string{
	DropQueueFull, DropTooLarge, DropFault, DropPartition, DropStreamError, DropClosed,
	DropUnknownPeer, DropNoClient, DropNoBody, DropEncode, DropNoClientID, DropNotBound,
}

// NewMetrics builds the transport metrics and registers them with reg, which
// may be nil (metrics are then kept but not exported).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "augustus", "transport"
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		sentMessages: counter("sent_messages_total", "Messages written to a stream, by kind.", "kind"),
		sentBytes:    counter("sent_bytes_total", "Encoded bytes written to a stream, by kind.", "kind"),
		recvMessages: counter("received_messages_total", "Messages received and decoded, by kind.", "kind"),
		recvBytes:    counter("received_bytes_total", "Encoded bytes received, by kind.", "kind"),
		dropped:      counter("dropped_messages_total", "Messages dropped, by reason.", "reason"),
		reconnects:   counter("reconnects_total", "Outgoing streams re-opened after a failure, by peer.", "peer"),
		queueMsgs:    gauge("queue_messages", "Messages waiting in an outgoing queue, by peer.", "peer"),
		queueBytes:   gauge("queue_bytes", "Bytes waiting in an outgoing queue, by peer.", "peer"),
		rejected:     counter("rejected_peers_total", "Connections or streams refused because of the peer's identity, by reason.", "reason"),
		decodeErrs:   counter("decode_errors_total", "Payloads that failed to decode (the stream is closed), by rpc.", "rpc"),
		handshakes:   counter("handshake_failures_total", "Failed TLS handshakes, by side (client or server).", "side"),
		streams:      gauge("open_streams", "Open streams, by rpc and side (client or server).", "rpc", "side"),
		peerWrites: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "peer_writes_total",
			Help: "Writes on replica-to-replica streams; each carries every message queued for the peer then (a PeerBatch)."}),
	}
	for k := Kind(0); k < numKinds; k++ {
		m.sentMsgK[k] = m.sentMessages.WithLabelValues(k.String())
		m.sentBytesK[k] = m.sentBytes.WithLabelValues(k.String())
		m.recvMsgK[k] = m.recvMessages.WithLabelValues(k.String())
		m.recvBytesK[k] = m.recvBytes.WithLabelValues(k.String())
	}
	m.drops = make(map[string]prometheus.Counter, len(dropReasons))
	for _, r := range dropReasons {
		m.drops[r] = m.dropped.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{
			m.sentMessages, m.sentBytes, m.recvMessages, m.recvBytes, m.dropped, m.reconnects,
			m.queueMsgs, m.queueBytes, m.rejected, m.decodeErrs, m.handshakes, m.streams, m.peerWrites,
		} {
			reg.MustRegister(c)
		}
	}
	return m
}

func (m *Metrics) sent(k Kind, n int) {
	m.sentMsgK[k].Inc()
	m.sentBytesK[k].Add(float64(n))
}

func (m *Metrics) received(k Kind, n int) {
	m.recvMsgK[k].Inc()
	m.recvBytesK[k].Add(float64(n))
}

func (m *Metrics) drop(reason string)       { m.dropped.WithLabelValues(reason).Inc() }
func (m *Metrics) reject(reason string)     { m.rejected.WithLabelValues(reason).Inc() }
func (m *Metrics) decodeError(rpc string)   { m.decodeErrs.WithLabelValues(rpc).Inc() }
func (m *Metrics) handshakeFailed(s string) { m.handshakes.WithLabelValues(s).Inc() }
func (m *Metrics) stream(rpc, side string) prometheus.Gauge {
	return m.streams.WithLabelValues(rpc, side)
}

func peerLabel(id uint32) string { return strconv.FormatUint(uint64(id), 10) }
