package coord

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/bft/client"
	"github.com/augustus-db/augustus/pkg/txn"
)

// recorder is an Observer that keeps what the core reported.
type recorder struct {
	w        *world
	sent     []sentRec
	decided  map[txn.TxnID]txn.Decision
	finished map[txn.TxnID]time.Time
}

type sentRec struct {
	at time.Time
	id txn.TxnID
	t  *txn.Txn
}

func newRecorder(w *world) *recorder {
	return &recorder{w: w, decided: map[txn.TxnID]txn.Decision{}, finished: map[txn.TxnID]time.Time{}}
}

func (r *recorder) Sent(id txn.TxnID, t *txn.Txn) {
	r.sent = append(r.sent, sentRec{at: r.w.now, id: id, t: t})
}
func (r *recorder) Decided(id txn.TxnID, d txn.Decision, _ bool) { r.decided[id] = d }
func (r *recorder) Finished(id txn.TxnID, _ uint64)              { r.finished[id] = r.w.now }

// observe installs a recorder and metrics in a client's configuration.
func observe(rec *recorder, m *Metrics) func(*Config) {
	return func(c *Config) {
		if rec != nil {
			c.Observer = rec
		}
		c.Metrics = m
	}
}

// callsFor returns the calls of kind the groups executed for transaction id
// (from any client).
func (w *world) callsFor(kind txn.CallKind, id txn.TxnID) []callRec {
	var out []callRec
	for _, c := range w.calls {
		if c.kind != kind {
			continue
		}
		call, err := txn.DecodeCall(c.payload)
		require.NoError(w.t, err)
		if w.dom.ID(call.Txn) == id {
			out = append(out, c)
		}
	}
	return out
}

// callsBy returns the calls of kind client made.
func (w *world) callsBy(kind txn.CallKind, id bft.ClientID) []callRec {
	var out []callRec
	for _, c := range w.calls {
		if c.kind == kind && bytes.Equal([]byte(c.client), []byte(id)) {
			out = append(out, c)
		}
	}
	return out
}

// sigsOf turns a raw call's signatures into a certificate part.
func (c *wclient) sigsOf(g bft.GroupID, res client.Result) txn.GroupSigs {
	c.w.t.Helper()
	core, err := NewCore(Config{Owner: c.id, Keys: c.w.keys, Map: c.w.pmap}, (*wenv)(c))
	require.NoError(c.w.t, err)
	gs := core.groupSigs(g, res.Sigs)
	require.NotNil(c.w.t, gs, "f+1 signatures")
	return *gs
}

// record returns an owner's record of nonce at group g, or nil. A crashed
// client is inspected by a short-lived process with its key.
func (c *wclient) record(g bft.GroupID, nonce uint64) *txn.QueryRecord {
	q := c.inspector().query(g)
	for i := range q.Records {
		if q.Records[i].Nonce == nonce {
			return &q.Records[i]
		}
	}
	return nil
}

// inspector returns c, or, if c crashed, a raw process with c's key that
// goes away after one use.
func (c *wclient) inspector() *wclient {
	if len(c.cores) > 0 {
		return c
	}
	w := c.w
	x := &wclient{w: w, priv: c.priv, id: c.id, rawOnly: true}
	w.clients = append(w.clients, x)
	x.boot()
	x.onceDone = func() {
		x.crash()
		for i, cl := range w.clients {
			if cl == x {
				w.clients = append(w.clients[:i], w.clients[i+1:]...)
				break
			}
		}
	}
	return x
}

func counter(t testing.TB, m *Metrics, vec string, labels ...string) float64 {
	t.Helper()
	switch vec {
	case "transactions":
		return testutil.ToFloat64(m.Transactions.WithLabelValues(labels...))
	case "retries":
		return testutil.ToFloat64(m.Retries.WithLabelValues(labels...))
	case "recoveries":
		return testutil.ToFloat64(m.Recoveries.WithLabelValues(labels...))
	case "anomalies":
		return testutil.ToFloat64(m.Anomalies.WithLabelValues(labels...))
	case "refreshes":
		return testutil.ToFloat64(m.Refreshes)
	case "window_waits":
		return testutil.ToFloat64(m.WindowWaits)
	}
	t.Fatalf("no metric %s", vec)
	return 0
}

// anomalies returns every anomaly counted, by kind.
func anomalies(m *Metrics) map[string]float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { m.Anomalies.Collect(ch); close(ch) }()
	out := map[string]float64{}
	for mt := range ch {
		var d dto.Metric
		_ = mt.Write(&d)
		for _, l := range d.GetLabel() {
			out[l.GetValue()] += d.GetCounter().GetValue()
		}
	}
	return out
}
