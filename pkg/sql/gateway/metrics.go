package gateway

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/augustus-db/augustus/pkg/sql/session"
)

// Kind is the statement kind of the metrics' "kind" label: a small fixed
// vocabulary, never the statement text.
type Kind string

// Statement kinds.
const (
	KindSelect   Kind = "select"
	KindInsert   Kind = "insert"
	KindReplace  Kind = "replace"
	KindUpdate   Kind = "update"
	KindDelete   Kind = "delete"
	KindDDL      Kind = "ddl"
	KindTxn      Kind = "transaction" // BEGIN, COMMIT, ROLLBACK, savepoints
	KindSet      Kind = "set"
	KindShow     Kind = "show" // SHOW, EXPLAIN, DESCRIBE
	KindUse      Kind = "use"
	KindDo       Kind = "do"
	KindPrepare  Kind = "prepare" // COM_STMT_PREPARE
	KindOther    Kind = "other"
	KindUnparsed Kind = "unparsed" // a statement that did not parse
)

// kinds is every Kind, so the metrics' series exist from the start.
var kinds = []Kind{KindSelect, KindInsert, KindReplace, KindUpdate, KindDelete, KindDDL, KindTxn,
	KindSet, KindShow, KindUse, KindDo, KindPrepare, KindOther, KindUnparsed}

// KindOf classifies a parsed statement.
func KindOf(s sqlparser.Statement) Kind {
	switch st := s.(type) {
	case nil:
		return KindUnparsed
	case *sqlparser.Select, *sqlparser.SetOp, *sqlparser.ParenSelect:
		return KindSelect
	case *sqlparser.Insert:
		if st.Action == sqlparser.ReplaceStr {
			return KindReplace
		}
		return KindInsert
	case *sqlparser.Update:
		return KindUpdate
	case *sqlparser.Delete:
		return KindDelete
	case *sqlparser.DDL, *sqlparser.DBDDL, *sqlparser.AlterTable:
		return KindDDL
	case *sqlparser.Begin, *sqlparser.Commit, *sqlparser.Rollback, *sqlparser.Savepoint,
		*sqlparser.RollbackSavepoint, *sqlparser.ReleaseSavepoint:
		return KindTxn
	case *sqlparser.Set:
		return KindSet
	case *sqlparser.Show, *sqlparser.Explain:
		return KindShow
	case *sqlparser.Use:
		return KindUse
	}
	return KindOther
}

// Path is the metrics' "path" label: which code answered a statement.
type Path string

const (
	// PathEngine: engine.Run (GMS's analyzer and executor).
	PathEngine Path = "engine"
	// PathFast: a fast-path Interceptor (Config.Interceptors) answered the
	// statement without GMS.
	PathFast Path = "fast"
)

// Metrics are the gateway's Prometheus metrics, named augustus_sql_*. Their
// labels take values from fixed sets only: kind (Kind), path (Path), code (a
// MySQL error number the server emits, or "other"), reason.
type Metrics struct {
	statements *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	panics     prometheus.Counter
	conns      prometheus.Gauge
	accepted   prometheus.Counter
	refused    *prometheus.CounterVec

	reg       prometheus.Registerer
	watchOnce sync.Once
}

// NewMetrics registers the gateway's metrics with reg (nil: not
// registered, as in tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_sql_statements_total",
			Help: "Statements the gateway answered, by kind and by the path that answered (engine: GMS; fast: the fast path).",
		}, []string{"kind", "path"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_sql_errors_total",
			Help: "Statements that ended in an error, by kind and MySQL error code (1213: serialization failure after the retries; 1062: duplicate key; 1105: internal).",
		}, []string{"kind", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "augustus_sql_statement_duration_seconds",
			Help:    "Time from a statement's arrival to its last row or error handed to the connection, autocommit retries included.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 18), // 100µs .. 13s
		}, []string{"kind", "path"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_sql_retries_total",
			Help: "Autocommit statements run again inside the gateway, by reason (conflict: a serialization failure; schema: the catalog changed under the statement).",
		}, []string{"reason"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_sql_panics_total",
			Help: "Statements whose execution panicked; each became error 1105 and a rolled-back transaction, the connection stayed open.",
		}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "augustus_sql_connections",
			Help: "Client connections open now.",
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "augustus_sql_connections_total",
			Help: "Client connections accepted (authenticated or not).",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "augustus_sql_connections_aborted_total",
			Help: "Connections that ended before they were established (a failed authentication, a client that left mid-handshake).",
		}, []string{"reason"}),
	}
	for _, k := range kinds {
		for _, p := range []Path{PathEngine, PathFast} {
			m.statements.WithLabelValues(string(k), string(p))
		}
	}
	for _, r := range []string{retryConflict, retrySchema} {
		m.retries.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.statements, m.errors, m.latency, m.retries, m.panics, m.conns, m.accepted, m.refused)
	}
	m.reg = reg
	return m
}

// watchEngine exports the engine's counts of the short transactions its
// sessions sent: what SQL costs the replicas (read: a statement's reads;
// guard: a read-only transaction's COMMIT guards; commit: an update's
// COMMIT) and the conflicts met.
func (m *Metrics) watchEngine(st *session.Stats) {
	if m.reg == nil {
		return
	}
	m.watchOnce.Do(func() {
		for kind, v := range map[string]*atomic.Int64{"read": &st.ReadTxns, "guard": &st.GuardTxns, "commit": &st.CommitTxns} {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "augustus_sql_short_transactions_total",
				Help:        "Short transactions SQL sessions sent, by kind (read: a statement's reads; guard: the COMMIT guards of a transaction that only read; commit: the COMMIT of an update).",
				ConstLabels: prometheus.Labels{"kind": kind},
			}, func() float64 { return float64(v.Load()) }))
		}
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "augustus_sql_conflicts_total",
			Help: "Serialization failures SQL sessions met (each retried inside the gateway when autocommit, else error 1213).",
		}, func() float64 { return float64(st.Conflicts.Load()) }))
	})
}

// Retry reasons.
const (
	retryConflict = "conflict"
	retrySchema   = "schema"
)

// Observe records one statement: its kind, the path that answered it, how
// long it took and its error (nil: success). A fast path calls it for the
// statements it answers.
func (m *Metrics) Observe(kind Kind, path Path, d time.Duration, err error) {
	m.statements.WithLabelValues(string(kind), string(path)).Inc()
	m.latency.WithLabelValues(string(kind), string(path)).Observe(d.Seconds())
	if err != nil {
		m.errors.WithLabelValues(string(kind), ErrorCode(err)).Inc()
	}
}

// Retried records an autocommit statement run again after err.
func (m *Metrics) Retried(err error) {
	reason := retryConflict
	if errors.Is(err, session.ErrSchemaChanged) {
		reason = retrySchema
	}
	m.retries.WithLabelValues(reason).Inc()
}

// ErrorCode is the metrics' code label of an error: the MySQL error number
// the client receives (as GMS's server casts it), or "other" for one
// outside MySQL's ranges. The numbers come from the server's code, never
// from input, so the set is bounded.
func ErrorCode(err error) string {
	se := sql.CastSQLError(err)
	if n := se.Number(); n >= 1000 && n < 60000 {
		return strconv.Itoa(n)
	}
	return "other"
}
